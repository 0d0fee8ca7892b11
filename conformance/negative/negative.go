// Package negative runs conformance tests against a reference gateway that
// is broken on purpose, to show that each test can fail: a test that still
// passes when the behaviour it checks is gone proves nothing.
//
// A failing conformance test fails the Go test that runs the suite, so the
// suite runs in a child process: the same test binary, re-executed with
// -test.run selecting the package's helper test and the breakage named in
// the environment. The child writes each test's result to a file the parent
// reads. A package that has negative checks declares its breakages and one
// helper test:
//
//	var breakages = map[string]runner.ReferenceGateway{
//		"hostnames-ignored": {MutateConfig: ignoreHostnames},
//	}
//
//	func TestNegativeHelper(t *testing.T) { negative.Helper(t, breakages) }
//
//	func TestHostnameIntersectionCanFail(t *testing.T) {
//		got := negative.Run(t, "TestNegativeHelper", "hostnames-ignored",
//			"HTTPRouteHostnameIntersection", "HTTPRouteSimpleSameNamespace")
//		// got["HTTPRouteHostnameIntersection"] must be reports.Fail, ...
//	}
package negative

import (
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

	"github.com/gatecheck/gatecheck/conformance/runner"
	"github.com/gatecheck/gatecheck/reports"
)

// Environment of the child process.
const (
	envBreakage = "GATECHECK_NEGATIVE_BREAKAGE"
	envTests    = "GATECHECK_NEGATIVE_TESTS"
	envResults  = "GATECHECK_NEGATIVE_RESULTS"
)

// Healthy names the unbroken reference gateway, for a control run.
const Healthy = "healthy"

// childTimeout bounds one child run; a hung child fails the parent.
const childTimeout = 10 * time.Minute

// EnvParallel sets how many child runs may go at once in one test binary
// (default: the number of CPUs, at least 2). Most of a child's time is spent
// waiting on timeouts the tests provoke, so children overlap well; callers
// run their breakages as parallel subtests and Run holds the bound.
const EnvParallel = "GATECHECK_NEGATIVE_PARALLEL"

// EnvTolerance sets the timing tolerance of the child runs (a Go duration;
// default ChildTolerance).
const EnvTolerance = "GATECHECK_NEGATIVE_TOLERANCE"

// ChildTolerance is the timing tolerance child runs use unless EnvTolerance
// says otherwise. It is wider than the suite's default (500ms) because
// children share two cores with one another and with -race: a timer that
// fires late must not flip a test that should pass. It stays below the
// smallest gap between healthy and broken behaviour the breakages provoke
// (1s), so a broken gateway still fails: a wider window only makes the
// check harder to pass.
const ChildTolerance = 750 * time.Millisecond

// slots bounds the child runs going at once.
var slots = make(chan struct{}, parallelChildren())

func parallelChildren() int {
	if n, err := strconv.Atoi(os.Getenv(EnvParallel)); err == nil && n > 0 {
		return n
	}
	return max(runtime.NumCPU(), 2)
}

// Run runs the named conformance tests (ShortNames) against the reference
// gateway broken by breakage, in a child process running the helper test
// helperTest, and returns each selected test's result. Tests that the suite
// skipped appear with reports.Skip. It fails t if the child could not run
// or wrote no results. Run is safe to call from parallel tests; at most
// EnvParallel children run at once.
func Run(t *testing.T, helperTest, breakage string, tests ...string) map[string]reports.Result {
	t.Helper()
	if testing.Short() {
		t.Skip("negative checks start the in-process cluster in a child process; run without -short")
	}
	results := filepath.Join(t.TempDir(), "results.json")
	slots <- struct{}{}
	defer func() { <-slots }()
	cmd := exec.Command(os.Args[0], "-test.run=^"+helperTest+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(),
		envBreakage+"="+breakage,
		envTests+"="+strings.Join(tests, ","),
		envResults+"="+results,
	)
	done := make(chan struct{})
	var out []byte
	var err error
	go func() { out, err = cmd.CombinedOutput(); close(done) }()
	select {
	case <-done:
	case <-time.After(childTimeout):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("negative run %q did not finish in %v; output:\n%s", breakage, childTimeout, tail(out))
	}
	data, readErr := os.ReadFile(results)
	if readErr != nil {
		t.Fatalf("negative run %q wrote no results (exit: %v): %v; output:\n%s", breakage, err, readErr, tail(out))
	}
	got := map[string]reports.Result{}
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatalf("negative run %q: reading %s: %v", breakage, results, err)
	}
	for _, name := range tests {
		if _, ok := got[name]; !ok {
			t.Fatalf("negative run %q has no result for %s (is the ShortName right?); results: %v", breakage, name, got)
		}
	}
	t.Logf("negative run %q: %v", breakage, got)
	return got
}

// Helper is the body of a package's helper test. Run normally (no
// breakage in the environment) it skips; in a child started by Run it runs
// the selected tests against the reference gateway broken as
// breakages[name] says (Healthy: unbroken) and writes their results.
func Helper(t *testing.T, breakages map[string]runner.ReferenceGateway) {
	name := os.Getenv(envBreakage)
	if name == "" {
		t.Skip("helper process of the negative checks; it runs only as their child")
	}
	gw, ok := breakages[name]
	if !ok && name != Healthy {
		t.Fatalf("unknown breakage %q; known: %v", name, keys(breakages))
	}
	selected := strings.Split(os.Getenv(envTests), ",")
	o := runner.DefaultOptions()
	o.ReferenceGateway = gw
	o.TimingTolerance = ChildTolerance
	if v := os.Getenv(EnvTolerance); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			t.Fatalf("%s=%q: accepted: a positive Go duration such as 750ms", EnvTolerance, v)
		}
		o.TimingTolerance = d
	}
	shortenWaits(&o.TimeoutConfig)
	for _, ct := range runner.AllTests() {
		if !slices.Contains(selected, ct.ShortName) {
			o.SkipTests = append(o.SkipTests, ct.ShortName)
		}
	}
	var res *runner.Result
	// Run completes in t's cleanups; this one, registered first, runs last.
	t.Cleanup(func() {
		if res == nil {
			return
		}
		got := map[string]reports.Result{}
		for _, tr := range res.Run.Tests {
			if slices.Contains(selected, tr.ShortName) {
				got[tr.ShortName] = tr.Result
			}
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
	if res, err = runner.Run(t, o); err != nil {
		t.Fatal(err)
	}
}

// shortenWaits cuts upstream's waits, sized for real clusters, to what the
// in-process cluster needs: it converges in milliseconds, and a test that a
// breakage makes fail otherwise waits out the full 30 s consistency timeout
// before it reports. The healthy control runs use the same waits, so a wait
// too short for the reference gateway shows up there as a failure.
func shortenWaits(tc *config.TimeoutConfig) {
	const consistency, condition = 8 * time.Second, 20 * time.Second
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

func keys(m map[string]runner.ReferenceGateway) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// tail returns the end of a child's output, enough to see why it failed.
func tail(b []byte) string {
	const max = 8 << 10
	if len(b) > max {
		return "...\n" + string(b[len(b)-max:])
	}
	return string(b)
}
