// Package negative runs conformance tests against a reference gateway that
// is broken on purpose, to show that each test can fail: a test that still
// passes when the behaviour it checks is gone proves nothing, and one that
// fails against a data plane that does what the text allows is wrong.
//
// A Breakage is one broken reference gateway, modelled on how a real data
// plane goes wrong. It declares its scope once: the features it breaks
// (every test of its profiles that needs one must fail), the further tests
// it must fail or skip, by name, and one reason why every other test of its
// profiles passes. Check runs the tests of a breakage's profiles against it
// and wants exactly that (Expected). Pack groups
// breakages of disjoint profiles so that they share a child process.
//
// A failing conformance test fails the Go test that runs the suite, so the
// suite runs in a child process: the same test binary, re-executed with
// -test.run selecting the package's helper test and the breakage named in
// the environment. The child writes each test's result to a file the parent
// reads. A package that has negative checks declares its breakages and one
// helper test:
//
//	var breakages = []negative.Breakage{
//		{Name: "hostnames-ignored", Gateway: runnertest.ReferenceGateway{MutateConfig: ignoreHostnames},
//			Profiles: ..., Breaks: []features.FeatureName{...}, Passes: "its routes have no hostname"},
//	}
//
//	func TestNegativeHelper(t *testing.T) { negative.Helper(t, breakages) }
//
// and runs them with Check (a breakage registry) or Run (chosen tests).
//
//	func TestHostnameIntersectionCanFail(t *testing.T) {
//		got := negative.Run(t, "TestNegativeHelper", "hostnames-ignored", 0,
//			"HTTPRouteHostnameIntersection", "HTTPRouteSimpleSameNamespace")
//		// got["HTTPRouteHostnameIntersection"].Result must be reports.Fail, ...
//	}
package negative

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/gateway-api/conformance/utils/config"

	"github.com/gatewitness/gatewitness/conformance/runner"
	"github.com/gatewitness/gatewitness/conformance/runner/runnertest"
	"github.com/gatewitness/gatewitness/features"
	"github.com/gatewitness/gatewitness/gateway/dataplane/dataplanetest"
	"github.com/gatewitness/gatewitness/gateway/ir"
	"github.com/gatewitness/gatewitness/gateway/probeproxy/probeproxytest"
	"github.com/gatewitness/gatewitness/internal/gotestout"
	"github.com/gatewitness/gatewitness/reports"
)

// Breakage is a reference gateway broken the way a real data plane goes
// wrong, and what that must do to the tests.
type Breakage struct {
	// Name names the breakage in test names and messages.
	Name string
	// Models says which real data planes go wrong this way, and how.
	Models string
	// Gateway breaks the in-process reference gateway.
	Gateway runnertest.ReferenceGateway
	// Unclaimed lists features the broken gateway does not claim, as an
	// honest implementation without the behaviour would not: the tests
	// that need them are not run, and assertions gated on them are not
	// made.
	Unclaimed []features.FeatureName
	// Profiles are the profiles whose tests the breakage is checked
	// against: every test of the given set counted in one of them (see
	// Check). They must hold every test the break can reach: a data plane
	// that serves every snapshot late reaches every profile's tests.
	Profiles []string
	// Breaks lists the features the breakage breaks: every test of its
	// scope that lists one of them must fail. A new test of such a
	// feature is in its reach without a word in the breakage.
	Breaks []features.FeatureName
	// Fails lists the ShortNames of further tests that must fail: those
	// the breakage fails though it breaks none of their features whole.
	Fails []string
	// Skips lists the ShortNames of tests that must skip themselves (not
	// pass) against the breakage, such as a probe test without a mesh.
	Skips []string
	// Passes says why every other test of the breakage's scope passes
	// against it: one reason, the default, so that a new test the
	// breakage leaves alone costs it nothing.
	Passes string
	// Unaffected gives a test of the scope that passes a reason of its
	// own, where Passes does not say enough (optional).
	Unaffected map[string]string
}

