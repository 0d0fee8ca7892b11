package runnertest

import (
	"os"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/gateway-api/conformance/utils/config"

	"github.com/gatewitness/gatewitness/conformance/runner"
	"github.com/gatewitness/gatewitness/reports"
)

// slowStatusTest is the upstream test the measurement below fails: it
// waits for a ResolvedRefs condition on its route that the broken
// controller never writes, and gives up after HTTPRouteMustHaveCondition.
const (
	slowStatusTest  = "HTTPRouteInvalidNonExistentBackendRef"
	slowStatusRoute = "invalid-nonexistent-backend-ref"
)

// neverResolvedRefs is a controller that never writes the ResolvedRefs
// condition of the HTTPRoute gateway-conformance-infra/name.
func neverResolvedRefs(name string) func(client.Object) {
	return func(obj client.Object) {
		r, ok := obj.(*gwv1.HTTPRoute)
		if !ok || r.Namespace != "gateway-conformance-infra" || r.Name != name {
			return
		}
		for i := range r.Status.Parents {
			p := &r.Status.Parents[i]
			p.Conditions = slices.DeleteFunc(p.Conditions, func(c metav1.Condition) bool {
				return c.Type == string(gwv1.RouteConditionResolvedRefs)
			})
		}
	}
}

// TestSlowFailingStatusTestHoldsNoWindow measures that a status test
// which fails after its full timeout holds no timing window back: the
// run with it finishes within that timeout plus the healthy run's wall
// time. Two whole in-process runs: set GATEWITNESS_MEASURE_SLOW_STATUS=1, and
// -parallel 48 as the CLI runs tests (go test runs GOMAXPROCS at once).
func TestSlowFailingStatusTestHoldsNoWindow(t *testing.T) {
	if os.Getenv("GATEWITNESS_MEASURE_SLOW_STATUS") == "" {
		t.Skip("two whole in-process runs; set GATEWITNESS_MEASURE_SLOW_STATUS=1 to measure")
	}
	timed := func(name string, g ReferenceGateway) (time.Duration, map[string]reports.Result) {
		var took time.Duration
		results := map[string]reports.Result{}
		t.Run(name, func(t *testing.T) {
			o := runner.DefaultOptions()
			o.ReportDir = t.TempDir()
			start := time.Now()
			var res *runner.Result
			// Registered before the run's own clean-ups, it runs after
			// them, once the record is complete.
			t.Cleanup(func() {
				took = time.Since(start)
				if res == nil || res.Run == nil {
					return // Run failed, and said so
				}
				// The run's own wall time, from its start to its
				// reports, without the cluster's teardown.
				took = res.Run.Duration
				t.Logf("%s: %s", name, reports.PhasesLine(res.Run.Phases))
				for _, tr := range res.Run.Tests {
					results[tr.ShortName] = tr.Result
				}
			})
			var err error
			if res, err = Run(t, o, g); err != nil {
				t.Fatal(err)
			}
		})
		return took, results
	}
	healthy, _ := timed("healthy", ReferenceGateway{})
	broken, results := timed("never-resolved-refs", ReferenceGateway{StatusFilter: neverResolvedRefs(slowStatusRoute)})
	timeout := config.DefaultTimeoutConfig().HTTPRouteMustHaveCondition
	t.Logf("healthy run %v; with %s failing after its %v timeout %v (bound: %v)", healthy.Round(time.Millisecond), slowStatusTest, timeout,
		broken.Round(time.Millisecond), (timeout + healthy).Round(time.Millisecond))
	if results[slowStatusTest] != reports.Fail {
		t.Errorf("%s: %q, want a failure (the broken controller never writes its condition)", slowStatusTest, results[slowStatusTest])
	}
	for name, r := range results {
		if r == reports.Fail && name != slowStatusTest {
			t.Errorf("%s failed too, and only %s should", name, slowStatusTest)
		}
	}
	if broken > timeout+healthy {
		t.Errorf("the run took %v, more than the status test's timeout %v plus the healthy run's %v: the status test held windows back", broken, timeout, healthy)
	}
}
