package tests

import (
	"net/url"
	"strconv"
	"testing"

	"sigs.k8s.io/gateway-api/conformance/utils/suite"
	gwfeatures "sigs.k8s.io/gateway-api/pkg/features"

	"github.com/gatewitness/gatewitness/contract/echowire"
	"github.com/gatewitness/gatewitness/features"
)

// MeshProbeTCP checks that a tcpSocket readiness probe that a mesh
// intercepts still connects to the app itself, not to a sidecar that
// accepts every connection: when the echo-backend closes its TCP port the
// Pod becomes unready and the Gateway stops sending it traffic (which goes
// to its HTTP port, still open) within periodSeconds × failureThreshold
// plus allowances, and both come back when the port reopens. Like
// MeshProbeHTTP, it runs only on Pods a mesh intercepts, and skips when
// there are none.
var MeshProbeTCP = suite.ConformanceTest{
	ShortName:   "MeshProbeTCP",
	Description: "In a Pod whose readiness probe a mesh intercepts, a tcpSocket probe fails when the app's port is closed though the sidecar could accept it: the Pod leaves the Gateway's rotation within periodSeconds × failureThreshold and returns when the port reopens; skipped when no mesh intercepts the probe",
	Features: []features.FeatureName{
		gwfeatures.SupportGateway,
		gwfeatures.SupportHTTPRoute,
		features.SupportMeshProbeTCP,
	},
	Manifests: []string{ManifestPrefix + "mesh-probe-tcp.yaml"},
	Parallel:  true,
	Test:      testMeshProbeTCP,
}

func testMeshProbeTCP(t *testing.T, s *suite.ConformanceTestSuite) {
	runHTTPProbeTest(t, s, "mesh-probe-tcp", func(up bool) (string, url.Values) {
		return echowire.AdminTCPPath, url.Values{echowire.AdminOpenQuery: {strconv.FormatBool(up)}}
	})
}
