package tests

import (
	"testing"

	"sigs.k8s.io/gateway-api/conformance/utils/suite"
	gwfeatures "sigs.k8s.io/gateway-api/pkg/features"

	"github.com/gatewitness/gatewitness/features"
)

// MeshProbeRewrite checks the corners of a mesh's probe rewrite: the
// readiness probe names its port, carries a query and a custom header, the
// container has a second (liveness) probe on another named port, and the
// app already listens on 9000, a port meshes like for their probe
// listener. The app must still become ready, and its readiness must follow
// its /health as in MeshProbeHTTP. It runs only on Pods a mesh
// intercepts, and skips when there are none.
var MeshProbeRewrite = suite.ConformanceTest{
	ShortName:   "MeshProbeRewrite",
	Description: "In a Pod whose readiness probe a mesh intercepts, a probe on a named port with a query and a custom header, next to a liveness probe, in a Pod that already listens on port 9000, still follows the app's health; skipped when no mesh intercepts the probe",
	Features: []features.FeatureName{
		gwfeatures.SupportGateway,
		gwfeatures.SupportHTTPRoute,
		features.SupportMeshProbeRewrite,
	},
	Manifests: []string{ManifestPrefix + "mesh-probe-rewrite.yaml"},
	Parallel:  true,
	Test:      testMeshProbeRewrite,
}

func testMeshProbeRewrite(t *testing.T, s *suite.ConformanceTestSuite) {
	runHTTPProbeTest(t, s, "mesh-probe-rewrite", httpHealthSwitch)
}
