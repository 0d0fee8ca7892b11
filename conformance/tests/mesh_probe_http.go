package tests

import (
	"net/http"
	"net/url"
	"strconv"
	"testing"

	"sigs.k8s.io/gateway-api/conformance/utils/suite"
	gwfeatures "sigs.k8s.io/gateway-api/pkg/features"

	"github.com/gatewitness/gatewitness/contract/echowire"
	"github.com/gatewitness/gatewitness/features"
)

// MeshProbeHTTP checks that an httpGet readiness probe that a mesh
// intercepts still sees the app's own answer: when the echo-backend's
// /health answers 503 the Pod becomes unready and the Gateway stops sending
// it traffic within periodSeconds × failureThreshold (plus the allowances
// of probeDownWindow), and when it answers 200 again both come back. It
// runs on the manifest's two Deployments (one annotated for gatewitness's
// in-process probe proxy; on a cluster the mesh injects both), each only
// if a mesh is in its probe's path (see meshTargets), and skips when none
// is.
var MeshProbeHTTP = suite.ConformanceTest{
	ShortName:   "MeshProbeHTTP",
	Description: "In a Pod whose readiness probe a mesh intercepts (the probe rewritten, or a container added beside the app), an httpGet probe fails on the app's error status: the Pod leaves the Gateway's rotation within periodSeconds × failureThreshold and returns when the app recovers; skipped when no mesh intercepts the probe",
	Features: []features.FeatureName{
		gwfeatures.SupportGateway,
		gwfeatures.SupportHTTPRoute,
		features.SupportMeshProbeHTTP,
	},
	Manifests: []string{ManifestPrefix + "mesh-probe-http.yaml"},
	Parallel:  true,
	Test:      testMeshProbeHTTP,
}

func testMeshProbeHTTP(t *testing.T, s *suite.ConformanceTestSuite) {
	runHTTPProbeTest(t, s, "mesh-probe-http", httpHealthSwitch)
}

// httpHealthSwitch sets /health's status: 200 up, 503 down.
func httpHealthSwitch(up bool) (path string, query url.Values) {
	code := http.StatusServiceUnavailable
	if up {
		code = http.StatusOK
	}
	return echowire.AdminHealthPath, url.Values{echowire.AdminStatusQuery: {strconv.Itoa(code)}}
}

// runHTTPProbeTest runs followHealth, in parallel, on those of the
// manifest's two Deployments (app and app-proxied) whose probes a mesh
// intercepts, each behind an HTTPRoute of its own name and the hostname
// <name>.gatewitness.example; it skips when a mesh intercepts neither.
func runHTTPProbeTest(t *testing.T, s *suite.ConformanceTestSuite, app string, admin adminSwitch) {
	for _, name := range meshTargets(t, s, app, app+"-proxied") {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			host := name + ".gatewitness.example"
			gwAddr := attachRoutes(t, s, host, "/", name, name)
			followHealth(t, s, httpProbeTarget(t, s, gwAddr, host, name, admin))
		})
	}
}
