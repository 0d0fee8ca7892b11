package runner_test

import (
	"slices"
	"testing"

	"github.com/gatewitness/gatewitness/conformance/runner"
	"github.com/gatewitness/gatewitness/reports"
)

// TestInProcessMirrorTests runs upstream's mirror tests in-process: they
// pass only if the suite's clientset, which it builds from RestConfig for
// every test, reads the mirror backend's log from the embedded cluster.
func TestInProcessMirrorTests(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the in-process cluster and runs upstream tests")
	}
	selected := []string{"HTTPRouteRequestMirror", "HTTPRouteRequestMultipleMirrors", "HTTPRouteRequestPercentageMirror"}
	o := runner.DefaultOptions()
	o.ReportDir = t.TempDir()
	skipAllBut(&o, func(name string) bool { return slices.Contains(selected, name) })
	runChecked(t, func() (*runner.Result, error) { return runner.Run(t, o) }, func(t *testing.T, res *runner.Result) {
		got := map[string]reports.TestResult{}
		for _, tr := range res.Run.Tests {
			got[tr.ShortName] = tr
		}
		for _, name := range selected {
			if tr := got[name]; tr.Result != reports.Pass {
				t.Errorf("%s: result %q (%s), want pass", name, tr.Result, tr.Message)
			}
		}
	})
}
