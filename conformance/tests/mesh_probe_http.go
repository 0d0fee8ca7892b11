package tests

import (
	"fmt"
	"testing"

	"sigs.k8s.io/gateway-api/conformance/utils/suite"
	gwfeatures "sigs.k8s.io/gateway-api/pkg/features"

	"github.com/gatecheck/gatecheck/features"
)

func init() { ConformanceTests = append(ConformanceTests, MeshProbeHTTP) }

// MeshProbeHTTP checks that an httpGet readiness probe sees the app's own
// answer through the mesh: when the echo-backend's /health answers 503 the
// Pod becomes unready and the Gateway stops sending it traffic within
// periodSeconds × failureThreshold (plus the allowances of
// probeDownWindow), and when it answers 200 again both come back. It runs
// on two Deployments, one annotated for gatecheck's in-process probe proxy
// (on a cluster both are the mesh's).
var MeshProbeHTTP = suite.ConformanceTest{
	ShortName:   "MeshProbeHTTP",
	Description: "An httpGet readiness probe through the mesh's sidecar fails on the app's error status: the Pod leaves the Gateway's rotation within periodSeconds × failureThreshold and returns when the app recovers",
	Features: []features.FeatureName{
		gwfeatures.SupportGateway,
		gwfeatures.SupportHTTPRoute,
		features.SupportMeshProbeHTTP,
	},
	Manifests: []string{ManifestPrefix + "mesh-probe-http.yaml"},
	Parallel:  true,
	Test: func(t *testing.T, s *suite.ConformanceTestSuite) {
		runHTTPProbeTest(t, s, "mesh-probe-http", httpHealthSwitch)
	},
}

// httpHealthSwitch is the admin path that sets /health's status.
func httpHealthSwitch(up bool) string {
	code := 503
	if up {
		code = 200
	}
	return fmt.Sprintf("/_gatecheck/admin/health?status=%d", code)
}

// runHTTPProbeTest runs followHealth, in parallel, on the manifest's two
// Deployments (app and app-proxied), each behind an HTTPRoute of its own
// name and the hostname <name>.gatecheck.example.
func runHTTPProbeTest(t *testing.T, s *suite.ConformanceTestSuite, app string, admin func(up bool) string) {
	for _, name := range []string{app, app + "-proxied"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			host := name + ".gatecheck.example"
			gwAddr := attachRoutes(t, s, host, "/", name, name)
			followHealth(t, s, httpProbeTarget(t, s, gwAddr, host, name, admin))
		})
	}
}
