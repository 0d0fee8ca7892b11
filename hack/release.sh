#!/usr/bin/env bash
# make release VERSION=vX.Y.Z: the files of a gatewitness release, in
# $RELEASE_DIR (default dist/VERSION):
#   gatewitness-VERSION-{linux,darwin}-{amd64,arm64}   the CLI, static, VERSION stamped
#   echo-backend-VERSION-linux-{amd64,arm64}           the backend the suite deploys
#   echo-backend-VERSION-image.tar                     the image (docker save)
#   SHA256SUMS                                          sha256sum of every file above
# and the image gatewitness/echo-backend:VERSION in the local Docker.
#
# The image is built from the Dockerfile's prebuilt stage on
# $RELEASE_BASE_IMAGE (default scratch, which needs no registry: the
# binary is static), from the linux binary of this machine's
# architecture only: there is no linux/arm64 image unless this runs on an
# arm64 machine (docs/publishing.md says so). Docker's classic builder builds every stage before the
# target, so the prebuilt stage comes first in the Dockerfile.
# RELEASE_IMAGE=no skips the image (a machine without Docker).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
GO="${GO:-go}"
version="${VERSION:-}"
if ! [[ "$version" =~ ^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$ ]]; then
	echo "release: VERSION is '$version'; want a semantic version with a leading v, e.g. make release VERSION=v0.1.0" >&2
	exit 2
fi
out="${RELEASE_DIR:-dist/$version}"
image="${RELEASE_IMAGE_NAME:-gatewitness/echo-backend}:$version"
base="${RELEASE_BASE_IMAGE:-scratch}"
say() { echo "release: $*"; }

if [ -n "$(git status --porcelain 2>/dev/null)" ]; then
	say "warning: the work tree has changes that are not committed; the release is not what the tag holds"
fi
rm -rf "$out"
mkdir -p "$out"
ldflags="-s -w -X github.com/gatewitness/gatewitness/internal/version.stamped=$version"
for target in linux/amd64 linux/arm64 darwin/amd64 darwin/arm64; do
	os="${target%/*}" arch="${target#*/}"
	say "gatewitness $version for $os/$arch"
	CGO_ENABLED=0 GOOS="$os" GOARCH="$arch" GOTOOLCHAIN=local nice "$GO" build -trimpath -ldflags "$ldflags" \
		-o "$out/gatewitness-$version-$os-$arch" ./cmd/gatewitness
	if [ "$os" = linux ]; then
		say "echo-backend $version for $os/$arch"
		CGO_ENABLED=0 GOOS="$os" GOARCH="$arch" GOTOOLCHAIN=local nice "$GO" build -trimpath -ldflags "$ldflags" \
			-o "$out/echo-backend-$version-$os-$arch" ./cmd/echo-backend
	fi
done

if [ "${RELEASE_IMAGE:-yes}" != no ]; then
	arch="$("$GO" env GOARCH)"
	ctx="$(mktemp -d)"
	trap 'rm -rf "$ctx"' EXIT
	mkdir -p "$ctx/bin"
	cp "$out/echo-backend-$version-linux-$arch" "$ctx/bin/echo-backend"
	say "image $image (linux/$arch, on $base) from the Dockerfile's prebuilt stage"
	DOCKER_BUILDKIT=0 docker build -q -f Dockerfile --target prebuilt --build-arg "BASE_IMAGE=$base" \
		--label "org.opencontainers.image.version=$version" \
		--label "org.opencontainers.image.source=https://github.com/gatewitness/gatewitness" \
		-t "$image" "$ctx" >/dev/null
	docker save -o "$out/echo-backend-$version-image.tar" "$image"
fi

(cd "$out" && find . -maxdepth 1 -type f ! -name SHA256SUMS -printf '%P\n' | LC_ALL=C sort | xargs sha256sum -- >SHA256SUMS)
say "wrote $out:"
(cd "$out" && ls -l | sed 1d)
