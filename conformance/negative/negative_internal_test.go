package negative

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gatewitness/gatewitness/reports"
)

// TestFailureLines checks that a failing test's last lines are picked out
// of a child's verbose output, where parallel tests interleave, without
// observations or other tests' lines.
func TestFailureLines(t *testing.T) {
	out := `=== RUN   TestNegativeHelper/A
=== PAUSE TestNegativeHelper/A
=== CONT  TestNegativeHelper/A
    conformance.go:77: 2026-11-25T22:29:17.495288975Z: Running A, relying on the following features
    a.go:10: observe: status = 504
=== NAME  TestNegativeHelper/B
    b.go:3: B's own failure
=== RUN   TestNegativeHelper/A/case_1
    a.go:20: request x: status 200 after 5s; want a timeout error
        and a second line of it
=== NAME  TestNegativeHelper/A
    a.go:30: the backend saw 2 attempts
    apply.go:279: 2026-11-26T00:01:56.267289197Z: Deleting a Deployment
    --- FAIL: TestNegativeHelper/A/case_1 (5.00s)
`
	got := failureLines([]byte(out), "A")
	want := "conformance.go:77: 2026-11-25T22:29:17.495288975Z: Running A, relying on the following features\n" +
		"a.go:20: request x: status 200 after 5s; want a timeout error\nand a second line of it\na.go:30: the backend saw 2 attempts\n" +
		"--- FAIL: TestNegativeHelper/A/case_1 (5.00s)"
	if got != want {
		t.Errorf("failureLines = %q, want %q", got, want)
	}
	if got := failureLines([]byte(out), "C"); !strings.Contains(got, "no failure text") {
		t.Errorf("failureLines of a test with no lines = %q", got)
	}
}

// TestChildLimitEndsBeforeTheBinary: a child is stopped before the test
// binary's -timeout panics, and never runs longer than childTimeout.
func TestChildLimitEndsBeforeTheBinary(t *testing.T) {
	limit, why := childLimit(t)
	if limit > childTimeout || limit < time.Second {
		t.Errorf("limit %v, want from 1s to childTimeout %v", limit, childTimeout)
	}
	d, ok := t.Deadline()
	if !ok {
		if limit != childTimeout || why != "" {
			t.Errorf("without -timeout: limit %v (%q), want childTimeout %v", limit, why, childTimeout)
		}
		return
	}
	if left := time.Until(d); limit >= left {
		t.Errorf("limit %v, want less than the %v the binary's -timeout leaves", limit, left)
	}
	if time.Until(d) < childTimeout && !strings.Contains(why, "-timeout") {
		t.Errorf("the limit comes from -timeout, but the reason %q does not say so", why)
	}
}

// TestChildBinary: with EnvChildBinaries set, a breakage's child runs from
// the binary of the same name there, the healthy child from the running
// (race-enabled, under make test) binary; a missing binary is an error
// that names the variable; unset, every child runs from this binary.
func TestChildBinary(t *testing.T) {
	t.Setenv(EnvChildBinaries, "")
	if bin, _, err := childBinary("some-breakage"); err != nil || bin != os.Args[0] {
		t.Errorf("unset: %s, %v; want this binary %s", bin, err, os.Args[0])
	}

	dir := t.TempDir()
	t.Setenv(EnvChildBinaries, dir)
	if _, _, err := childBinary("some-breakage"); err == nil || !strings.Contains(err.Error(), EnvChildBinaries) {
		t.Errorf("no binary in %s: error %v, want one naming %s", dir, err, EnvChildBinaries)
	}
	want := filepath.Join(dir, filepath.Base(os.Args[0]))
	if err := os.WriteFile(want, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	if bin, _, err := childBinary("some-breakage"); err != nil || bin != want {
		t.Errorf("breakage: %s, %v; want %s", bin, err, want)
	}
	if bin, _, err := childBinary(Healthy); err != nil || bin != os.Args[0] {
		t.Errorf("healthy: %s, %v; want this binary %s", bin, err, os.Args[0])
	}
}

// TestRecheckMaskedRunsOnlyMaskedFailsOnce: of a breakage's outcomes, only
// the tests it must fail that passed are run again, once, and their second
// outcomes replace the first; a test that failed where it must pass, or
// one that failed as it must, is left as it was.
func TestRecheckMaskedRunsOnlyMaskedFailsOnce(t *testing.T) {
	got := map[string]Outcome{
		"MustFailPassed":  {Result: reports.Pass},
		"MustFailFailed":  {Result: reports.Fail},
		"MustPassFailed":  {Result: reports.Fail},
		"MustFailPassed2": {Result: reports.Pass},
	}
	var calls [][]string
	recheckMasked(t, Breakage{Name: "b"}, []string{"MustFailPassed", "MustFailFailed", "MustFailPassed2"}, got,
		func(tests ...string) map[string]Outcome {
			calls = append(calls, tests)
			return map[string]Outcome{"MustFailPassed": {Result: reports.Fail}, "MustFailPassed2": {Result: reports.Pass}}
		})
	if len(calls) != 1 || strings.Join(calls[0], ",") != "MustFailPassed,MustFailPassed2" {
		t.Fatalf("ran again %v, want once, [MustFailPassed MustFailPassed2]", calls)
	}
	want := map[string]reports.Result{"MustFailPassed": reports.Fail, "MustFailFailed": reports.Fail,
		"MustPassFailed": reports.Fail, "MustFailPassed2": reports.Pass}
	for name, r := range want {
		if got[name].Result != r {
			t.Errorf("%s: %s after the recheck, want %s", name, got[name].Result, r)
		}
	}

	calls = nil
	recheckMasked(t, Breakage{Name: "b"}, []string{"MustFailFailed"}, got, func(tests ...string) map[string]Outcome {
		calls = append(calls, tests)
		return nil
	})
	if len(calls) != 0 {
		t.Errorf("ran again %v with nothing masked, want no run", calls)
	}
}
