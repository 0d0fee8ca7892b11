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
	for _, ct := range runner.AllTests() {
		if !slices.Contains(selected, ct.ShortName) {
			o.SkipTests = append(o.SkipTests, ct.ShortName)
		}
	}
	var res *runner.Result
	// Run records the results in a cleanup; this one is registered first,
	// so it runs last.
	t.Cleanup(func() {
		if res == nil {
			return // Run failed, and said so
		}
		if res.Err != nil {
			t.Fatalf("Result.Err = %v", res.Err)
		}
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
	var err error
	res, err = runner.Run(t, o)
	if err != nil {
		t.Fatal(err)
	}
}
