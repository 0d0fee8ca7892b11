#!/usr/bin/env bash
# go test -exec program of make test (hack/test.sh): runs every test
# binary as go test would, and the breakage matrix's package's binary
# twice at once, so that the matrix's two halves run from the one binary
# go test built and linked:
#
# - the broken side (TestEveryGatewitnessTestHasABreakage with
#   GATEWITNESS_NEGATIVE_SIDE=broken: every breakage's child), in the
#   background, its output kept apart;
# - the package's tests as go test asked, with
#   GATEWITNESS_NEGATIVE_SIDE=healthy (the matrix's healthy children).
#
# It exits when both have, with the healthy run's status, or 1 when the
# broken side failed, after printing that side's output: go test then
# reports the package FAIL with both halves' output. The broken side's
# wall time and status go to GATEWITNESS_MATRIX_REPORT for make test's
# summary.
#
# hack/test.sh uses it only when the matrix's package is tested without
# -race (TEST_RACE=off or auto): under -race the broken side runs from a
# binary built apart without it (GATEWITNESS_NEGATIVE_BINARIES).
#
# The environment it reads (set by hack/test.sh):
#   GATEWITNESS_MATRIX_DIR     the matrix package's directory: go test runs
#                              each binary in its package's directory
#   GATEWITNESS_MATRIX_REPORT  a file to write "took <seconds> rc <status>" to
#   TEST_PARALLEL, TEST_TIMEOUT  the broken side's -test.parallel, -test.timeout
set -uo pipefail

if [ "$PWD" != "${GATEWITNESS_MATRIX_DIR:-}" ]; then
	exec "$@"
fi

bin=$1
shift
broken_log=$(mktemp)
trap 'rm -f "$broken_log"' EXIT
start=$(date +%s)
GATEWITNESS_NEGATIVE_SIDE=broken "$bin" -test.paniconexit0 -test.count=1 \
	-test.run '^TestEveryGatewitnessTestHasABreakage$' \
	-test.parallel "${TEST_PARALLEL:-32}" -test.timeout "${TEST_TIMEOUT:-8m}" >"$broken_log" 2>&1 &
broken_pid=$!

GATEWITNESS_NEGATIVE_SIDE=healthy "$bin" "$@"
rc=$?

wait "$broken_pid"
broken_rc=$?
took=$(($(date +%s) - start))
if [ -n "${GATEWITNESS_MATRIX_REPORT:-}" ]; then
	echo "took $took rc $broken_rc" >"$GATEWITNESS_MATRIX_REPORT"
fi
if [ "$broken_rc" -ne 0 ]; then
	echo "--- FAIL: the breakage matrix's broken side (GATEWITNESS_NEGATIVE_SIDE=broken, beside the package's tests) after ${took}s:"
	cat "$broken_log"
	[ "$rc" -eq 0 ] && rc=1
fi
exit "$rc"
