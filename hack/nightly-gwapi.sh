#!/usr/bin/env bash
# hack/nightly-gwapi.sh VERSION CHANNEL REPORT_DIR: one cell of the nightly
# workflow's matrix: the in-process suite against the reference gateway
# with the Gateway API release VERSION (v1.6.3 or v1.7.0) and the CRDs of
# its CHANNEL (standard or experimental), the reports in REPORT_DIR.
#
# v1.6.3 is go.mod's release: its CRDs come from the module cache (the
# embedded ones are the experimental channel's). v1.7.0 is built in a
# module of its own by hack/test-gwapi-v1.7.sh (with go1.27.3). Both stamp
# the checkout's version (hack/version.sh) into gatewitness: it is the
# version the reports give the reference gateway.
#
# Failing tests do not fail it (the site and the alerts show them); a run
# that writes no run record does.
set -euo pipefail
cd "$(dirname "$0")/.."
export GOTOOLCHAIN="${GOTOOLCHAIN:-local}"

if [[ $# -ne 3 ]]; then
	echo "usage: hack/nightly-gwapi.sh VERSION CHANNEL REPORT_DIR" >&2
	exit 2
fi
version="$1" channel="$2" report_dir="$3"
case "$channel" in standard | experimental) ;; *)
	echo "nightly-gwapi: channel $channel; want standard or experimental" >&2
	exit 2
	;;
esac
rm -rf "$report_dir"
rc=0
case "$version" in
v1.7.0)
	GWAPI17_CHANNEL="$channel" GWAPI17_REPORT_DIR="$report_dir" hack/test-gwapi-v1.7.sh || rc=$?
	;;
"$(go list -m -f '{{.Version}}' sigs.k8s.io/gateway-api)")
	crd_dir="$(mktemp -d)"
	trap 'rm -rf "$crd_dir"' EXIT
	hack/crds-of-release.sh "$channel" "$crd_dir"
	GATEWITNESS_CRD_DIR="$crd_dir" go run -ldflags "-X github.com/gatewitness/gatewitness/internal/version.stamped=$(hack/version.sh)" \
		./cmd/gatewitness run --in-process --report-dir "$report_dir" || rc=$?
	;;
*)
	echo "nightly-gwapi: Gateway API $version; want v1.7.0 or go.mod's release" >&2
	exit 2
	;;
esac
echo "nightly-gwapi: Gateway API $version ($channel): gatewitness exited $rc"
test -f "$report_dir/run.json"
