#!/usr/bin/env bash
# sync-crds.sh copies the Gateway API experimental-channel CRDs from the Go
# module cache into crds/, so that the crds package can embed them.
#
# Usage: hack/sync-crds.sh [version]   (default: the version in go.mod)
#
# The files are copied byte for byte (their Apache-2.0 headers stay). The
# ValidatingAdmissionPolicy file (gateway.networking.k8s.io_vap_safeupgrades.yaml)
# is skipped: it is not a CRD, and the in-process store does not run admission
# policies. See crds/README.md.
set -euo pipefail
cd "$(dirname "$0")/.."

version="${1:-$(go list -m -f '{{.Version}}' sigs.k8s.io/gateway-api)}"
go mod download "sigs.k8s.io/gateway-api@${version}"
src="$(go env GOMODCACHE)/sigs.k8s.io/gateway-api@${version}/config/crd/experimental"
if [ ! -d "$src" ]; then
	echo "sync-crds: $src does not exist" >&2
	exit 1
fi

rm -f crds/*.yaml
n=0
for f in "$src"/*.yaml; do
	base="$(basename "$f")"
	case "$base" in
	kustomization.yaml | *_vap_*) continue ;;
	esac
	cp "$f" "crds/$base"
	chmod 0644 "crds/$base"
	n=$((n + 1))
done
echo "sync-crds: copied $n CRDs of sigs.k8s.io/gateway-api@${version} (experimental channel) into crds/"
