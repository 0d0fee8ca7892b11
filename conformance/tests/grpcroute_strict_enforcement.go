package tests

import (
	"fmt"
	"testing"
	"time"

	"sigs.k8s.io/gateway-api/conformance/utils/suite"
	gwfeatures "sigs.k8s.io/gateway-api/pkg/features"

	"github.com/gatewitness/gatewitness/conformance/tests/internal/testclient"
	"github.com/gatewitness/gatewitness/contract/echowire"
	"github.com/gatewitness/gatewitness/contract/observe"
	"github.com/gatewitness/gatewitness/features"
)

// strictEnforcementLimit is the maxStreamDuration of both routes in
// gatewitness/grpcroute-strict-enforcement.yaml.
const strictEnforcementLimit = 2 * time.Second

// GRPCRouteStrictEnforcement checks GEP-3139's timeouts.strictEnforcement
// by the clock. Each call carries a grpc-timeout shorter or longer than the
// route's maxStreamDuration (or none) from a client that does not enforce
// it, so whatever ends the call is the Gateway's doing (or the backend's,
// if the Gateway forwards the deadline; either is fine):
//
//   - Allow: the stricter of the two values ends the call;
//   - Deny: the client's grpc-timeout ends the call, even when it is
//     longer than the route's value; without one, the route's value does.
//
// The call's fault keeps the backend busy longer than the expected bound,
// except where the bound is the long client value: there the backend
// answers before it, after the route's value, and the call must succeed.
// The long client value exceeds the route's by twice the tolerance and a
// second, so a gateway that picks the looser bound under Allow ends the
// call past the window at every accepted tolerance. A server stream that
// keeps sending is bounded like a silent call: maxStreamDuration and
// grpc-timeout are deadlines, not inactivity timers.
var GRPCRouteStrictEnforcement = suite.ConformanceTest{
	ShortName:   "GRPCRouteStrictEnforcement",
	Description: "A GRPCRoute rule's timeouts.strictEnforcement: Allow ends a call at the stricter of maxStreamDuration and the client's grpc-timeout; Deny at the client's grpc-timeout when present, else at maxStreamDuration",
	Features: []features.FeatureName{
		gwfeatures.SupportGateway,
		gwfeatures.SupportGRPCRoute,
		features.SupportGRPCRouteMaxStreamDuration,
		features.SupportGRPCRouteStrictEnforcement,
	},
	Manifests: []string{ManifestPrefix + "grpcroute-strict-enforcement.yaml"},
	Parallel:  true,
	Test:      testGRPCRouteStrictEnforcement,
}

func testGRPCRouteStrictEnforcement(t *testing.T, s *suite.ConformanceTestSuite) {
	const (
		allow = "allow.strict-enforcement.grpc.gatewitness.example"
		deny  = "deny.strict-enforcement.grpc.gatewitness.example"
	)
	g := newGRPCTarget(t, s, "grpcroute-strict-enforcement-allow", "grpcroute-strict-enforcement-deny")
	g.waitReady(t, g.conn(t, allow))
	g.waitReady(t, g.conn(t, deny))
	measure(t)

	limit := strictEnforcementLimit
	short := limit / 2                                // a client value shorter than the route's
	long := limit + 2*TimingTolerance() + time.Second // and one longer by more than the tolerance again
	// The backend answers between the route's value and the long client
	// value, so only a call bounded by the long value succeeds.
	between := (limit + long) / 2
	busy := fmt.Sprintf("delay=%v", long+2*TimingTolerance()+time.Second)
	// A stream that sends a message every 50ms for as long.
	flowing := fmt.Sprintf("messages=%d,interval=50ms", (long+2*TimingTolerance()+time.Second)/(50*time.Millisecond))
	tests := []struct {
		name      string
		authority string
		method    string
		client    time.Duration // grpc-timeout sent; 0 for none
		fault     string
		bound     time.Duration // when the call must end; 0: it must succeed
	}{
		{"allow/client-shorter", allow, "Unary", short, busy, short},
		{"allow/client-longer", allow, "Unary", long, busy, limit},
		{"allow/no-client-timeout", allow, "Unary", 0, busy, limit},
		{"allow/client-longer/flowing-stream", allow, "ServerStream", long, flowing, limit},
		{"deny/client-shorter", deny, "Unary", short, busy, short},
		{"deny/client-longer", deny, "Unary", long, fmt.Sprintf("delay=%v", between), 0},
		{"deny/no-client-timeout", deny, "Unary", 0, busy, limit},
		{"deny/client-shorter/flowing-stream", deny, "ServerStream", short, flowing, short},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			header := ""
			if tc.client > 0 {
				header = fmt.Sprintf("%dm", tc.client.Milliseconds())
			}
			observe.Record(t, "client-grpc-timeout", header)
			end := tc.bound
			if end == 0 {
				end = between
			}
			r := g.rawCall(t, grpcGiveUpAfter(max(end, long)), tc.authority, tc.method, header,
				echowire.IDMetadata, testclient.NewID(t), echowire.FaultMetadata, tc.fault)
			r.record(t)
			if tc.bound != 0 {
				r.wantCut(t, tc.bound)
				return
			}
			if !r.ok() {
				t.Errorf("HTTP %d, grpc-status %s %q after %v (body: %v); want OK: the backend answers after %v, inside the client's %v, which bounds the call under Deny",
					r.status, grpcCodeName(r.grpcStatus()), r.grpcMessage(), r.elapsed.Round(time.Millisecond), r.bodyErr, between, long)
			}
		})
	}
}
