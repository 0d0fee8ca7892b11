package negative

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
