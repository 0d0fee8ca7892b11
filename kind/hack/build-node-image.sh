#!/usr/bin/env bash
# build-node-image.sh builds a kind node image for Kubernetes v1.36.3 with no
# registry: every piece comes from Debian packages or the Go module proxy.
#
#   - the node's root file system: debootstrap of Debian bookworm with
#     systemd, containerd, runc, iptables and the tools a kind node uses;
#   - kubeadm, kubelet, kubectl, kube-scheduler and kube-proxy from
#     k8s.io/kubernetes (the build module localcp/build/kube, so Kubernetes'
#     replace directives stay out of go.mod); kube-apiserver,
#     kube-controller-manager and etcd are the localcp build's (LOCALCP_BIN),
#     built here when that directory lacks them;
#   - CoreDNS and the CNI plugins (ptp, host-local, loopback, portmap) from
#     their modules (kind/build/coredns, kind/build/cni); pause from the C
#     source in the k8s.io/kubernetes module (gcc -static);
#   - kind's node files (entrypoint, systemd units, containerd config) from
#     the sigs.k8s.io/kind module, and the files in kind/node/;
#   - the images the node needs at start, each a static binary on an empty
#     image (kube-proxy on the Debian root file system, for iptables),
#     imported into the node's containerd under the names kubeadm asks for.
#
# Each step is cached under KIND_CACHE (default ~/.cache/gatewitness/kind)
# and skipped when its result is there; -f rebuilds all of it. The node
# image is tagged NODE_IMAGE (default gatewitness/kind-node:v1.36.3).
#
# Usage: kind/hack/build-node-image.sh [-f]
set -euo pipefail

force=0
if [[ "${1:-}" == "-f" ]]; then force=1; shift; fi

root="$(cd "$(dirname "$0")/../.." && pwd)"
: "${GO:=go}"
: "${DOCKER:=docker}"
: "${KIND_CACHE:=$HOME/.cache/gatewitness/kind}"
: "${LOCALCP_BIN:=$HOME/.cache/gatewitness/localcp/bin}"
: "${NODE_IMAGE:=gatewitness/kind-node:v1.36.3}"
export GOTOOLCHAIN=local GOFLAGS=-mod=mod
if [[ "$DOCKER" == docker ]]; then "$root/hack/need.sh" docker:docker.io; fi

KUBERNETES_VERSION=v1.36.3
# kind's release is kind/build/kind/go.mod's (v0.33.0).
COREDNS_VERSION=v1.14.2   # kubeadm v1.36.3's CoreDNSVersion
PAUSE_VERSION=3.10.2      # kubeadm v1.36.3's PauseVersion
DEBIAN_SUITE=bookworm
# etcd: the localcp build's release. kubeadm v1.36.3 asks for 3.6.8-0;
# kind/cluster-offline.yaml sets the tag below instead, so the image's name
# says what is in it.
ETCD_TAG=3.6.16-0
BASE_IMAGE=gatewitness/kind-base:$DEBIAN_SUITE

bin="$KIND_CACHE/bin"
mkdir -p "$bin"
t_all=$(date +%s)
say() { echo "build-node-image: $*"; }
took() { echo "$(( $(date +%s) - $1 ))s"; }
have() { [[ $force == 0 && -e "$1" ]]; }

gomod_dir() { (cd "$1" && "$GO" list -m -f '{{.Dir}}' "$2"); }

# Kubernetes' own build stamps the version into every binary; kubeadm
# reads its own to choose image tags.
# shellcheck source=SCRIPTDIR/../../localcp/hack/kube-ldflags.sh
source "$root/localcp/hack/kube-ldflags.sh"
kube_ldflags="$(kube_ldflags "$KUBERNETES_VERSION")"

# 0. The kind CLI.
if ! have "$bin/kind"; then
	t0=$(date +%s)
	(cd "$root/kind/build/kind" && CGO_ENABLED=0 nice -n 10 "$GO" build -trimpath -ldflags "-s -w" -o "$bin/kind" sigs.k8s.io/kind)
	say "kind $(gomod_dir "$root/kind/build/kind" sigs.k8s.io/kind | sed 's/.*@//') built in $(took "$t0"), in $bin"
fi

# 1. Kubernetes binaries.
kube=(kubeadm kubelet kubectl kube-scheduler kube-proxy)
missing=()
for n in "${kube[@]}"; do have "$bin/$n" || missing+=("$n"); done
for n in kube-apiserver kube-controller-manager etcd; do
	if ! have "$bin/$n"; then
		if [[ -x "$LOCALCP_BIN/$n" ]]; then cp "$LOCALCP_BIN/$n" "$bin/$n"; else missing+=("$n"); fi
	fi
