#!/usr/bin/env bash
# make test: every Go test of the module, each package under an explicit
# time limit, without the race detector (TEST_RACE=off, the default), with
# it where it is cheap (TEST_RACE=auto) or everywhere, with go vet beside
# (TEST_RACE=all, what CI runs on every change: .ci/run).
#
# Why off by default: on a new machine make test may reuse what make run
# built only without -race; the race detector needs the standard library
# and every dependency compiled again with it. Even for the packages that
# do not import k8s.io/client-go (auto) that build was some 130 s of the
# 540 s of CPU a first make test took, and the CPU of everything else
# leaves two cores no room for it under the 4 minutes issue #33 gives
# make test (docs/performance.md, "A new machine under 4 minutes"). The
# race detector still runs over every package in CI; locally, make test
# TEST_RACE=all does what CI does, and go test -race -count=5 on the
# packages a change touches is the check before it lands.
#
# TEST_RACE=auto runs under -race the packages whose tests do not import
# k8s.io/client-go (go list -deps -test: the rule is the import, not a
# list), and the others without it: the data plane, the echo-backend and
# its servers, the probe proxy and the small internal packages under
# -race; the cluster, the controller, the runner, the suite's own tests
# and the CLI without.
#
# go test applies -timeout to each package's test binary. The limit is
# sized on the machine the project is developed on (2 cores, shared with
# other work): the slowest package, conformance/tests, took 2.5 to 3.5
# minutes there at load averages of 11 to 16 (docs/performance.md). A
# runner slow enough to pass the limit fails with a message that says so
# and how to raise it, not with a panic that reads like a hung or flaky
# test.
#
# -parallel sizes each test binary's parallel tests to the suites it runs,
# not to the cores: those tests, and the in-process conformance suites
# some of them start, spend nearly all their time waiting on timers and
# the network. GATEWITNESS_NEGATIVE_PARALLEL bounds the child processes that
# run the suite against broken reference gateways (conformance/negative).
#
# Where the CPU goes (docs/performance.md, "make test"): compiling what
# make run did not (the race detector's build of everything under -race),
# the suite's runs in child processes, linking some 75 test binaries, and
# the packages that start the in-process cluster. So:
#
# - Under TEST_RACE=all, the children that run the suite against a BROKEN
#   reference gateway run from test binaries built without -race
#   (GATEWITNESS_NEGATIVE_BINARIES, built here with go test -c); the
#   healthy children, and every test in the race-enabled binaries, still
#   run under -race. (Under off and auto the packages with negative checks
#   run without -race, children included.) A race in the
#   suite, the reference gateway or the cluster is caught by the healthy runs of
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
#   ones go test runs, runs here (under TEST_RACE=all or VET=1) beside the
#   tests (in the background, once the binaries without -race are built:
#   vet needs that same build), not before them: the test phase spends
#   much of its time waiting on the suite's timers, and vet's CPU fits
#   there. A vet finding fails make test
#   at the end, with vet's output.
# - The breakage matrix (conformance/tests' TestEveryGatewitnessTestHasABreakage)
#   runs in two halves, each whole (GATEWITNESS_NEGATIVE_SIDE). Without
#   -race (off, auto) both run from go test's own binary of the package,
#   the broken side beside the package's tests (hack/test-exec.sh, go
#   test's -exec): one build and link, and the longest run, the broken
#   side's 22 children, starts as soon as that binary is linked, the
#   package being named first. Under TEST_RACE=all the broken side runs
#   from the binary built apart without -race, started as soon as it is
#   built, beside go test's build; the healthy side in go test's
#   race-enabled binary. Before, every child waited until go test had
#   compiled the whole module with -race, some 8 minutes of CPU on a new
#   machine, and then ran after it, on the critical path.
# - Under auto, the packages with -race and those without run as two go
#   test commands at once, the race-enabled one's output after the other's:
#   the race build takes the CPU the other packages' tests leave while they
#   wait on timers, and conformance/tests, the longest run, starts as soon
#   as its build without -race (mostly make run's) is linked.
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
TEST_RACE=${TEST_RACE:-off}
export GATEWITNESS_NEGATIVE_PARALLEL=${GATEWITNESS_NEGATIVE_PARALLEL:-8}
case $TEST_RACE in
off | auto | all) ;;
*)
	echo "make test: TEST_RACE=$TEST_RACE: accepted: off (the default: no -race), auto (-race for the packages whose tests do not import k8s.io/client-go) or all (-race everywhere, and go vet, as CI runs)" >&2
	exit 2
	;;
esac

