#!/usr/bin/env bash
# build-coredns-image.sh IMAGE builds IMAGE (registry.k8s.io/coredns/coredns:vX.Y.Z)
# from the CoreDNS release its tag names, from the Go module proxy: the static
# binary on an empty image, as upstream's conformance base manifests run it
# (entrypoint /coredns). The binary is cached in KIND_CACHE.
set -euo pipefail
image="${1:?usage: build-coredns-image.sh registry.k8s.io/coredns/coredns:vX.Y.Z}"
version="${image##*:}"
: "${GO:=go}" "${DOCKER:=docker}" "${KIND_CACHE:=$HOME/.cache/gatewitness/kind}"
if "$DOCKER" image inspect "$image" >/dev/null 2>&1; then exit 0; fi
out="$KIND_CACHE/coredns-$version"
if [[ ! -x "$out/coredns" ]]; then
	t0=$(date +%s)
	mkdir -p "$out"
	GOTOOLCHAIN=local CGO_ENABLED=0 GOBIN="$out" nice -n 10 "$GO" install -trimpath -ldflags "-s -w" "github.com/coredns/coredns@$version"
	echo "build-coredns-image: coredns $version built in $(( $(date +%s) - t0 ))s, in $out"
fi
ctx="$(mktemp -d)"
trap 'rm -rf "$ctx"' EXIT
cp "$out/coredns" "$ctx/"
printf 'FROM scratch\nCOPY coredns /coredns\nENTRYPOINT ["/coredns"]\n' >"$ctx/Dockerfile"
"$DOCKER" build -q -t "$image" "$ctx" >/dev/null
echo "build-coredns-image: $image"
