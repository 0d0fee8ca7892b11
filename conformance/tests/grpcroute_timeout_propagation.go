package tests

import (
	"testing"
	"time"

	"sigs.k8s.io/gateway-api/conformance/utils/suite"
	gwfeatures "sigs.k8s.io/gateway-api/pkg/features"

	"github.com/gatewitness/gatewitness/conformance/tests/internal/testclient"
	"github.com/gatewitness/gatewitness/contract/echowire"
	"github.com/gatewitness/gatewitness/contract/observe"
	"github.com/gatewitness/gatewitness/features"
	"github.com/gatewitness/gatewitness/internal/grpctimeout"
)

// timeoutPropagationLimit is the maxStreamDuration of the Allow and Deny
// routes in gatewitness/grpcroute-timeout-propagation.yaml.
const timeoutPropagationLimit = 10 * time.Second

// GRPCRouteTimeoutPropagation checks, by the grpc-timeout the backend
// received (its ledger, read through the Gateway), that the Gateway tells
// the backend how long the call has left: never more than the bound that
// maxStreamDuration, strictEnforcement and the client's grpc-timeout give
// the call, and not less than that bound minus the timing tolerance (the
// time the Gateway took to forward the call). The table is the one
// GRPCRouteStrictEnforcement checks by the clock; the calls themselves
// are quick and succeed.
var GRPCRouteTimeoutPropagation = suite.ConformanceTest{
	ShortName:   "GRPCRouteTimeoutPropagation",
	Description: "The backend receives a grpc-timeout no larger than the call's remaining bound under GRPCRoute maxStreamDuration, strictEnforcement Allow and Deny, and 0s",
	Features: []features.FeatureName{
		gwfeatures.SupportGateway,
		gwfeatures.SupportGRPCRoute,
		features.SupportGRPCRouteMaxStreamDuration,
		features.SupportGRPCRouteStrictEnforcement,
		features.SupportGRPCRouteTimeoutPropagation,
	},
	Manifests: []string{ManifestPrefix + "grpcroute-timeout-propagation.yaml"},
	Parallel:  true,
	Test:      testGRPCRouteTimeoutPropagation,
}

func testGRPCRouteTimeoutPropagation(t *testing.T, s *suite.ConformanceTestSuite) {
	const (
		allow = "allow.timeout-propagation.grpc.gatewitness.example"
		deny  = "deny.timeout-propagation.grpc.gatewitness.example"
		zero  = "zero.timeout-propagation.grpc.gatewitness.example"
	)
	g := newGRPCTarget(t, s, "grpcroute-timeout-propagation-allow", "grpcroute-timeout-propagation-deny", "grpcroute-timeout-propagation-zero")
	ledger := g.conn(t, allow) // the Allow route also sends Admin calls to the backend
	g.waitReady(t, ledger)
	g.waitReady(t, g.conn(t, deny))
	g.waitReady(t, g.conn(t, zero))
	measure(t)

	limit := timeoutPropagationLimit
	tests := []struct {
		name      string
		authority string
		client    string        // grpc-timeout sent; "" for none
		want      time.Duration // the call's bound
	}{
		{"allow/no-client-timeout", allow, "", limit},
		{"allow/client-shorter", allow, "3S", 3 * time.Second},
		{"allow/client-longer", allow, "60S", limit},
		{"deny/no-client-timeout", deny, "", limit},
		{"deny/client-shorter", deny, "3000m", 3 * time.Second},
		{"deny/client-longer", deny, "60S", 60 * time.Second},
		{"zero/client", zero, "5000000u", 5 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			id := testclient.NewID(t)
			observe.Record(t, "client-grpc-timeout", tc.client)
			r := g.rawCall(t, grpcGiveUpAfter(0), tc.authority, "Unary", tc.client, echowire.IDMetadata, id)
			r.record(t)
			if !r.ok() {
				t.Fatalf("HTTP %d, grpc-status %s %q (body: %v); want OK from a call the backend answers at once",
					r.status, grpcCodeName(r.grpcStatus()), r.grpcMessage(), r.bodyErr)
			}
			e, ok := testclient.GRPCLedger(t, ledger, id)
			if !ok || len(e.GetAttempts()) != 1 {
				t.Fatalf("the backend's ledger of %s: %v; want one attempt", id, e)
			}
			got := e.GetAttempts()[0].GetHeaders()["grpc-timeout"].GetValues()
			observe.Record(t, "upstream-grpc-timeout", got)
			lo := tc.want - TimingTolerance()
			if len(got) != 1 {
				t.Fatalf("the backend received grpc-timeout %q; want one value within [%v, %v]", got, lo, tc.want)
			}
			d, err := grpctimeout.Parse(got[0])
			if err != nil {
				t.Fatalf("the backend received a malformed grpc-timeout: %v", err)
			}
			if d > tc.want || d < lo {
				t.Errorf("the backend received grpc-timeout %s (%v); want within [%v, %v]: the call's bound is %v",
					got[0], d, lo, tc.want, tc.want)
			}
		})
	}
}
