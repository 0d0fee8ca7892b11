package tests_test

import (
	"slices"
	"testing"

	"github.com/gatecheck/gatecheck/conformance/runner"
	"github.com/gatecheck/gatecheck/reports"
)

// runInProcess runs only the tests named in names against the in-process
// reference gateway, with runner.DefaultOptions changed by tweak (if not
// nil). Each named test must pass. The run completes in t's cleanups, so
// the verdicts are checked there, and check (if not nil) is then handed
// each passing test's result for the caller's own assertions.
func runInProcess(t *testing.T, tweak func(*runner.Options), names []string, check func(reports.TestResult)) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts the in-process cluster and runs conformance tests")
	}
	o := runner.DefaultOptions()
	if tweak != nil {
		tweak(&o)
	}
	for _, ct := range runner.AllTests() {
		if !slices.Contains(names, ct.ShortName) {
			o.SkipTests = append(o.SkipTests, ct.ShortName)
		}
	}
	var res *runner.Result
	// Run completes in t's cleanups; this one, registered first, runs last.
	t.Cleanup(func() {
		if res == nil {
			return // Run failed, and said so
		}
		got := map[string]reports.TestResult{}
		for _, tr := range res.Run.Tests {
			got[tr.ShortName] = tr
		}
		for _, name := range names {
			tr, ok := got[name]
			if !ok || tr.Result != reports.Pass {
				t.Errorf("%s: result %q, want pass; %s", name, tr.Result, tr.Message)
				continue
			}
			if check != nil {
				check(tr)
			}
		}
	})
	var err error
	if res, err = runner.Run(t, o); err != nil {
		t.Fatal(err)
	}
}

// wantObservations fails t unless tr recorded an observation under each
// of keys.
func wantObservations(t *testing.T, tr reports.TestResult, keys ...string) {
	t.Helper()
	have := map[string]bool{}
	for _, o := range tr.Observations {
		have[o.Key] = true
	}
	for _, k := range keys {
		if !have[k] {
			t.Errorf("%s recorded no %q observation; observations: %v", tr.ShortName, k, tr.Observations)
		}
	}
}
