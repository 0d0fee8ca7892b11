package tests

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"sigs.k8s.io/gateway-api/conformance/utils/suite"
	gwfeatures "sigs.k8s.io/gateway-api/pkg/features"

	"github.com/gatewitness/gatewitness/conformance/tests/internal/testclient"
	"github.com/gatewitness/gatewitness/contract/echowire"
	"github.com/gatewitness/gatewitness/contract/observe"
	"github.com/gatewitness/gatewitness/echo-backend/echopb"
	"github.com/gatewitness/gatewitness/features"
)

// FaultFidelityGRPCFailure checks that a gRPC call whose backend stream
// fails after it started ends with a non-OK status: a unary call whose
// backend resets its stream right after the response headers, a server
// stream and a bidirectional stream reset after their first message. gRPC
// has no other way to tell a complete call from a cut one than its status
// (the gRPC HTTP/2 protocol: a call ends with grpc-status in trailers; a
// reset stream is a failed call), so an OK would tell the client that a
// stream cut short was complete. Any non-OK code passes: INTERNAL,
// UNAVAILABLE (what gRPC clients make of a reset stream) and the rest.
// Each call must reach the backend once (GRPCRoutes have no retries here).
var FaultFidelityGRPCFailure = suite.ConformanceTest{
	ShortName:   "FaultFidelityGRPCFailure",
	Description: "A gRPC call whose backend resets its stream after the response headers or a first message ends with a non-OK status, never OK.",
	Features: []features.FeatureName{
		gwfeatures.SupportGateway,
		gwfeatures.SupportGRPCRoute,
		features.SupportFaultFidelityTruncation,
	},
	Manifests: []string{ManifestPrefix + "fault-fidelity-grpc-failure.yaml"},
	Parallel:  true,
	Test:      testFaultFidelityGRPCFailure,
}

func testFaultFidelityGRPCFailure(t *testing.T, s *suite.ConformanceTestSuite) {
	const host = "fault-fidelity-grpc-failure.gatewitness.test"
	g := newGRPCTarget(t, s, "fault-fidelity-grpc-failure")
	cc := g.conn(t, host)
	g.waitReady(t, cc)
	client := echopb.NewEchoClient(cc)
	calls := []struct {
		name, spec string
		call       func(*testing.T, echopb.EchoClient, string, string) grpcKindResult
	}{
		{"unary/after-headers", "reset=after-headers", grpcUnaryCall},
		{"server-stream/mid-stream", "messages=3;reset=mid-body", grpcServerStreamCall},
		{"bidi-stream/mid-stream", "reset=mid-body", grpcBidiCall},
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			id := testclient.NewID(t)
			r := c.call(t, client, id, c.spec)
			r.record(t)
			switch {
			case r.gaveUp:
				t.Errorf("the call had not ended after %v, when the test gave up; want a non-OK status at once", r.elapsed.Round(time.Millisecond))
			case r.err == nil:
				t.Errorf("the call ended OK after %d messages; the backend reset its stream: want a non-OK status", r.messages)
			}
			a := grpcWaitAttemptEnded(t, cc, id, ffGiveUp())
			observe.Record(t, "backend-outcome", a.GetOutcome())
		})
	}
}

// ffCallMetadata are the metadata pairs of a call with request id id and
// the backend fault spec.
func ffCallMetadata(id, spec string) []string {
	md := []string{echowire.IDMetadata, id}
	if spec != "" {
		md = append(md, echowire.FaultMetadata, spec)
	}
	return md
}

// grpcUnaryCall makes one unary call.
func grpcUnaryCall(t *testing.T, client echopb.EchoClient, id, spec string) grpcKindResult {
	return ffCall(t, id, spec, func(ctx context.Context) (int, error) {
		if _, err := client.Unary(ctx, &echopb.EchoRequest{}); err != nil {
			return 0, err
		}
		return 1, nil
	})
}

// grpcServerStreamCall reads a server stream to its end.
func grpcServerStreamCall(t *testing.T, client echopb.EchoClient, id, spec string) grpcKindResult {
	return ffCall(t, id, spec, func(ctx context.Context) (int, error) { return grpcRecvAll(ctx, client) })
}

// grpcBidiCall sends one message, half-closes and reads the stream to its
// end.
func grpcBidiCall(t *testing.T, client echopb.EchoClient, id, spec string) grpcKindResult {
	return ffCall(t, id, spec, func(ctx context.Context) (int, error) {
		stream, err := client.BidiStream(ctx)
		if err != nil {
			return 0, err
		}
		if err := stream.Send(&echopb.EchoRequest{Payload: []byte("one")}); err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		if err := stream.CloseSend(); err != nil {
			return 0, err
		}
		return grpcRecvRest(stream)
	})
}

// ffCall runs call with request id id and the fault spec, under the
// test's bound ffGiveUp, and reports how it ended.
func ffCall(t *testing.T, id, spec string, call func(context.Context) (int, error)) grpcKindResult {
	ctx := grpcCallContext(t, ffGiveUp(), ffCallMetadata(id, spec)...)
	start := time.Now()
	var r grpcKindResult
	r.messages, r.err = call(ctx)
	r.elapsed, r.gaveUp = time.Since(start), ctx.Err() != nil
	return r
}
