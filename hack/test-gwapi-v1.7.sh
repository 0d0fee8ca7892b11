#!/usr/bin/env bash
# make test-gwapi-v1.7: gatewitness against Gateway API v1.7.0, the release
# after the one in go.mod, as an implementer on v1.7.0 would use it.
#
# It writes a module under $GWAPI17_OUT (default out/gwapi-v1.7/module),
# outside gatewitness's go.mod, that requires sigs.k8s.io/gateway-api and
# /conformance v1.7.0 and gatewitness (replaced by this checkout), holds a
# test with the plug-in's two lines, and then
#   1. compiles every gatewitness package and test file against v1.7.0 (go vet),
#      runs the plug-in's tests there (among them the check that it links no
#      server code) and prints the consumer's go line and package count;
#   2. runs the in-process suite, upstream v1.7.0's tests and gatewitness's,
#      against the reference gateway with v1.7.0's CRDs of the channel
#      $GWAPI17_CHANNEL (default experimental), writes the reports
#      to $GWAPI17_REPORT_DIR (default out/gwapi-v1.7/reports) and prints
#      the upstream profiles' results.
#
# v1.7.0 needs Go >= 1.27: the go command fetches $GWAPI17_TOOLCHAIN
# (go1.27.3) from the module proxy, for this check only. The proxy reachable
# here refuses sigs.k8s.io/gateway-api-conformance-images (which v1.7.0's
# conformance module imports); when the folder
# $GATEWITNESS_CONFORMANCE_IMAGES (default
# ../shared/third_party/gateway-api-conformance-images, next to this
# checkout) exists, the generated module replaces it with that copy.
# Elsewhere the module comes from the proxy. gatewitness's go.mod never
# changes.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
version=v1.7.0
export GOTOOLCHAIN="${GWAPI17_TOOLCHAIN:-go1.27.3}"
out="${GWAPI17_OUT:-$root/out/gwapi-v1.7}"
report_dir="${GWAPI17_REPORT_DIR:-$out/reports}"
channel="${GWAPI17_CHANNEL:-experimental}"
case "$channel" in standard | experimental) ;; *)
	echo "gwapi-v1.7: GWAPI17_CHANNEL=$channel; want standard or experimental" >&2
	exit 2
	;;
esac
images="${GATEWITNESS_CONFORMANCE_IMAGES:-$root/../shared/third_party/gateway-api-conformance-images}"
mod="$out/module"
crd_dir="$out/crds"
say() { echo "gwapi-v1.7: $*"; }

rm -rf "$mod" "$crd_dir" "$report_dir"
mkdir -p "$mod" "$crd_dir/overlays"

cat >"$mod/go.mod" <<EOF
module gatewitness.local/gwapi-v1.7

go 1.27.0

require (
	github.com/gatewitness/gatewitness v0.0.0-00010101000000-000000000000
	sigs.k8s.io/gateway-api $version
	sigs.k8s.io/gateway-api/conformance $version
)

replace github.com/gatewitness/gatewitness => $root
EOF
if [ -d "$images" ]; then
	images="$(cd "$images" && pwd)"
	say "sigs.k8s.io/gateway-api-conformance-images replaced by $images"
	(cd "$mod" && go mod edit -replace "sigs.k8s.io/gateway-api-conformance-images=$images")
fi
# An implementer's conformance test with the plug-in's two lines (the
# RunConformanceWithOptions shape; the Setup/Run shape is the plug-in's
# own example_test.go, compiled below).
cat >"$mod/conformance_test.go" <<'EOF'
package consumer

import (
	"testing"

	"sigs.k8s.io/gateway-api/conformance"
	"sigs.k8s.io/gateway-api/conformance/tests"

	"github.com/gatewitness/gatewitness/conformance/plugin"
)

func TestConformance(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a cluster")
	}
	opts := conformance.DefaultOptions(t)
	opts.ManifestFS = append(opts.ManifestFS, plugin.Manifests)
	tests.ConformanceTests = append(tests.ConformanceTests, plugin.ConformanceTests...)
	conformance.RunConformanceWithOptions(t, opts)
}
EOF

cd "$mod"
go mod tidy
say "$(go version); $(go list -m sigs.k8s.io/gateway-api sigs.k8s.io/gateway-api/conformance | tr '\n' ' ')"

say "1. compiling gatewitness and its tests against $version"
go vet ./...
go vet -mod=mod github.com/gatewitness/gatewitness/...
GATEWITNESS_GOLIST_DIR="$mod" go test -mod=mod -count=1 github.com/gatewitness/gatewitness/conformance/plugin
say "the consumer after go mod tidy: $(grep '^go ' go.mod); its test binary links $(go list -deps -test . | wc -l) packages"

say "2. the in-process suite with $version's tests and CRDs ($channel)"
GOFLAGS=-mod=mod "$root/hack/crds-of-release.sh" "$channel" "$crd_dir"
rc=0
# The module replaces gatewitness with this checkout, which names no
# version (v0.0.0-unknown in the reports): stamp the checkout's.
stamp="$("$root/hack/version.sh" "$root")"
GATEWITNESS_CRD_DIR="$crd_dir" go run -mod=mod -ldflags "-X github.com/gatewitness/gatewitness/internal/version.stamped=$stamp" \
	github.com/gatewitness/gatewitness/cmd/gatewitness run --in-process --report-dir "$report_dir" || rc=$?
say "upstream profiles on $version:"
go run -mod=mod github.com/gatewitness/gatewitness/hack/gwapi-profiles "$report_dir"
exit "$rc"
