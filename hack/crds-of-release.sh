#!/usr/bin/env bash
# hack/crds-of-release.sh CHANNEL DEST: copies the Gateway API CRDs of the
# release the current module requires (go list -m sigs.k8s.io/gateway-api),
# channel CHANNEL, into DEST, leaving out what is not a CRD (see
# crds/README.md), and writes gatewitness's overlays for them, as the
# in-process suite reads them (GATEWITNESS_CRD_DIR=DEST). Extra go flags
# (e.g. -mod=mod) come from $GOFLAGS.
set -euo pipefail
if [[ $# -ne 2 ]]; then
	echo "usage: hack/crds-of-release.sh CHANNEL DEST" >&2
	exit 2
fi
channel="$1" dest="$2"
src="$(go list -m -f '{{.Dir}}' sigs.k8s.io/gateway-api)/config/crd/$channel"
mkdir -p "$dest/overlays"
for f in "$src"/*.yaml; do
	case "$(basename "$f")" in
	kustomization.yaml | *_vap_*) ;; # not CRDs (see crds/README.md)
	*) install -m 0644 "$f" "$dest/" ;;
	esac
done
go run github.com/gatewitness/gatewitness/hack/gen-crd-overlays -crds "$dest"
