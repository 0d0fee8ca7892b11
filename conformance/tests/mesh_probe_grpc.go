package tests

import (
	"context"
	"fmt"
	"testing"
	"time"

	"sigs.k8s.io/gateway-api/conformance/utils/suite"
	gwfeatures "sigs.k8s.io/gateway-api/pkg/features"

	"github.com/gatewitness/gatewitness/conformance/tests/internal/testclient"
	"github.com/gatewitness/gatewitness/echo-backend/echopb"
	"github.com/gatewitness/gatewitness/features"
)

// grpcProbeService is the service the MeshProbeGRPC manifests' grpc probes
// check. The manifests start it SERVING (GATEWITNESS_GRPC_SERVING), so that
// the Pods are Ready at their first probe rather than a probe period after
// the test sets it; the test sets it SERVING anyway, for an echo-backend
// that leaves it unknown. Taking it NOT_SERVING while the server as a
// whole stays SERVING shows that the probe asks for this service.
const grpcProbeService = "gatewitness-probe"

// MeshProbeGRPC checks that a grpc readiness probe reaches the app's
// grpc.health.v1 service for the probe's service through the mesh: the
// Pod is ready while the service is SERVING, becomes unready and
// leaves the GRPCRoute's rotation within periodSeconds × failureThreshold
// (plus allowances) when it is NOT_SERVING, and returns when it serves
// again. The health switch is the backend's Admin service, routed to a
// Service that publishes not-ready addresses. It runs only on Pods a mesh
// intercepts, and skips when there are none.
var MeshProbeGRPC = suite.ConformanceTest{
	ShortName:   "MeshProbeGRPC",
	Description: "In a Pod whose readiness probe a mesh intercepts, a grpc probe fails when the app answers NOT_SERVING for the probe's service: the Pod leaves the GRPCRoute's rotation within periodSeconds × failureThreshold and returns when it serves again; skipped when no mesh intercepts the probe",
	Features: []features.FeatureName{
		gwfeatures.SupportGateway,
		gwfeatures.SupportGRPCRoute,
		features.SupportMeshProbeGRPC,
	},
	Manifests: []string{ManifestPrefix + "mesh-probe-grpc.yaml"},
	Parallel:  true,
	Test:      testMeshProbeGRPC,
}

func testMeshProbeGRPC(t *testing.T, s *suite.ConformanceTestSuite) {
	for _, name := range meshTargets(t, s, "mesh-probe-grpc", "mesh-probe-grpc-proxied") {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			g := newGRPCTarget(t, s, name)
			cc := g.conn(t, name+".gatewitness.example")
			admin := echopb.NewAdminClient(cc)
			echo := echopb.NewEchoClient(cc)
			set := func(up bool) error {
				st := echopb.ServingStatus_NOT_SERVING
				if up {
					st = echopb.ServingStatus_SERVING
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				_, err := admin.SetGRPCHealth(ctx, &echopb.SetGRPCHealthRequest{Service: grpcProbeService, Status: st})
				return err
			}
			// The pod is ready once its service serves: set it, through the
			// admin route, until the route is programmed (a no-op for an
			// echo-backend that started it SERVING).
			var err error
			if !testclient.Poll(s.TimeoutConfig.MaxTimeToConsistency, 200*time.Millisecond, func() bool { err = set(true); return err == nil }) {
				t.Fatalf("%s: setting %q SERVING through the Admin service: %v", name, grpcProbeService, err)
			}
			followHealth(t, s, probeTarget{
				app:       name,
				setHealth: set,
				served: func(pod string) (bool, string) {
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					defer cancel()
					resp, err := echo.Unary(ctx, &echopb.EchoRequest{})
					if err != nil {
						return false, fmt.Sprintf("Echo.Unary: %v", err)
					}
					got := resp.GetPod().GetPod()
					return got == pod, fmt.Sprintf("Echo.Unary answered by pod %q", got)
				},
			})
		})
	}
}