// Expected returns, in the order of all, the tests of b's scope that must
// fail against b (Breaks and Fails), those that must skip (Skips, and the
// tests that need a feature b does not claim), and those that must pass.
func Expected(b Breakage, all []Test) (fails, skips, passes []string) {
	for _, name := range Scope(b, all) {
		switch {
		case slices.Contains(b.Fails, name) || breaks(b, all, name) != "":
			fails = append(fails, name)
		case slices.Contains(b.Skips, name) || !claims(b, all, name):
			skips = append(skips, name)
		default:
			passes = append(passes, name)
		}
	}
	return fails, skips, passes
}

// breaks returns the first feature of b.Breaks that the test named name
// lists, or "".
func breaks(b Breakage, all []Test, name string) features.FeatureName {
	for _, ct := range all {
		if ct.ShortName != name {
			continue
		}
		for _, f := range b.Breaks {
			if slices.Contains(ct.Features, f) {
				return f
			}
		}
	}
	return ""
}

// Unlisted returns, for breakages bs and the tests all, one message for
// each test name the breakages use that is not a test of all: a test
// declared but not listed (in ConformanceTests), which every other check
// would misreport. where says where the tests are listed.
func Unlisted(bs []Breakage, all []Test, where string) []string {
	var names []string
	for _, b := range bs {
		names = append(names, b.Fails...)
		names = append(names, b.Skips...)
		for name := range b.Unaffected {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	var out []string
	for _, name := range slices.Compact(names) {
		if !slices.ContainsFunc(all, func(ct Test) bool { return ct.ShortName == name }) {
			out = append(out, fmt.Sprintf("test %s is named by the breakages but is not a listed test: add it to ConformanceTests in %s", name, where))
		}
	}
	return out
}

// Unaccounted returns, for b and the tests all, a message for each way b's
// declaration does not say what it does to the tests of its scope: a name
// outside the scope, a test in more than one of Fails and Skips (Breaks
// counted), a broken feature no test of the scope lists, or a test that
// passes by default where b gives no Passes. where says where b is
// declared. It needs no run: it is the fast half of Check.
func Unaccounted(b Breakage, all []Test, where string) []string {
	scope := Scope(b, all)
	var out []string
	for _, f := range b.Breaks {
		if !slices.ContainsFunc(scope, func(name string) bool {
			return slices.ContainsFunc(all, func(ct Test) bool { return ct.ShortName == name && slices.Contains(ct.Features, f) })
		}) {
			out = append(out, fmt.Sprintf("breakage %s breaks %s, which no test of its profiles %v lists; remove it from Breaks, or add the profile whose tests need it to Profiles, in %s", b.Name, f, b.Profiles, where))
		}
	}
	named := slices.Concat(b.Fails, b.Skips)
	for name := range b.Unaffected {
		named = append(named, name)
	}
	slices.Sort(named)
	for _, name := range slices.Compact(named) {
		if !slices.Contains(scope, name) {
			out = append(out, fmt.Sprintf("breakage %s names %s, which is not a test of its profiles %v; remove it, or add the profile it counts in to the breakage's Profiles, in %s", b.Name, name, b.Profiles, where))
		}
	}
	var byDefault []string
	for _, name := range scope {
		f := breaks(b, all, name)
		inFails, inSkips, reason := slices.Contains(b.Fails, name), slices.Contains(b.Skips, name), b.Unaffected[name] != ""
		switch {
		case f != "" && inFails:
			out = append(out, fmt.Sprintf("breakage %s fails %s through Breaks (%s) already; remove it from Fails, in %s", b.Name, name, f, where))
		case (f != "" || inFails) && (inSkips || reason), inSkips && reason:
			out = append(out, fmt.Sprintf("breakage %s: %s is in more than one of what it fails (Breaks, Fails), Skips and Unaffected; keep it in one, in %s", b.Name, name, where))
		case f == "" && !inFails && !inSkips && !reason && b.Passes == "":
			byDefault = append(byDefault, name)
		}
	}
	if len(byDefault) > 0 {
		out = append(out, fmt.Sprintf("breakage %s: %v count in its profiles %v and pass against it by default, but the breakage has no Passes: say why the tests it leaves alone pass (or add to Fails those it must fail), in %s",
			b.Name, byDefault, b.Profiles, where))
	}
	return out
}

// Environment of the child process.
const (
	envBreakage  = "GATEWITNESS_NEGATIVE_BREAKAGE"
	envTests     = "GATEWITNESS_NEGATIVE_TESTS"
	envResults   = "GATEWITNESS_NEGATIVE_RESULTS"
	envTolerance = "GATEWITNESS_NEGATIVE_TOLERANCE"
)

// EnvRetryBudgetLoad, when set in the parent's environment (the children
// inherit it), is the load the retry-budget load tests run at, as
// "qps,requests,shareSlack" (e.g. "20,60,0.1", the weakest load the
// options accept): to show that the breakages fail their tests at the
// bounds of the load options too, not only at the defaults.
const EnvRetryBudgetLoad = "GATEWITNESS_NEGATIVE_RETRY_BUDGET_LOAD"

// EnvChurn, when set to 1 in the parent's environment (the children
// inherit it), runs the suite with runner.Options.ChurnDuringWindows: other
// tests' configuration changes reach the gateway while timing windows are
// open. With it, the breakage reload-restarts-timers fails tests it passes
// without it (docs/semantics/timing-tolerance.md).
const EnvChurn = "GATEWITNESS_NEGATIVE_CHURN"

// Healthy names the unbroken reference gateway, for a control run.
const Healthy = "healthy"

// childTimeout bounds one child run; a hung child fails the parent.
const childTimeout = 10 * time.Minute

// childLimit is how long a child may run: childTimeout, or less when the
// test binary's -timeout comes sooner, so that the child is stopped and
// named, with its output, before the binary panics and leaves it running.
// why says which limit it is.
func childLimit(t *testing.T) (limit time.Duration, why string) {
	const margin = 20 * time.Second // to report, and for the others' reports
	limit = childTimeout
	if d, ok := t.Deadline(); ok && time.Until(d)-margin < limit {
		limit = max(time.Until(d)-margin, time.Second)
		why = ", which is what the test binary's -timeout left (make test's TEST_TIMEOUT; raise it on a slower machine)"
	}
	return limit, why
}

// EnvParallel sets how many child runs may go at once in one test binary
// (default: the number of CPUs, at least 2). Most of a child's time is spent
// waiting on timeouts the tests provoke, so children overlap well; callers
// run their breakages as parallel subtests and Run holds the bound.
const EnvParallel = "GATEWITNESS_NEGATIVE_PARALLEL"

// ChildParallel is how many of the suite's tests a child runs at once
// (-test.parallel). It must be more than the parallel tests a child runs
// (the rerun's subtest counted), or the runner cannot hold timing windows
// apart from configuration steps (runner.scheduleWarning) and a breakage
// that models a reloading data plane fails tests it must pass; the tests
// package checks it against its list (TestNegativeChildrenHoldWindows).
// Only the window holders run their timers at once (the others wait for
// their turn), so a larger number does not make the healthy gateway's
// timers late as an unscheduled 64 did.
const ChildParallel = 48

func parallelChildren() int {
	if n, err := strconv.Atoi(os.Getenv(EnvParallel)); err == nil && n > 0 {
		return n
	}
	return max(runtime.NumCPU(), 2)
}

// EnvChildBinaries names a directory of test binaries built without the
// race detector (go test -c -o DIR/ PKG..., so each is named <package>.test
// as go test names it), from the same sources as the running test binary.
// When it is set, Run starts the children of breakages from the binary
// there of the same name, and only the Healthy children from the running
// binary. make test TEST_RACE=all sets it (hack/test.sh): the healthy children run the
// suite under -race as go test built it, which is what catches a race in
// the suite, the reference gateway or the cluster; a breakage child runs
// the same code with one thing broken, and under the race detector it cost
// three times the CPU (about 21s against 7s a child, 10 children in
// conformance/tests) while proving nothing more.
const EnvChildBinaries = "GATEWITNESS_NEGATIVE_BINARIES"

// childBinary returns the test binary a child run of breakage executes,
// and which build it is, for the log.
func childBinary(breakage string) (bin, build string, err error) {
	dir := os.Getenv(EnvChildBinaries)
	if dir == "" || breakage == Healthy {
		return os.Args[0], "this test binary", nil
	}
	bin = filepath.Join(dir, filepath.Base(os.Args[0]))
	if _, err := os.Stat(bin); err != nil {
		return "", "", fmt.Errorf("%s=%s holds no %s: build it with go test -c -o %s/ and this package, or unset %s to run every child from this binary: %w",
			EnvChildBinaries, dir, filepath.Base(bin), dir, EnvChildBinaries, err)
	}
	return bin, "built without -race, from " + EnvChildBinaries, nil
}

// Outcome is one test's result in a child run, what it reported as
// failures (Run reads it from the child's output), and the keys of the
// observations it recorded.
type Outcome struct {
	Result       reports.Result
	Message      string   `json:",omitempty"`
	Observations []string `json:",omitempty"`
}

// Run runs the named conformance tests (ShortNames) against the reference
// gateway broken by breakage (Healthy: unbroken), at the timing tolerance
// tol (0: the suite's default), in a child process running the helper
// test helperTest, and returns each selected test's outcome. Tests that
// the suite skipped appear with reports.Skip. It fails t if the child could
// not run or wrote no results. Run is safe to call from parallel tests; at
// most EnvParallel children run at once.
func Run(t *testing.T, helperTest, breakage string, tol time.Duration, tests ...string) map[string]Outcome {
	t.Helper()
	return run(t, turn{}, helperTest, breakage, tol, tests...)
}

// run is Run, the child's slot asked for in its turn tn.
func run(t *testing.T, tn turn, helperTest, breakage string, tol time.Duration, tests ...string) map[string]Outcome {
	t.Helper()
	if testing.Short() {
		t.Skip("negative checks start the in-process cluster in a child process; run without -short")
	}
	results := filepath.Join(t.TempDir(), "results.json")
	defer tn.takeSlot(childSlots)()
	// The suite's tests wait on timers more than they compute, so they run
	// more than GOMAXPROCS at a time; but not all at once: a burst of
	// starting backends would make the reference gateway's timers late.
	bin, build, err := childBinary(breakage)
	if err != nil {
		t.Fatalf("negative run %q: %v", breakage, err)
	}
	cmd := exec.Command(bin, "-test.run=^"+helperTest+"$", "-test.count=1", "-test.v", "-test.parallel="+strconv.Itoa(ChildParallel))
	cmd.Env = append(os.Environ(),
		envBreakage+"="+breakage,
		envTests+"="+strings.Join(tests, ","),
		envResults+"="+results,
	)
	if tol > 0 {
		cmd.Env = append(cmd.Env, envTolerance+"="+tol.String())
	}
	limit, why := childLimit(t)
	done := make(chan struct{})
	var output bytes.Buffer
	cmd.Stdout, cmd.Stderr = &output, &output
	start := time.Now()
	// Started here, not in the goroutine, so that cmd.Process is set
	// before the timeout below may read it.
	if err := cmd.Start(); err != nil {
		t.Fatalf("negative run %q: starting %s: %v", breakage, bin, err)
	}
	go func() { err = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(limit):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("negative run %q did not finish in %v%s; output:\n%s", breakage, limit.Round(time.Second), why, tail(output.Bytes()))
	}
	out := output.Bytes()
	data, readErr := os.ReadFile(results)
	if readErr != nil {
		t.Fatalf("negative run %q wrote no results (exit: %v): %v; output:\n%s", breakage, err, readErr, tail(out))
	}
	got := map[string]Outcome{}
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatalf("negative run %q: reading %s: %v", breakage, results, err)
	}
	for _, name := range tests {
		o, ok := got[name]
		if !ok {
			t.Fatalf("negative run %q has no result for %s (is the ShortName right?); results: %v", breakage, name, got)
		}
		if o.Result == reports.Fail {
			o.Message = failureLines(out, name)
			got[name] = o
		}
	}
	summary := make([]string, 0, len(tests))
	for _, name := range tests {
		summary = append(summary, name+"="+string(got[name].Result))
	}
	t.Logf("negative run %q at tolerance %v (%s) took %v: %s", breakage, tol, build, time.Since(start).Round(time.Second), strings.Join(summary, " "))
	return got
}

// Check runs the breakages of pack together in one child process, against
// the tests of all that count in one of their profiles, at the timing
// tolerance tol, and fails t unless, for each breakage, exactly its Fails
// fail, its Skips skip and the other tests of its profiles pass. It
// returns the outcomes. A pack is what Pack makes: breakages of disjoint
// profiles, so that each one's tests see only its own break (see Pack).
func Check(t *testing.T, helperTest string, pack []Breakage, all []Test, tol time.Duration) map[string]Outcome {
	t.Helper()
	return CheckInTurn(t, nil, 0, helperTest, pack, all, tol)
}

// CheckInTurn is Check with the child's slot asked for in turn i of turns
// (nil: no turn, as Check). The turn ends when t does, if the child did
// not ask before, so that a subtest that skips or fails first holds no
// one up.
func CheckInTurn(t *testing.T, turns *Turns, i int, helperTest string, pack []Breakage, all []Test, tol time.Duration) map[string]Outcome {
	t.Helper()
	if turns != nil {
		t.Cleanup(func() { turns.end(i) })
	}
	var names, scope []string
	for _, b := range pack {
		names = append(names, b.Name)
		scope = append(scope, Scope(b, all)...)
	}
	got := run(t, turn{turns, i}, helperTest, strings.Join(names, packSeparator), tol, scope...)
	for _, b := range pack {
		var failed, skipped []string
		fails, skips, _ := Expected(b, all)
		recheckMasked(t, b, fails, got, func(tests ...string) map[string]Outcome {
			t.Logf("%s at tolerance %v: %v passed, which it must fail; running them again with %s alone", b.Name, tol, tests, b.Name)
			return Run(t, helperTest, b.Name, tol, tests...)
		})
		for _, name := range Scope(b, all) {
			want := reports.Pass
			switch {
			case slices.Contains(fails, name):
				want = reports.Fail
			case slices.Contains(skips, name):
				want = reports.Skip
			}
			o := got[name]
			if o.Result == reports.Inconclusive && want == reports.Pass {
				// Late only by the suite's own lateness, twice: the
				// machine's doing, not the gateway's; never so for a
				// test the breakage must fail.
				t.Logf("%s at tolerance %v: %s inconclusive: %s", b.Name, tol, name, o.Message)
				continue
			}
			switch o.Result {
			case reports.Fail:
				failed = append(failed, name)
			case reports.Skip:
				skipped = append(skipped, name)
			}
			if o.Result != want {
				msg := ""
				if o.Message != "" {
					msg = ":\n" + o.Message
				}
				alone := ""
				if len(pack) > 1 {
					alone = fmt.Sprintf(" (run with %v; %s=%s runs it alone)", names, EnvAlone, b.Name)
				}
				t.Errorf("%s at tolerance %v: %s %s, want %s%s%s", b.Name, tol, name, o.Result, want, alone, msg)
			}
		}
		t.Logf("breakage %s at tolerance %v: failed %v, skipped %v", b.Name, tol, failed, skipped)
	}
	return got
}

// recheckMasked runs again, once, the tests that breakage b must fail
// (fails) but that passed in got, through runAlone (Check's: b alone,
// those tests only, in a child of their own); their outcomes there
// replace those in got. A break measured in time can be masked by the
// machine: a timer that fires 10% early (timers-10-percent-early) is
// 100ms early on a 1s timeout, which a client delayed by a loaded
// machine's scheduling no longer sees as early, and a correct gateway
// must never be failed for the suite's own lateness, so the windows
// cannot be narrowed to see it. A test that cannot catch b passes both
// runs and the check fails; a break it catches on a quiet machine is
// caught in one of two. Check logs the first run and the second. A test
// that fails where it must pass is never run again here.
func recheckMasked(t *testing.T, b Breakage, fails []string, got map[string]Outcome, runAlone func(tests ...string) map[string]Outcome) {
	t.Helper()
	var masked []string
	for _, name := range fails {
		if got[name].Result == reports.Pass {
			masked = append(masked, name)
		}
	}
	if len(masked) == 0 {
		return
	}
	again := runAlone(masked...)
	for _, name := range masked {
		got[name] = again[name]
	}
}

// PackTests is the number of tests the child of pack runs: its
// breakages' Scope in all. A child's time follows it (the broken side's,
// at 8 at a time: 35 tests 40 to 59 s, 9 tests 6 to 14 s), so the breakage
// matrix gives the packs with most the first Turns.
func PackTests(pack []Breakage, all []Test) int {
	n := 0
	for _, b := range pack {
		n += len(Scope(b, all))
	}
	return n
}

// packSeparator joins the names of a pack's breakages for the child.
const packSeparator = "+"

// EnvAlone names breakages (comma-separated) that Pack leaves in a pack of
// their own, to see what one does without the others.
const EnvAlone = "GATEWITNESS_NEGATIVE_ALONE"

// Pack groups breakages into runs of one child process each: breakages
// whose profiles are disjoint, and that leave every feature claimed, share
// a child, each acting on its own part of the gateway and checked only
// against the tests of its own profiles. A break that reached another
// pack member's tests would show as an unexpected result there, never as
// a pass, so packing saves children without hiding anything. A breakage
// with Unclaimed features, or named in EnvAlone, runs alone.
func Pack(bs []Breakage) [][]Breakage {
	alone := strings.Split(os.Getenv(EnvAlone), ",")
	// The breakages of most profiles first: they are the hardest to place.
	bs = slices.Clone(bs)
	slices.SortStableFunc(bs, func(a, b Breakage) int { return len(b.Profiles) - len(a.Profiles) })
	var packs [][]Breakage
	for _, b := range bs {
		placed := false
		if len(b.Unclaimed) == 0 && !slices.Contains(alone, b.Name) {
			for i, p := range packs {
				if len(p[0].Unclaimed) == 0 && !slices.Contains(alone, p[0].Name) && disjoint(p, b) {
					packs[i] = append(p, b)
					placed = true
					break
				}
			}
		}
		if !placed {
			packs = append(packs, []Breakage{b})
		}
	}
	return packs
}

func disjoint(pack []Breakage, b Breakage) bool {
	for _, o := range pack {
		for _, p := range b.Profiles {
			if slices.Contains(o.Profiles, p) {
				return false
			}
		}
	}
	return true
}

// compose returns a reference gateway broken by every breakage of bs.
func compose(bs []Breakage) runnertest.ReferenceGateway {
	var mutates []func(*ir.Config)
	var g runnertest.ReferenceGateway
	for _, b := range bs {
		if f := b.Gateway.MutateConfig; f != nil {
			mutates = append(mutates, f)
		}
		g.LateApply = max(g.LateApply, b.Gateway.LateApply)
		g.LaggingReplica = max(g.LaggingReplica, b.Gateway.LaggingReplica)
		g.DataPlane = dataplanetest.Merge(g.DataPlane, b.Gateway.DataPlane)
		g.ProbeProxy = probeproxytest.Merge(g.ProbeProxy, b.Gateway.ProbeProxy)
		g.NoMesh = g.NoMesh || b.Gateway.NoMesh
	}
	if len(mutates) > 0 {
		g.MutateConfig = func(c *ir.Config) {
			for _, f := range mutates {
				f(c)
			}
		}
	}
	return g
}

// Test is what Check needs to know of a conformance test.
type Test struct {
	ShortName string
	Features  []features.FeatureName
}

// Scope returns the ShortNames of the tests of all that count in one of
// b.Profiles, by the upstream suite's rule: a profile counts a test when it
// holds every feature the test lists.
func Scope(b Breakage, all []Test) []string {
	var out []string
	for _, ct := range all {
		if features.CountedIn(b.Profiles, ct.Features) {
			out = append(out, ct.ShortName)
		}
	}
	return out
}

// claims reports whether b's gateway claims every feature the named test
// needs.
func claims(b Breakage, all []Test, name string) bool {
	for _, ct := range all {
		if ct.ShortName == name {
			for _, f := range ct.Features {
				if slices.Contains(b.Unclaimed, f) {
					return false
				}
			}
		}
	}
	return true
}

// Helper is the body of a package's helper test. Run normally (no
// breakage in the environment) it skips; in a child started by Run it runs
// the selected tests against the reference gateway broken as the named
// breakage says (Healthy: unbroken), at the tolerance Run passed, and
// writes their outcomes.
func Helper(t *testing.T, breakages []Breakage) {
	name := os.Getenv(envBreakage)
	if name == "" {
		t.Skip("helper process of the negative checks; it runs only as their child")
	}
	var pack []Breakage
	var unclaimed []features.FeatureName
	for _, n := range strings.Split(name, packSeparator) {
		if n == Healthy {
			continue
		}
		i := slices.IndexFunc(breakages, func(b Breakage) bool { return b.Name == n })
		if i < 0 {
			t.Fatalf("unknown breakage %q", n)
		}
		pack = append(pack, breakages[i])
		unclaimed = append(unclaimed, breakages[i].Unclaimed...)
	}
	selected := strings.Split(os.Getenv(envTests), ",")
	o := runner.DefaultOptions()
	for _, f := range runner.ReferenceFeatures() {
		if !slices.Contains(unclaimed, f) {
			o.SupportedFeatures = append(o.SupportedFeatures, f)
		}
	}
	if v := os.Getenv(envTolerance); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("%s=%q: accepted: a Go duration such as 750ms", envTolerance, v)
		}
		o.TimingTolerance = d
	}
	if v := os.Getenv(EnvRetryBudgetLoad); v != "" {
		l := &o.RetryBudgetLoad // runner.Run checks it against its bounds
		if _, err := fmt.Sscanf(v, "%d,%d,%g", &l.QPS, &l.Requests, &l.ShareSlack); err != nil {
			t.Fatalf("%s=%q: accepted: qps,requests,shareSlack such as 20,60,0.1", EnvRetryBudgetLoad, v)
		}
	}
	o.ChurnDuringWindows = os.Getenv(EnvChurn) == "1"
	shortenWaits(&o.TimeoutConfig)
	for _, ct := range runner.AllTests() {
		if !slices.Contains(selected, ct.ShortName) {
			o.SkipTests = append(o.SkipTests, ct.ShortName)
		}
	}
	var res *runner.Result
	// Run completes in t's cleanups; this one, registered first, runs last.
	t.Cleanup(func() {
		if res == nil || res.Run == nil {
			return
		}
		got := map[string]Outcome{}
		for _, tr := range res.Run.Tests {
			if !slices.Contains(selected, tr.ShortName) {
				continue
			}
			o := Outcome{Result: tr.Result}
			for _, ob := range tr.Observations {
				o.Observations = append(o.Observations, ob.Key)
			}
			got[tr.ShortName] = o
		}
		data, err := json.Marshal(got)
		if err == nil {
			err = os.WriteFile(os.Getenv(envResults), data, 0o600)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "negative: writing results: %v\n", err)
		}
	})
	var err error
	if res, err = runnertest.Run(t, o, compose(pack)); err != nil {
		t.Fatal(err)
	}
}

