#!/usr/bin/env bash
# ci-smoke.sh: CI's kind smoke run (.ci/run). When the offline node image
# (make kind-image; about an hour cold on 2 cores, so CI does not build it)
# is in Docker, and Docker runs or can be started here, it creates a kind
# cluster of its own, installs the reference gateway as an implementation
# (make kind-reference) and runs one upstream test and one of gatewitness's
# through it, then deletes the cluster. Otherwise it prints that it skipped,
# why, and how to build what is missing, and exits 0.
set -euo pipefail
cd "$(dirname "$0")/../.."

NODE_IMAGE="${OFFLINE_NODE_IMAGE:-gatewitness/kind-node:v1.36.3}"
CLUSTER="${KIND_CI_CLUSTER:-gatewitness-ci}"
TESTS="${KIND_CI_TESTS:-HTTPRouteSimpleSameNamespace HTTPRouteRetryCodesAndAttempts}"
skip() { echo "kind smoke: skipped: $*"; exit 0; }

command -v docker >/dev/null || skip "no docker client (Debian: apt-get install docker.io); then build the node image: make kind-image"
started=""
if ! docker info >/dev/null 2>&1; then
	command -v dockerd >/dev/null ||
		skip "Docker is not running and there is no Docker engine to start (Debian: apt-get install docker.io); then build the node image: make kind-image"
	[ "$(id -u)" = 0 ] || skip "Docker is not running and cannot be started here (dockerd needs root)"
	mkdir -p out
	# The runtime that drops capabilities the host withholds (kind/README.md).
	dockerd --storage-driver=overlay2 --add-runtime "boundcaps=$PWD/kind/hack/runc-boundcaps" \
		--default-runtime boundcaps >out/dockerd-ci.log 2>&1 &
	started=$!
	trap 'kill "$started" 2>/dev/null; wait "$started" 2>/dev/null || true' EXIT
	for _ in $(seq 1 120); do docker info >/dev/null 2>&1 && break; sleep 0.5; done
	docker info >/dev/null 2>&1 || skip "dockerd did not start (out/dockerd-ci.log)"
fi
docker image inspect "$NODE_IMAGE" >/dev/null 2>&1 ||
	skip "the node image $NODE_IMAGE is not built; build it with: make kind-image (cached in ~/.cache/gatewitness/kind)"
[ "$(id -u)" = 0 ] || skip "make kind-reference routes the Gateways' addresses to the node, which needs root"

vars=(KIND_CLUSTER="$CLUSTER" KIND_KUBECONFIG="out/kind/$CLUSTER.kubeconfig" KIND_NODE_IMAGE="$NODE_IMAGE")

status=0
(
	set -e
	t0=$(date +%s)
	make kind-up "${vars[@]}"
	make kind-reference "${vars[@]}"
	for t in $TESTS; do
		make kind-conformance "${vars[@]}" GATEWAY_CLASS=gatewitness KIND_REPORT_DIR="out/reports/kind-$t" KIND_RUN_FLAGS="--run-test=$t"
	done
	echo "kind smoke: passed in $(($(date +%s) - t0))s: $TESTS"
) || status=$?
make kind-down "${vars[@]}" || true
[ "$status" = 0 ] || echo "kind smoke: failed"
exit "$status"
