#!/usr/bin/env bash
# Writes features/upstreamnames/data/<version>.json, the profile, feature and
# test names of each Gateway API release gatewitness's verify-report knows
# (see features/upstreamnames):
#   - the tagged releases, from a clone of kubernetes-sigs/gateway-api
#     (GWAPI_GIT, a git directory; git archive of each tag);
#   - the releases gatewitness builds against (v1.6.3 of go.mod, v1.7.0),
#     from the Go module cache (go mod download; v1.7.0 needs go1.27.3).
#
#   GWAPI_GIT=/path/to/gateway-api/.git hack/upstream-names.sh
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
data="$root/features/upstreamnames/data"
tags="${GWAPI_TAGS:-v1.5.0 v1.5.1 v1.6.0 v1.6.1}"
modules="${GWAPI_MODULES:-v1.6.3 v1.7.0}"
: "${GWAPI_GIT:?set GWAPI_GIT to a git directory of kubernetes-sigs/gateway-api}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
gen() { (cd "$root" && GOTOOLCHAIN=local go run ./hack/upstream-names "$@"); }

for tag in $tags; do
	commit="$(git -C "$GWAPI_GIT" rev-parse "$tag^{commit}")"
	mkdir -p "$tmp/$tag"
	git -C "$GWAPI_GIT" archive "$commit" pkg/features conformance/tests conformance/utils/suite | tar -x -C "$tmp/$tag"
	gen -version "$tag" -root "$tmp/$tag" -o "$data/$tag.json" \
		-source "github.com/kubernetes-sigs/gateway-api tag $tag (commit $commit)"
done
for v in $modules; do
	toolchain=local
	case "$v" in v1.7.*) toolchain=go1.27.3 ;; esac
	dirs="$(cd "$tmp" && GOTOOLCHAIN=$toolchain go mod download -json "sigs.k8s.io/gateway-api@$v" "sigs.k8s.io/gateway-api/conformance@$v" |
		sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
	api="$(echo "$dirs" | sed -n 1p)"
	conf="$(echo "$dirs" | sed -n 2p)"
	gen -version "$v" -root "$api" -conformance "$conf" -o "$data/$v.json" \
		-source "Go modules sigs.k8s.io/gateway-api@$v and sigs.k8s.io/gateway-api/conformance@$v"
done