log=$(mktemp)
racelog=$(mktemp)
vetlog=$(mktemp)
matrixlog=$(mktemp)
bindir=$(mktemp -d)
trap 'rm -rf "$log" "$racelog" "$vetlog" "$matrixlog" "$bindir"' EXIT
start=$(date +%s)
phases=()
phase() { phases+=("$1 $(( $(date +%s) - $2 ))s"); }

# Packages may be given as arguments (by default the slowest package
# first, then ./...); more go test flags in TEST_FLAGS, e.g.
# TEST_FLAGS='-run TestX -v'.
pkgs=("$@")
[ ${#pkgs[@]} -eq 0 ] && pkgs=(./conformance/tests ./...)
read -ra test_flags <<<"${TEST_FLAGS:-}"

# go vet, beside everything else (see above), when the whole module is
# tested under TEST_RACE=all (CI); VET=1 runs it under auto too, or with
# packages given, VET=0 leaves it out. Under auto it is left to make vet
# and CI: on a new machine vet type-checks every dependency from source
# (some 3,000 vet actions, 120 s of CPU measured), a quarter of what the
# rest of make test takes (docs/performance.md).
vet_pid=
whole_module=0
[ $# -eq 0 ] && whole_module=1
start_vet() {
	local vet_default=0
	[ "$whole_module" = 1 ] && [ "$TEST_RACE" = all ] && vet_default=1
	[ "${VET:-$vet_default}" = 1 ] || return 0
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

# Which packages run under -race (TEST_RACE, see above). One go list: for
# each test package, its test binary's dependencies; the packages come in
# the order given, so conformance/tests stays first.
plain_pkgs=()
race_pkgs=()
[ "$TEST_RACE" = off ] || while read -r pkg deps; do
	if [ "$TEST_RACE" = all ] || [[ " $deps " != *" k8s.io/client-go/"* ]]; then
		race_pkgs+=("$pkg")
	else
		plain_pkgs+=("$pkg")
	fi
done < <("$GO" list -test -f '{{if and (eq .Name "main") (not .ForTest)}}{{.ImportPath}} {{join .Deps " "}}{{end}}' "${pkgs[@]}" |
	awk 'NF && $1 ~ /\.test$/ { sub(/\.test$/, "", $1); if (!seen[$1]++) print }')
# Packages without test files are still built (go test reports them "no
# test files"): under auto without -race, which is make run's build.
while read -r pkg; do
	[[ " ${race_pkgs[*]} ${plain_pkgs[*]} " == *" $pkg "* ]] && continue
	if [ "$TEST_RACE" = all ]; then race_pkgs+=("$pkg"); else plain_pkgs+=("$pkg"); fi
done < <("$GO" list "${pkgs[@]}" | awk '!seen[$0]++')

# The packages with negative checks: those whose tests import
# conformance/negative. When some of them run under -race, their
# breakage children run from binaries built here without it (see above
# and negative.EnvChildBinaries); the breakage matrix's package is built
# so too, for its broken side (below).
mapfile -t negative_pkgs < <("$GO" list -f '{{.ImportPath}}{{range .TestImports}} {{.}}{{end}}{{range .XTestImports}} {{.}}{{end}}' "${pkgs[@]}" |
	awk '{for (i = 2; i <= NF; i++) if ($i ~ /\/conformance\/negative$/) { print $1; break }}')
matrix_pkg=./conformance/tests
read -r matrix_import matrix_dir matrix_name < <("$GO" list -f '{{.ImportPath}} {{.Dir}} {{.Name}}' "$matrix_pkg")
build_c=()
negative_race=0
for p in "${negative_pkgs[@]}"; do
	[[ " ${race_pkgs[*]} " == *" $p "* ]] && negative_race=1
done
# The breakage matrix's two halves run from one binary, through
# hack/test-exec.sh, when its package is tested without -race (off, auto):
# go test builds and links it once, and starts it first (it is named
# first), its broken side beside its healthy side and everything else.
# Not with TEST_CACHE=1: go test caches no result of a run through -exec,
# so the broken side runs from a binary of its own, as under -race.
matrix_exec=0
if [ "$negative_race" = 1 ]; then
	build_c=("${negative_pkgs[@]}")
elif [ "$whole_module" = 1 ] && [ "${TEST_CACHE:-0}" = 1 ]; then
	build_c=("$matrix_import")
elif [ "$whole_module" = 1 ]; then
	matrix_exec=1
	export GATEWITNESS_MATRIX_DIR=$matrix_dir GATEWITNESS_MATRIX_REPORT=$matrixlog TEST_PARALLEL TEST_TIMEOUT
fi
t0=$(date +%s)
if [ ${#build_c[@]} -gt 0 ]; then
	if ! "$GO" test -c -ldflags='-s -w' -o "$bindir/" "${build_c[@]}"; then
		echo "make test: building the negative checks' test binaries (without -race) failed" >&2
		exit 1
	fi
	[ "$negative_race" = 1 ] && export GATEWITNESS_NEGATIVE_BINARIES=$bindir
	phase "negative-binaries(go-test-c,no-race)" "$t0"
fi

# vet from here, not from the start: it needs the same build without -race
# as the binaries above, and two go commands started together each compile
# what neither has cached yet. It runs under nice: on a new machine its
# analysis of every dependency (some 3,000 vet actions) takes minutes of
# CPU that the tests' build, the path to the longest package's run, needs
# more; niced, vet takes the CPU the tests leave while they wait on timers.
start_vet

# The breakage matrix's broken side (conformance/tests'
# TestEveryGatewitnessTestHasABreakage; see EnvSide there), from the binary
# just built, beside the build and tests below; go test's binary runs the
# healthy side. The children wait on the suite's timers far more than they
# compute, so they fit in the build's CPU, and the longest package's run
# does not wait for the whole build.
matrix_pid=
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

gotest=("$GO" test "${count[@]}" -vet=off -ldflags='-s -w' -p "$TEST_P" -parallel "$TEST_PARALLEL" -timeout "$TEST_TIMEOUT" "${test_flags[@]}")

# Under auto, the race-enabled packages run beside the others: their
# build (the race detector's standard library and their dependencies)
# takes the CPU that the others' tests leave while they wait on timers.
# Their output follows the others'. With one group only, it runs alone.
race_pid=
rc=0
if [ ${#race_pkgs[@]} -gt 0 ] && [ ${#plain_pkgs[@]} -gt 0 ]; then
	(
		t0=$(date +%s)
		"${gotest[@]}" -race "${race_pkgs[@]}"
		rc=$?
		echo "race-took $(( $(date +%s) - t0 ))"
		exit $rc
	) >"$racelog" 2>&1 &
	race_pid=$!
elif [ ${#race_pkgs[@]} -gt 0 ]; then
	t0=$(date +%s)
	"${gotest[@]}" -race "${race_pkgs[@]}" 2>&1 | tee "$log"
	rc=${PIPESTATUS[0]}
	phase "race-tests(${#race_pkgs[@]}-packages)" "$t0"
fi
if [ ${#plain_pkgs[@]} -gt 0 ]; then
	t0=$(date +%s)
	exec_flag=()
	[ "$matrix_exec" = 1 ] && exec_flag=(-exec "$(cd "$(dirname "$0")" && pwd)/test-exec.sh")
	"${gotest[@]}" "${exec_flag[@]}" "${plain_pkgs[@]}" 2>&1 | tee "$log"
	rc=${PIPESTATUS[0]}
	phase "tests-without-race(${#plain_pkgs[@]}-packages)" "$t0"
	if [ "$matrix_exec" = 1 ] && read -r _ took_matrix _ matrix_rc <"$matrixlog"; then
		if [ "$matrix_rc" -eq 0 ]; then
			echo "ok  	$matrix_pkg breakage matrix, broken side (beside the package's tests, hack/test-exec.sh)	${took_matrix}s"
		else
			echo "FAIL	$matrix_pkg breakage matrix, broken side (beside the package's tests, hack/test-exec.sh; its output is in the package's above)	${took_matrix}s"
		fi
		phases+=("breakage-matrix(in-the-package's-run,no-race:${took_matrix}s)")
	fi
fi
if [ -n "$race_pid" ]; then
	t0=$(date +%s)
	wait "$race_pid" || rc=1
	grep -v '^race-took ' "$racelog" | tee -a "$log"
	phase "race-tests(${#race_pkgs[@]}-packages:$(sed -n 's/^race-took //p' "$racelog")s;beside;waited-after)" "$t0"
fi
if [ -n "$matrix_pid" ]; then
	t0=$(date +%s)
	wait "$matrix_pid"
	matrix_rc=$?
	took_matrix=$(sed -n 's/^matrix-took //p' "$matrixlog")
	if [ "$matrix_rc" -eq 0 ]; then
		echo "ok  	$matrix_pkg breakage matrix, broken side (without -race, beside the tests)	${took_matrix}s"
	else
		grep -v '^matrix-took ' "$matrixlog"
		echo "FAIL	$matrix_pkg breakage matrix, broken side (without -race, beside the tests)	${took_matrix}s"
		rc=1
	fi
	phase "breakage-matrix(beside-the-tests,no-race:${took_matrix}s;waited-after)" "$t0"
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
echo "make test: TEST_RACE=$TEST_RACE: -race for ${#race_pkgs[@]} of $(( ${#race_pkgs[@]} + ${#plain_pkgs[@]} )) packages"
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
