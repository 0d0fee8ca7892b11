package tests

import (
	"fmt"
	"testing"
	"time"

	"sigs.k8s.io/gateway-api/conformance/utils/suite"
	gwfeatures "sigs.k8s.io/gateway-api/pkg/features"

	"github.com/gatewitness/gatewitness/conformance/tests/internal/testclient"
	"github.com/gatewitness/gatewitness/contract/observe"
	"github.com/gatewitness/gatewitness/features"
)

// maxStreamDurationLimit is the maxStreamDuration of the limited route in
// gatewitness/grpcroute-max-stream-duration.yaml.
const maxStreamDurationLimit = 2 * time.Second

// GRPCRouteMaxStreamDuration checks the portable part of GEP-3139's
// timeouts.maxStreamDuration: every kind of call that outlasts the limit
// (unary, server stream, client stream, bidirectional stream) ends with a
// non-OK status, not before the limit and within the timing tolerance
// after it; a server stream that keeps sending messages is cut all the
// same; calls inside the limit succeed; and 0s lets a call run past the
// limit to its end. Which status, and in which form, is the finer
// GRPCRouteMaxStreamDurationDeadlineExceeded's business.
var GRPCRouteMaxStreamDuration = suite.ConformanceTest{
	ShortName:   "GRPCRouteMaxStreamDuration",
	Description: "A GRPCRoute rule's timeouts.maxStreamDuration ends unary and streaming calls that outlast it with a non-OK status at the limit; calls inside it succeed; 0s sets no limit",
	Features: []features.FeatureName{
		gwfeatures.SupportGateway,
		gwfeatures.SupportGRPCRoute,
		features.SupportGRPCRouteMaxStreamDuration,
	},
	Manifests: []string{ManifestPrefix + "grpcroute-max-stream-duration.yaml"},
	Parallel:  true,
	Test:      testGRPCRouteMaxStreamDuration,
}

func testGRPCRouteMaxStreamDuration(t *testing.T, s *suite.ConformanceTestSuite) {
	const (
		limited   = "max-stream-duration.grpc.gatewitness.example"
		unlimited = "zero.max-stream-duration.grpc.gatewitness.example"
	)
	g := newGRPCTarget(t, s, "grpcroute-max-stream-duration", "grpcroute-max-stream-duration-zero")
	limitedConn := g.conn(t, limited)
	unlimitedConn := g.conn(t, unlimited)
	g.waitReady(t, limitedConn)
	g.waitReady(t, unlimitedConn)
	measure(t)
	limit := maxStreamDurationLimit

	for _, kind := range grpcCallKinds {
		t.Run("outlasts-limit/"+kind, func(t *testing.T) {
			t.Parallel()
			r := grpcRunKind(t, limitedConn, kind, testclient.NewID(t), grpcOutlastFault[kind], grpcGiveUpAfter(limit))
			grpcWantCut(t, r, limit)
			if kind == "server-stream" && r.messages == 0 && !r.gaveUp {
				t.Errorf("no message of the server stream reached the client before the cut; the backend sends one every 50ms, so the cut did not end a stream that was sending")
			}
		})
	}

	// Calls well inside the limit end normally.
	inside := []struct{ kind, fault string }{
		{"unary", ""},
		{"server-stream", "messages=3,interval=100ms"},
	}
	for _, c := range inside {
		t.Run("inside-limit/"+c.kind, func(t *testing.T) {
			t.Parallel()
			r := grpcRunKind(t, limitedConn, c.kind, testclient.NewID(t), c.fault, grpcGiveUpAfter(limit))
			r.record(t)
			if r.err != nil {
				t.Errorf("a call that needs far less than the %v limit ended with %v after %v; want OK", limit, r.err, r.elapsed.Round(time.Millisecond))
			}
			if c.kind == "server-stream" && r.messages != 3 {
				t.Errorf("server stream: %d messages, want all 3", r.messages)
			}
		})
	}

	// With 0s the same calls run past the other route's limit (and its
	// tolerance) to their end.
	long := limit + TimingTolerance() + time.Second
	const interval = 100 * time.Millisecond
	n := int((long + interval - 1) / interval)
	zero := []struct{ kind, fault string }{
		{"unary", fmt.Sprintf("delay=%v", long)},
		{"server-stream", fmt.Sprintf("messages=%d,interval=%v", n, interval)},
	}
	for _, c := range zero {
		t.Run("zero-no-limit/"+c.kind, func(t *testing.T) {
			t.Parallel()
			r := grpcRunKind(t, unlimitedConn, c.kind, testclient.NewID(t), c.fault, grpcGiveUpAfter(long))
			r.record(t)
			if r.err != nil {
				t.Errorf("maxStreamDuration 0s: a call of about %v ended with %v after %v; want OK: 0s sets no limit", long, r.err, r.elapsed.Round(time.Millisecond))
			}
			if c.kind == "server-stream" && r.messages != n {
				t.Errorf("server stream: %d messages, want all %d", r.messages, n)
			}
			observe.Record(t, "call-length", long)
		})
	}
}
