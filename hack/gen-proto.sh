#!/usr/bin/env bash
# Regenerates the Go packages of proto/ (echo-backend/echopb and
# echo-backend/grpcechopb) with pinned tools.
#
# The tools are built from the Go module proxy into ./bin (gitignored):
#   buf                 the compiler (no protoc needed), pinned below
#   protoc-gen-go       at the google.golang.org/protobuf version in go.mod
#   protoc-gen-go-grpc  pinned below
# A tool already in ./bin at the right version is reused. The output only
# depends on these versions and on proto/, so running the script twice gives
# identical files; CI checks that with
#   hack/gen-proto.sh && git diff --exit-code echo-backend/echopb echo-backend/grpcechopb
set -euo pipefail

BUF_VERSION=v1.70.0
PROTOC_GEN_GO_GRPC_VERSION=v1.6.2

root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
export GOTOOLCHAIN="${GOTOOLCHAIN:-local}"

PROTOC_GEN_GO_VERSION="$(go list -m -f '{{.Version}}' google.golang.org/protobuf)"
bin="$root/bin"
mkdir -p "$bin"

# install NAME PACKAGE VERSION VERSION-TEXT: builds PACKAGE@VERSION into ./bin
# unless ./bin/NAME --version already prints VERSION-TEXT.
install() {
	local name=$1 pkg=$2 version=$3 want=$4
	if [[ -x "$bin/$name" ]] && [[ "$("$bin/$name" --version 2>&1)" == "$want" ]]; then
		return
	fi
	echo "gen-proto: installing $pkg@$version into bin/"
	GOBIN="$bin" GOFLAGS= go install "$pkg@$version"
	local got
	got="$("$bin/$name" --version 2>&1)"
	if [[ "$got" != "$want" ]]; then
		echo "gen-proto: bin/$name --version printed '$got', want '$want'" >&2
		exit 1
	fi
}

install buf github.com/bufbuild/buf/cmd/buf "$BUF_VERSION" "${BUF_VERSION#v}"
install protoc-gen-go google.golang.org/protobuf/cmd/protoc-gen-go "$PROTOC_GEN_GO_VERSION" \
	"protoc-gen-go $PROTOC_GEN_GO_VERSION"
install protoc-gen-go-grpc google.golang.org/grpc/cmd/protoc-gen-go-grpc "$PROTOC_GEN_GO_GRPC_VERSION" \
	"protoc-gen-go-grpc ${PROTOC_GEN_GO_GRPC_VERSION#v}"

# Generate into a scratch directory, then replace the package's generated
# files, so a file whose .proto was removed does not linger.
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
BUF_CACHE_DIR="$root/.cache/buf" PATH="$bin:$PATH" \
	"$bin/buf" generate proto --template proto/buf.gen.yaml --output "$out"

for dest in echo-backend/echopb echo-backend/grpcechopb; do
	mkdir -p "$dest"
	rm -f "$dest"/*.pb.go
	cp "$out/$dest"/*.pb.go "$dest"/
	echo "gen-proto: wrote $(ls "$dest"/*.pb.go | tr '\n' ' ')"
done
