# kube-ldflags.sh, sourced by localcp/hack/build.sh and
# kind/hack/build-node-image.sh: kube_ldflags VERSION prints the -ldflags of
# a Kubernetes binary with VERSION stamped in, as Kubernetes' own build does.
# A plain go build leaves "v0.0.0-master+$Format:%H$", which kubectl cannot
# parse, implementations that check the server version refuse, and kubeadm
# cannot choose image tags from.
kube_ldflags() {
	local v="$1" major minor out="-s -w"
	major="${v#v}"; major="${major%%.*}"
	minor="${v#v*.}"; minor="${minor%%.*}"
	for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		out+=" -X $pkg.gitVersion=$v -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
		out+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
	done
	echo "$out"
}