done
kube_pkgs=()
for n in "${missing[@]}"; do [[ $n != etcd ]] && kube_pkgs+=("k8s.io/kubernetes/cmd/$n"); done
if ((${#kube_pkgs[@]})); then
	t0=$(date +%s)
	say "building ${kube_pkgs[*]} (localcp/build/kube)"
	(cd "$root/localcp/build/kube" && CGO_ENABLED=0 nice -n 10 "$GO" build -trimpath -ldflags "$kube_ldflags" -o "$bin/" "${kube_pkgs[@]}")
	say "Kubernetes binaries built in $(took "$t0"), in $bin"
fi
if [[ " ${missing[*]} " == *" etcd "* ]]; then
	t0=$(date +%s)
	(cd "$root/localcp/build/etcd" && CGO_ENABLED=0 nice -n 10 "$GO" build -trimpath -ldflags "-s -w" -o "$bin/etcd" go.etcd.io/etcd/server/v3)
	say "etcd built in $(took "$t0"), in $bin"
fi

# 2. CoreDNS, the CNI plugins, pause.
if ! have "$bin/coredns"; then
	t0=$(date +%s)
	(cd "$root/kind/build/coredns" && CGO_ENABLED=0 nice -n 10 "$GO" build -trimpath -ldflags "-s -w" -o "$bin/coredns" github.com/coredns/coredns)
	say "coredns $COREDNS_VERSION built in $(took "$t0"), in $bin"
fi
cni=(ipam/host-local main/loopback main/ptp meta/portmap)
if ! have "$bin/cni/portmap"; then
	t0=$(date +%s)
	pkgs=(); for p in "${cni[@]}"; do pkgs+=("github.com/containernetworking/plugins/plugins/$p"); done
	(cd "$root/kind/build/cni" && CGO_ENABLED=0 nice -n 10 "$GO" build -trimpath -ldflags "-s -w" -o "$bin/cni/" "${pkgs[@]}")
	say "CNI plugins built in $(took "$t0"), in $bin/cni"
fi
if ! have "$bin/pause"; then
	src="$(gomod_dir "$root/localcp/build/kube" k8s.io/kubernetes)/build/pause/linux/pause.c"
	gcc -Os -static -DVERSION="$PAUSE_VERSION" -o "$bin/pause" "$src"
	say "pause built from $src"
fi

# 3. The node's root file system, imported as BASE_IMAGE.
rootfs_tar="$KIND_CACHE/rootfs-$DEBIAN_SUITE.tar"
packages=systemd,systemd-sysv,dbus,conntrack,iptables,nftables,iproute2,ethtool,util-linux,mount,kmod,libseccomp2,pigz,ca-certificates,curl,jq,procps,bash,containerd,runc,socat,ebtables
if ! have "$rootfs_tar"; then
	t0=$(date +%s)
	tmp="$KIND_CACHE/rootfs.tmp"
	rm -rf "$tmp"
	"$root/hack/need.sh" debootstrap
	say "debootstrap $DEBIAN_SUITE into $tmp (packages: $packages)"
	nice -n 10 debootstrap --variant=minbase --include="$packages" "$DEBIAN_SUITE" "$tmp" http://deb.debian.org/debian
	rm -rf "$tmp"/var/cache/apt/archives/*.deb "$tmp"/var/lib/apt/lists/*
	tar -C "$tmp" --numeric-owner -cf "$rootfs_tar.tmp" .
	mv "$rootfs_tar.tmp" "$rootfs_tar"
	rm -rf "$tmp"
	say "root file system built in $(took "$t0"), in $rootfs_tar"
fi
if [[ $force == 1 ]] || ! "$DOCKER" image inspect "$BASE_IMAGE" >/dev/null 2>&1; then
	"$DOCKER" import "$rootfs_tar" "$BASE_IMAGE" >/dev/null
	say "imported $rootfs_tar as $BASE_IMAGE"
fi

# 4. The images the node needs at start.
images_tar="$KIND_CACHE/images-$KUBERNETES_VERSION.tar"
images=(
	"registry.k8s.io/kube-apiserver:$KUBERNETES_VERSION=kube-apiserver"
	"registry.k8s.io/kube-controller-manager:$KUBERNETES_VERSION=kube-controller-manager"
	"registry.k8s.io/kube-scheduler:$KUBERNETES_VERSION=kube-scheduler"
	"registry.k8s.io/kube-proxy:$KUBERNETES_VERSION=kube-proxy"
	"registry.k8s.io/etcd:$ETCD_TAG=etcd"
	"registry.k8s.io/coredns/coredns:$COREDNS_VERSION=coredns"
	"registry.k8s.io/pause:$PAUSE_VERSION=pause"
)
if ! have "$images_tar"; then
	t0=$(date +%s)
	ctx="$(mktemp -d)"
	names=()
	for spec in "${images[@]}"; do
		name="${spec%=*}" binary="${spec#*=}"
		rm -rf "${ctx:?}"/*
		cp "$bin/$binary" "$ctx/"
		from=scratch
		# kube-proxy runs iptables and conntrack: it gets the node's
		# Debian root file system, which has both.
		[[ $binary == kube-proxy ]] && from="$BASE_IMAGE"
		cat >"$ctx/Dockerfile" <<-EOF
			FROM $from
			COPY $binary /usr/local/bin/$binary
			ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
			ENTRYPOINT ["/usr/local/bin/$binary"]
		EOF
		[[ $binary == pause ]] && sed -i 's#ENTRYPOINT.*#ENTRYPOINT ["/usr/local/bin/pause"]\nUSER 65535:65535#' "$ctx/Dockerfile"
		"$DOCKER" build -q -t "$name" "$ctx" >/dev/null
		names+=("$name")
	done
	rm -rf "$ctx"
	"$DOCKER" save -o "$images_tar.tmp" "${names[@]}"
	mv "$images_tar.tmp" "$images_tar"
	say "images ${names[*]} built in $(took "$t0"), in $images_tar"
fi

# 5. The node image: kind's node files, ours, the binaries, and the images
#    imported into the node's containerd.
if [[ $force == 1 ]] || ! "$DOCKER" image inspect "$NODE_IMAGE" >/dev/null 2>&1; then
	t0=$(date +%s)
	ctx="$(mktemp -d)"
	kindfiles="$(gomod_dir "$root/kind/build/kind" sigs.k8s.io/kind)/images/base/files"
	cp -r "$kindfiles" "$ctx/kind-files"
	chmod -R u+w "$ctx/kind-files"
	cp -r "$root/kind/node" "$ctx/gatewitness"
	mkdir -p "$ctx/bin" "$ctx/cni"
	cp "$bin/kubeadm" "$bin/kubelet" "$bin/kubectl" "$ctx/bin/"
	cp "$bin"/cni/* "$ctx/cni/"
	echo "$KUBERNETES_VERSION" >"$ctx/gatewitness/kind/version"
	"$DOCKER" build -t "$NODE_IMAGE.build" -f "$ctx/gatewitness/Dockerfile" \
		--build-arg BASE="$BASE_IMAGE" --build-arg PAUSE_IMAGE="registry.k8s.io/pause:$PAUSE_VERSION" "$ctx"
	rm -rf "$ctx"
	# Import the images as kind's own build does: into the content store of
	# a containerd run in a container of the image, then commit.
	id="gatewitness-node-build-$$"
	"$DOCKER" run -d --name "$id" --entrypoint=sleep --security-opt seccomp=unconfined "$NODE_IMAGE.build" infinity >/dev/null
	trap '"$DOCKER" rm -f "$id" >/dev/null 2>&1 || true' EXIT
	"$DOCKER" exec "$id" bash -c 'nohup containerd >/tmp/containerd.log 2>&1 &'
	for _ in $(seq 1 50); do "$DOCKER" exec "$id" ctr version >/dev/null 2>&1 && break; sleep 0.2; done
	"$DOCKER" exec -i "$id" ctr --namespace=k8s.io images import --label=io.cri-containerd.pinned=pinned \
		--all-platforms --no-unpack --digests - <"$images_tar"
	"$DOCKER" exec "$id" ctr --namespace=k8s.io images list -q
	"$DOCKER" exec "$id" pkill containerd
	for _ in $(seq 1 50); do "$DOCKER" exec "$id" pgrep -x containerd >/dev/null || break; sleep 0.2; done
	"$DOCKER" commit --change 'ENTRYPOINT ["/usr/local/bin/entrypoint", "/sbin/init"]' "$id" "$NODE_IMAGE" >/dev/null
	"$DOCKER" rm -f "$id" >/dev/null
	"$DOCKER" rmi "$NODE_IMAGE.build" >/dev/null
	trap - EXIT
	say "node image $NODE_IMAGE built in $(took "$t0")"
fi
say "done in $(took "$t_all"): node image $NODE_IMAGE; cache in $KIND_CACHE"
