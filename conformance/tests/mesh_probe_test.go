package tests_test

import (
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
	runInProcess(t, func(o *runner.Options) {
		o.SupportedFeatures = append(runner.ReferenceFeatures(), meshProbeFeatures...)
	}, meshProbeTests, func(tr reports.TestResult) {
		wantObservations(t, tr, "unready-after", "traffic-stopped-after", "ready-after", "traffic-restored-after")
	})
}