// shortenWaits caps upstream's waits, sized for real clusters (up to
// minutes), for the in-process cluster, so that a test a breakage makes
// fail does not wait them out before it reports. The cluster converges in
// milliseconds when idle, but a child runs many tests and their backends
// at once, under the race detector, beside other children: its controller
// has taken over 20s to accept a route then, so the caps stay generous.
// The healthy control runs use the same waits, so a wait too short for
// the reference gateway shows up there as a failure.
func shortenWaits(tc *config.TimeoutConfig) {
	const consistency, condition = 30 * time.Second, 60 * time.Second
	tc.MaxTimeToConsistency = min(tc.MaxTimeToConsistency, consistency)
	for _, d := range []*time.Duration{
		&tc.GatewayMustHaveAddress, &tc.GatewayMustHaveCondition, &tc.GatewayStatusMustHaveListeners,
		&tc.GatewayListenersMustHaveConditions, &tc.HTTPRouteMustNotHaveParents, &tc.HTTPRouteMustHaveCondition,
		&tc.TLSRouteMustHaveCondition, &tc.TCPRouteMustHaveCondition, &tc.RouteMustHaveParents,
		&tc.LatestObservedGenerationSet, &tc.GWCMustBeAccepted,
	} {
		*d = min(*d, condition)
	}
}

// failureLines returns the end of what the test named test (a
// ShortName) wrote in a child's verbose output: the last lines written
// under its own and its subtests' headers ("=== RUN", "=== CONT", "=== NAME"),
// observations and the applier's creations and deletions left out. A
// failing test's last lines say why it failed, whether in the test's own
// words or in the suite's timestamped ones.
func failureLines(out []byte, test string) string {
	return gotestout.FailureLines(out, "TestNegativeHelper/"+test, gotestout.Options{Keep: 10})
}

// tail returns the end of a child's output, enough to see why it failed.
func tail(b []byte) string {
	const max = 8 << 10
	if len(b) > max {
		return "...\n" + string(b[len(b)-max:])
	}
	return string(b)
}
