package tests

import (
	"testing"
	"time"

	"sigs.k8s.io/gateway-api/conformance/utils/suite"
	gwfeatures "sigs.k8s.io/gateway-api/pkg/features"

	"github.com/gatewitness/gatewitness/conformance/tests/internal/testclient"
	"github.com/gatewitness/gatewitness/contract/observe"
	"github.com/gatewitness/gatewitness/features"
)

// cancelsBackendLimit is the maxStreamDuration of the route in
// gatewitness/grpcroute-cancels-backend.yaml.
const cancelsBackendLimit = time.Second

// GRPCRouteMaxStreamDurationCancelsBackend checks, from the backend's
// ledger (read through the Gateway), that when a call of any kind outlasts
// maxStreamDuration the backend's stream of the call ends too, at the
// limit: the backend records the attempt as cancelled, and the time from
// its arrival to its end, on the backend's own clock, is within the timing
// tolerance of the limit. The backend would otherwise keep working (a
// unary call answered after 10s, a server stream sending for 10s, client
// and bidirectional streams waiting for a client that never finishes).
//
// The backend's stream may end because the Gateway cancelled it or because
// the deadline the Gateway forwarded in grpc-timeout ran out there; both
// end the backend's work at the limit, which is what this test checks.
var GRPCRouteMaxStreamDurationCancelsBackend = suite.ConformanceTest{
	ShortName:   "GRPCRouteMaxStreamDurationCancelsBackend",
	Description: "When a call outlasts a GRPCRoute rule's maxStreamDuration, the backend's stream of the call ends at the limit too, as the backend's ledger shows",
	Features: []features.FeatureName{
		gwfeatures.SupportGateway,
		gwfeatures.SupportGRPCRoute,
		features.SupportGRPCRouteMaxStreamDuration,
		features.SupportGRPCRouteMaxStreamDurationCancelsBackend,
	},
	Manifests: []string{ManifestPrefix + "grpcroute-cancels-backend.yaml"},
	Parallel:  true,
	Test:      testGRPCRouteMaxStreamDurationCancelsBackend,
}

func testGRPCRouteMaxStreamDurationCancelsBackend(t *testing.T, s *suite.ConformanceTestSuite) {
	const host = "cancels-backend.grpc.gatewitness.example"
	g := newGRPCTarget(t, s, "grpcroute-cancels-backend")
	cc := g.conn(t, host)
	g.waitReady(t, cc)
	measure(t)
	limit := cancelsBackendLimit

	for _, kind := range grpcCallKinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			id := testclient.NewID(t)
			r := grpcRunKind(t, cc, kind, id, grpcOutlastFault[kind], grpcGiveUpAfter(limit))
			grpcWantCut(t, r, limit)
			// The backend learns of the end after the client does; it has
			// the tolerance to record it.
			a := grpcWaitAttemptEnded(t, cc, id, TimingTolerance())
			ran := a.GetEnded().AsTime().Sub(a.GetArrived().AsTime())
			observe.Record(t, "backend-outcome", a.GetOutcome())
			observe.Record(t, "backend-stream-lasted", ran.Round(time.Millisecond))
			if a.GetOutcome() != "cancelled" {
				t.Errorf("the backend's attempt ended %q (code %q); want \"cancelled\": its stream was ended for it", a.GetOutcome(), a.GetGrpcCode())
			}
			// The Gateway's clock starts before the backend's arrival, so
			// the backend's stream may end a little before the limit on
			// the backend's clock.
			checkWindow(t, a.GetArrived().AsTime(), ran, limit-TimingTolerance(), limit+TimingTolerance(), "the backend's stream ended, from its arrival,")
		})
	}
}
