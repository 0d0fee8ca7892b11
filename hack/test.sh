#!/usr/bin/env bash
# make test: every Go test of the module with the race detector, each
# package under an explicit time limit.
#
# go test applies -timeout to each package's test binary. The limit is
# sized on the machine the project is developed on (2 cores, shared with
# other work): the slowest package, conformance/tests, took 2.5 to 3.5
# minutes there at load averages of 11 to 16 (docs/performance.md). A runner slow enough to pass the limit fails with a message that
# says so and how to raise it, not with a panic that reads like a hung or
# flaky test.
#
# -parallel sizes each test binary's parallel tests to the suites it runs,
# not to the cores: those tests, and the in-process conformance suites
# some of them start, spend nearly all their time waiting on timers and
# the network. GATEWITNESS_NEGATIVE_PARALLEL bounds the child processes that
# run the suite against broken reference gateways (conformance/negative).
#
# Where the CPU goes (docs/performance.md, "make test"): the suite's runs
# in child processes, linking some 45 race-enabled test binaries, and the
# packages that start the in-process cluster. So:
#
# - The children that run the suite against a BROKEN reference gateway run
#   from test binaries built without -race (GATEWITNESS_NEGATIVE_BINARIES,
#   built here with go test -c); the healthy children, and every test in
#   the race-enabled binaries, still run under -race. A race in the suite,
#   the reference gateway or the cluster is caught by the healthy runs of
#   the suite (conformance/tests, conformance/negative, conformance/runner,
#   cluster); a breakage child runs that same code with one thing broken,
#   10 children in conformance/tests, and under -race each took three
#   times the CPU (21s against 7s) while proving nothing more. Verdicts do
#   not depend on it: each breakage must fail exactly its tests either way.
# - The test binaries are linked without DWARF and symbol tables
#   (-ldflags=-s -w), which cuts each race link by about a third; stack
#   traces and race reports keep their files and lines (they come from the
#   pcln table, not DWARF). Debug a test binary with go test -c.
# - go test's own vet pass is off: go vet ./..., whose checks include the
#   ones go test runs, runs here beside the tests (in the background, once
#   the binaries without -race are built: vet needs that same build), not
#   before them: the test phase spends much of its time waiting on the
#   suite's timers, and vet's CPU fits there. A vet finding fails make test
#   at the end, with vet's output.
# - The breakage matrix (conformance/tests' TestEveryGatewitnessTestHasABreakage)
#   runs in two halves, each whole: its broken side from the binary built
#   without -race, started as soon as that binary is built, beside the
#   race-enabled build; its healthy side in go test's race-enabled binary
#   (GATEWITNESS_NEGATIVE_SIDE). Before, every child waited until go test
#   had compiled the whole module with -race, some 8 minutes of CPU on a
#   new machine, and then ran after it, on the critical path.
# - Each phase's wall time is printed at the end ("make test: phases"), so
#   that where the time goes can be read off any run (docs/performance.md).
# - TEST_CACHE=1 lets go test reuse the results of packages whose code,
#   files and environment did not change since a passing run (go test's
#   test cache; without it every package runs again, -count=1). A first run
#   on a new machine gains nothing; a second one, after a change to a few
#   packages, runs and links only what the change reaches.
# - conformance/tests, the slowest package (its time is mostly the suite's
#   timers), is named first so go test builds and starts it first, and -p
#   lets TEST_P test binaries run at once (default 8 on any machine: they
#   wait on timers far more than they compute), so the other packages run
#   beside it. -p is also how many compiles and links go test runs at once,
#   and a test binary that is running holds its slot until it ends: at 4,
#   the packages' runs (some 1,380 s of wall summed, at a load of 10 to 25)
#   left the two cores partly idle after the build while links and runs
#   queued behind four binaries waiting on timers.
set -uo pipefail

GO=${GO:-go}
TEST_TIMEOUT=${TEST_TIMEOUT:-8m}
TEST_PARALLEL=${TEST_PARALLEL:-32}
TEST_P=${TEST_P:-8}
export GATEWITNESS_NEGATIVE_PARALLEL=${GATEWITNESS_NEGATIVE_PARALLEL:-8}

log=$(mktemp)
vetlog=$(mktemp)
matrixlog=$(mktemp)
bindir=$(mktemp -d)
trap 'rm -rf "$log" "$vetlog" "$matrixlog" "$bindir"' EXIT
start=$(date +%s)
phases=()
phase() { phases+=("$1 $(( $(date +%s) - $2 ))s"); }

