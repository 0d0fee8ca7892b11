package tests_test

import (
	"slices"
	"testing"

	"github.com/gatecheck/gatecheck/conformance/runner"
	"github.com/gatecheck/gatecheck/features"
	"github.com/gatecheck/gatecheck/reports"
)

// meshProbeTests are the ShortNames of the health probe tests.
var meshProbeTests = []string{"MeshProbeHTTP", "MeshProbeTCP", "MeshProbeGRPC", "MeshProbeRewrite"}

// meshProbeFeatures are the features they need beyond the reference
// gateway's.
var meshProbeFeatures = []features.FeatureName{
	features.SupportMeshProbeHTTP, features.SupportMeshProbeTCP,
	features.SupportMeshProbeGRPC, features.SupportMeshProbeRewrite,
}

// TestMeshProbesInProcess runs the probe tests against the in-process
// cluster, whose pod runner probes as a kubelet does and runs the
// reference probe proxy for the "-proxied" Deployments: each test must
// pass and record the times it measured.
func TestMeshProbesInProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the in-process cluster and runs conformance tests")
	}
	o := runner.DefaultOptions()
	o.SupportedFeatures = append(runner.ReferenceFeatures(), meshProbeFeatures...)
	for _, ct := range runner.AllTests() {
		if !slices.Contains(meshProbeTests, ct.ShortName) {
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
		for _, name := range meshProbeTests {
			tr, ok := got[name]
			if !ok || tr.Result != reports.Pass {
				t.Errorf("%s: result %q, want pass; %s", name, tr.Result, tr.Message)
				continue
			}
			keys := map[string]bool{}
			for _, o := range tr.Observations {
				keys[o.Key] = true
			}
			for _, k := range []string{"unready-after", "traffic-stopped-after", "ready-after", "traffic-restored-after"} {
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
