package tests_test

import (
	"slices"
	"testing"

	"github.com/gatecheck/gatecheck/conformance/runner"
	"github.com/gatecheck/gatecheck/reports"
)

// grpcTimeoutTests are the ShortNames of the GRPCRoute timeout tests
// (GEP-3139).
var grpcTimeoutTests = []string{
	"GRPCRouteMaxStreamDuration",
	"GRPCRouteStrictEnforcement",
	"GRPCRouteMaxStreamDurationDeadlineExceeded",
	"GRPCRouteTimeoutPropagation",
	"GRPCRouteMaxStreamDurationCancelsBackend",
}

// TestGRPCRouteTimeoutsInProcess runs the GRPCRoute timeout tests, in
// parallel, against the in-process reference gateway: each must pass and
// record what it observed (the status, the elapsed time, ...).
func TestGRPCRouteTimeoutsInProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the in-process cluster and runs conformance tests")
	}
	o := runner.DefaultOptions()
	for _, ct := range runner.AllTests() {
		if !slices.Contains(grpcTimeoutTests, ct.ShortName) {
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
		for _, name := range grpcTimeoutTests {
			tr, ok := got[name]
			if !ok || tr.Result != reports.Pass {
				t.Errorf("%s: result %q, want pass; %s", name, tr.Result, tr.Message)
				continue
			}
			keys := map[string]bool{}
			for _, o := range tr.Observations {
				keys[o.Key] = true
			}
			for _, k := range []string{"status", "elapsed"} {
				if !keys[k] {
					t.Errorf("%s recorded no %q observation; observations: %v", name, k, tr.Observations)
				}
			}
		}
	})
	var err error
	if res, err = runner.Run(t, o); err != nil {
		t.Fatal(err)
	}
}
