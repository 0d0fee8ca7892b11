#!/usr/bin/env bash
# make test: every Go test of the module with the race detector, each
# package under an explicit time limit.
#
# go test applies -timeout to each package's test binary. The limit is
# sized on the machine the project is developed on (2 cores, shared with
# other work): the slowest package, conformance/tests, takes 2 to 4.5
# minutes there under -race, depending on the load. A runner slow enough to pass the limit fails with a message that
# says so and how to raise it, not with a panic that reads like a hung or
# flaky test.
#
# -parallel sizes each test binary's parallel tests to the suites it runs,
# not to the cores: those tests, and the in-process conformance suites
# some of them start, spend nearly all their time waiting on timers and
# the network. GATECHECK_NEGATIVE_PARALLEL bounds the child processes that
# run the suite against broken reference gateways (conformance/negative).
set -uo pipefail

GO=${GO:-go}
TEST_TIMEOUT=${TEST_TIMEOUT:-8m}
TEST_PARALLEL=${TEST_PARALLEL:-32}
export GATECHECK_NEGATIVE_PARALLEL=${GATECHECK_NEGATIVE_PARALLEL:-8}

log=$(mktemp)
trap 'rm -f "$log"' EXIT
start=$(date +%s)
# Packages (and go test flags) may be given as arguments; by default ./...
args=("$@")
[ ${#args[@]} -eq 0 ] && args=(./...)
"$GO" test -race -count=1 -parallel "$TEST_PARALLEL" -timeout "$TEST_TIMEOUT" "${args[@]}" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
took=$(( $(date +%s) - start ))
if [ "$rc" -ne 0 ] && grep -q '^panic: test timed out after' "$log"; then
	echo
	echo "make test: a package ran past its time limit of $TEST_TIMEOUT (-timeout, per package) after ${took}s in all:"
	grep -E '^FAIL[[:space:]]+[^[:space:]]+[[:space:]]+[0-9.]+s$' "$log" | sed 's/^/  /'
	echo "The limit is sized on 2 shared cores, where the slowest package takes 2 to 4.5 minutes under -race."
	echo "On a slower or busier machine, raise it:  make test TEST_TIMEOUT=15m"
	echo "A test that hangs shows in the panic above, which lists the tests still running and their stacks."
fi
exit "$rc"
