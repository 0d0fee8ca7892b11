package tests_test

import (
	"slices"
	"testing"
	"time"

	"github.com/gatecheck/gatecheck/conformance/negative"
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

// inProcessTolerance is the timing tolerance of the in-process run. The
// suite's default (500ms) holds on an idle machine; on a loaded 2-core one
// under -race a call's end has been seen 850ms late, so the run allows more.
// No verdict of that run depends on how small the tolerance is; the
// negative checks, which do, run with the default.
const inProcessTolerance = 1500 * time.Millisecond

// TestGRPCRouteTimeoutsInProcess runs the GRPCRoute timeout tests, in
// parallel, against the in-process reference gateway: each must pass and
// record what it observed (the status, the elapsed time, ...).
func TestGRPCRouteTimeoutsInProcess(t *testing.T) {
	runInProcess(t, func(o *runner.Options) { o.TimingTolerance = inProcessTolerance }, grpcTimeoutTests,
		func(tr reports.TestResult) { wantObservations(t, tr, "status", "elapsed") })
}

// grpcControlTest is an upstream GRPCRoute test that no GEP-3139 breakage
// touches: it must pass against every one of them.
const grpcControlTest = "GRPCExactMethodMatching"

// TestGRPCRouteTimeoutsCatchBreakages runs the GRPCRoute timeout tests
// against the reference gateway broken in each way breakages lists for
// GEP-3139, each in a child process, and checks that the test of the
// broken behaviour fails while the tests of the behaviours left intact
// (and an upstream GRPCRoute test) still pass. In particular a gateway that
// answers an expired call with UNAVAILABLE passes the portable
// GRPCRouteMaxStreamDuration and fails only the strict
// GRPCRouteMaxStreamDurationDeadlineExceeded.
func TestGRPCRouteTimeoutsCatchBreakages(t *testing.T) {
	t.Parallel()
	const (
		msd         = "GRPCRouteMaxStreamDuration"
		strict      = "GRPCRouteStrictEnforcement"
		deadline    = "GRPCRouteMaxStreamDurationDeadlineExceeded"
		propagation = "GRPCRouteTimeoutPropagation"
		cancels     = "GRPCRouteMaxStreamDurationCancelsBackend"
		pass, fail  = reports.Pass, reports.Fail
	)
	tests := []struct {
		breakage string
		want     map[string]reports.Result
	}{
		// Every test here rests on the route's limit. The data plane has
		// no knob that leaves the limit and breaks only the cancellation
		// of the backend's stream, so this is CancelsBackend's check too.
		{"grpc-max-stream-duration-ignored", map[string]reports.Result{
			msd: fail, strict: fail, deadline: fail, propagation: fail, cancels: fail, grpcControlTest: pass,
		}},
		{"grpc-strict-enforcement-inverted", map[string]reports.Result{
			msd: pass, strict: fail, deadline: pass, propagation: fail, cancels: pass,
		}},
		{"grpc-client-timeout-ignored", map[string]reports.Result{
			msd: pass, strict: fail, deadline: pass, propagation: fail, cancels: pass,
		}},
		{"grpc-looser-timeout-wins", map[string]reports.Result{
			msd: pass, strict: fail, deadline: pass, propagation: fail, cancels: pass,
		}},
		{"grpc-unavailable-on-expiry", map[string]reports.Result{
			msd: pass, strict: pass, deadline: fail, propagation: pass, cancels: pass,
		}},
		{"grpc-no-timeout-propagation", map[string]reports.Result{
			msd: pass, strict: pass, deadline: pass, propagation: fail, cancels: pass,
		}},
	}
	for _, tc := range tests {
		t.Run(tc.breakage, func(t *testing.T) {
			t.Parallel()
			if _, ok := breakages[tc.breakage]; !ok {
				t.Fatalf("no breakage %q in breakages", tc.breakage)
			}
			names := make([]string, 0, len(tc.want))
			for name := range tc.want {
				names = append(names, name)
			}
			slices.Sort(names)
			got := negative.Run(t, "TestNegativeHelper", tc.breakage, names...)
			for _, name := range names {
				if got[name] != tc.want[name] {
					t.Errorf("%s against %s: %q, want %q", name, tc.breakage, got[name], tc.want[name])
				}
			}
		})
	}
}