# Packages (and go test flags) may be given as arguments; by default the
# slowest package first, then ./...
args=("$@")
[ ${#args[@]} -eq 0 ] && args=(./conformance/tests ./...)

# go vet, beside everything else (see above), when the whole module is
# tested; VET=0 leaves it out, VET=1 runs it with packages given too.
vet_pid=
whole_module=0
[ $# -eq 0 ] && whole_module=1
start_vet() {
	[ "${VET:-$whole_module}" = 1 ] || return 0
	(
		t0=$(date +%s)
		nice -n 10 "$GO" vet ./... && nice -n 10 "$GO" vet -tags kind ./kind/...
		rc=$?
		echo "vet-took $(( $(date +%s) - t0 ))"
		exit $rc
	) >"$vetlog" 2>&1 &
	vet_pid=$!
}
count=(-count=1)
[ "${TEST_CACHE:-0}" = 1 ] && count=()

# The packages with negative checks: those whose tests import
# conformance/negative. Their breakage children run from binaries built
# here without -race (see above and negative.EnvChildBinaries).
negative_pkgs=$("$GO" list -f '{{.ImportPath}}{{range .TestImports}} {{.}}{{end}}{{range .XTestImports}} {{.}}{{end}}' ./... |
	awk '{for (i = 2; i <= NF; i++) if ($i ~ /\/conformance\/negative$/) { print $1; break }}')
t0=$(date +%s)
if [ -n "$negative_pkgs" ]; then
	# shellcheck disable=SC2086 # one package a word
	if ! "$GO" test -c -ldflags='-s -w' -o "$bindir/" $negative_pkgs; then
		echo "make test: building the negative checks' test binaries (without -race) failed" >&2
		exit 1
	fi
	export GATEWITNESS_NEGATIVE_BINARIES=$bindir
fi
phase "negative-binaries(go-test-c,no-race)" "$t0"

# vet from here, not from the start: it needs the same build without -race
# as the binaries above, and two go commands started together each compile
# what neither has cached yet. It runs under nice: on a new machine its
# analysis of every dependency (some 3,000 vet actions) takes minutes of
# CPU that the race-enabled build, the path to the longest package's run,
# needs more; niced, vet takes the CPU the tests leave while they wait on
# timers.
start_vet

# The breakage matrix's broken side (conformance/tests'
# TestEveryGatewitnessTestHasABreakage; see EnvSide there), from the binary
# just built, beside the race-enabled build and tests below; the race phase
# runs the healthy side. The children wait on the suite's timers far more
# than they compute, so they fit in the build's CPU, and the longest
# package's run no longer waits for the whole race-enabled build.
matrix_pid=
matrix_pkg=./conformance/tests
read -r matrix_dir matrix_name < <("$GO" list -f '{{.Dir}} {{.Name}}' "$matrix_pkg")
if [ "$whole_module" = 1 ] && [ -x "$bindir/$matrix_name.test" ]; then
	(
		t0=$(date +%s)
		cd "$matrix_dir" &&
			GATEWITNESS_NEGATIVE_SIDE=broken "$bindir/$matrix_name.test" -test.paniconexit0 -test.count=1 \
				-test.run '^TestEveryGatewitnessTestHasABreakage$' -test.parallel "$TEST_PARALLEL" -test.timeout "$TEST_TIMEOUT"
		rc=$?
		echo "matrix-took $(( $(date +%s) - t0 ))"
		exit $rc
	) >"$matrixlog" 2>&1 &
	matrix_pid=$!
	export GATEWITNESS_NEGATIVE_SIDE=healthy
fi

t0=$(date +%s)
"$GO" test -race "${count[@]}" -vet=off -ldflags='-s -w' -p "$TEST_P" -parallel "$TEST_PARALLEL" -timeout "$TEST_TIMEOUT" "${args[@]}" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
phase "race-tests(build,link,run)" "$t0"
if [ -n "$matrix_pid" ]; then
	t0=$(date +%s)
	wait "$matrix_pid"
	matrix_rc=$?
	took_matrix=$(sed -n 's/^matrix-took //p' "$matrixlog")
	if [ "$matrix_rc" -eq 0 ]; then
		echo "ok  	$matrix_pkg breakage matrix, broken side (without -race, beside the race phase)	${took_matrix}s"
	else
		grep -v '^matrix-took ' "$matrixlog"
		echo "FAIL	$matrix_pkg breakage matrix, broken side (without -race, beside the race phase)	${took_matrix}s"
		rc=1
	fi
	phase "breakage-matrix(beside-the-race-phase,no-race:${took_matrix}s;waited-after)" "$t0"
fi
if [ -n "$vet_pid" ]; then
	t0=$(date +%s)
	if ! wait "$vet_pid"; then
		echo "make test: go vet found problems:" >&2
		grep -v '^vet-took ' "$vetlog" >&2
		rc=1
	fi
	phase "vet(beside-the-tests:$(sed -n 's/^vet-took //p' "$vetlog")s;waited-after)" "$t0"
fi
took=$(( $(date +%s) - start ))
echo "make test: phases: ${phases[*]}; ${took}s in all"
if [ "$rc" -ne 0 ] && grep -q '^panic: test timed out after' "$log" "$matrixlog"; then
	echo
	echo "make test: a package ran past its time limit of $TEST_TIMEOUT (-timeout, per package) after ${took}s in all:"
	grep -E '^FAIL[[:space:]]+[^[:space:]]+[[:space:]]+[0-9.]+s$' "$log" | sed 's/^/  /'
	echo "The limit is sized on 2 shared cores, where the slowest package took 2.5 to 3.5 minutes at load averages of 11 to 16."
	echo "On a slower or busier machine, raise it:  make test TEST_TIMEOUT=15m"
	echo "A test that hangs shows in the panic above, which lists the tests still running and their stacks."
fi
exit "$rc"
