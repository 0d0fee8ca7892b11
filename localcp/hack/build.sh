#!/usr/bin/env bash
# build.sh builds the local control plane's binaries (kube-apiserver,
# kube-controller-manager, etcd, kwok) from the Go module proxy into a cache
# directory. Each binary is built from its own small build module under
# localcp/build/<name>, so the replace directives Kubernetes needs stay there
# and never reach gatewitness's go.mod. A binary that already exists is kept;
# delete the cache directory (or pass -f) to rebuild.
#
# Usage: localcp/hack/build.sh [-f] [BIN_DIR]   (default BIN_DIR: .cache/localcp/bin)
set -euo pipefail

force=0
if [[ "${1:-}" == "-f" ]]; then force=1; shift; fi

root="$(cd "$(dirname "$0")/../.." && pwd)"
bin="${1:-$root/.cache/localcp/bin}"
mkdir -p "$bin"
bin="$(cd "$bin" && pwd)"

: "${GO:=go}"
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-mod=mod

KUBERNETES_VERSION=v1.36.3
STAGING_VERSION=v0.36.3
ETCD_VERSION=v3.6.16
KWOK_VERSION=v0.8.0

ldflags="-s -w"

# The version the API server and controller-manager report (/version,
# kubectl version), stamped in as Kubernetes' own build does.
# shellcheck source=SCRIPTDIR/kube-ldflags.sh
source "$root/localcp/hack/kube-ldflags.sh"
kube_ldflags="$(kube_ldflags "$KUBERNETES_VERSION")"

need() { # need STAMP NAME...: true when a binary is missing, its stamp differs, or -f was given
	[[ $force == 1 ]] && return 0
	local want="$1"; shift
	for n in "$@"; do
		[[ -x "$bin/$n" ]] || return 0
		[[ "$(cat "$bin/.$n.stamp" 2>/dev/null)" == "$want" ]] || return 0
	done
	return 1
}
stampbin() { # stampbin STAMP NAME...: records what each binary was built from
	local want="$1"; shift
	for n in "$@"; do printf '%s' "$want" >"$bin/.$n.stamp"; done
}

stamp() { date +%s; }

# kube: kube-apiserver and kube-controller-manager from k8s.io/kubernetes, with
# every staging module (replaced to ./staging upstream) pinned to its release.
kube_stamp="$KUBERNETES_VERSION $kube_ldflags"
if need "$kube_stamp" kube-apiserver kube-controller-manager; then
	t0=$(stamp)
	dir="$root/localcp/build/kube"
	mkdir -p "$dir"
	cd "$dir"
	if [[ ! -f go.mod ]]; then
		"$GO" mod init gatewitness.local/localcp/build/kube >/dev/null 2>&1
		modfile="$("$GO" mod download -json k8s.io/kubernetes@$KUBERNETES_VERSION | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')"
		if [[ -z "$modfile" ]]; then echo "build.sh: k8s.io/kubernetes@$KUBERNETES_VERSION did not resolve through the module proxy" >&2; exit 1; fi
		for m in $(sed -n 's#^[[:space:]]*\(k8s.io/[a-z0-9-]*\) => ./staging/.*#\1#p' "$modfile"); do
			"$GO" mod edit -replace "$m=$m@$STAGING_VERSION"
		done
		"$GO" mod edit -require "k8s.io/kubernetes@$KUBERNETES_VERSION"
	fi
	"$GO" build -trimpath -ldflags "$kube_ldflags" -o "$bin/" \
		k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager
	stampbin "$kube_stamp" kube-apiserver kube-controller-manager
	echo "build.sh: kube-apiserver kube-controller-manager built in $(( $(stamp) - t0 ))s"
fi

# etcd: the server module's root package is the etcd main.
if need "$ETCD_VERSION" etcd; then
	t0=$(stamp)
	dir="$root/localcp/build/etcd"
	mkdir -p "$dir"
	cd "$dir"
	if [[ ! -f go.mod ]]; then
		"$GO" mod init gatewitness.local/localcp/build/etcd >/dev/null 2>&1
		"$GO" mod edit -require "go.etcd.io/etcd/server/v3@$ETCD_VERSION"
	fi
	"$GO" build -trimpath -ldflags "$ldflags" -o "$bin/etcd" go.etcd.io/etcd/server/v3
	stampbin "$ETCD_VERSION" etcd
	echo "build.sh: etcd built in $(( $(stamp) - t0 ))s"
fi

# kwok: fakes kubelets; its stage configs make pods Running at once.
if need "$KWOK_VERSION" kwok; then
	t0=$(stamp)
	dir="$root/localcp/build/kwok"
	mkdir -p "$dir"
	cd "$dir"
	if [[ ! -f go.mod ]]; then
		"$GO" mod init gatewitness.local/localcp/build/kwok >/dev/null 2>&1
		"$GO" mod edit -require "sigs.k8s.io/kwok@$KWOK_VERSION"
	fi
	"$GO" build -trimpath -ldflags "$ldflags" -o "$bin/kwok" sigs.k8s.io/kwok/cmd/kwok
	stampbin "$KWOK_VERSION" kwok
	echo "build.sh: kwok built in $(( $(stamp) - t0 ))s"
fi

# kwok's fast stages (node initialize, lease heartbeat, pod ready/complete/
# delete), taken from the module it was built from, as one config file.
stages="$bin/kwok-stages.yaml"
if [[ $force == 1 || ! -f "$stages" ]]; then
	src="$(cd "$root/localcp/build/kwok" && "$GO" list -m -f '{{.Dir}}' sigs.k8s.io/kwok)/kustomize/stage"
	: >"$stages.tmp"
	for f in "$src"/node/fast/*.yaml "$src"/node/heartbeat-with-lease/*.yaml "$src"/pod/fast/*.yaml; do
		[[ "$(basename "$f")" == kustomization.yaml ]] && continue
		{ echo "---"; cat "$f"; } >>"$stages.tmp"
	done
	mv "$stages.tmp" "$stages"
fi

# kwok's Logs CRD: the harness points each echo Pod's Logs at its process's
# output, so kubectl logs (and the mirror tests) read it through kwok.
logscrd="$bin/kwok-logs-crd.yaml"
if [[ $force == 1 || ! -f "$logscrd" ]]; then
	src="$(cd "$root/localcp/build/kwok" && "$GO" list -m -f '{{.Dir}}' sigs.k8s.io/kwok)/kustomize/crd/bases"
	cp "$src/kwok.x-k8s.io_logs.yaml" "$logscrd.tmp"
	chmod 644 "$logscrd.tmp"
	mv "$logscrd.tmp" "$logscrd"
fi

ls -l "$bin"
