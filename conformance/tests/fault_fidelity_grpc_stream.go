package tests

import (
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"google.golang.org/grpc"
	"sigs.k8s.io/gateway-api/conformance/utils/suite"
	gwfeatures "sigs.k8s.io/gateway-api/pkg/features"

	"github.com/gatewitness/gatewitness/conformance/tests/internal/testclient"
	"github.com/gatewitness/gatewitness/contract/observe"
	"github.com/gatewitness/gatewitness/echo-backend/echopb"
	"github.com/gatewitness/gatewitness/features"
)

// ffFirstPayload is the payload of a client stream's first message; the
// backend's ledger counts its bytes as they arrive.
var ffFirstPayload = []byte("first message")

// FaultFidelityGRPCStreaming checks that gRPC streams pass through the
// Gateway as they flow, in both directions:
//
//   - a server stream of ffStreamChunks messages, one interval (the
//     timing tolerance) apart: message i reaches the client no later than
//     i intervals plus the tolerance after the call started;
//   - a client stream: its first message reaches the backend (the
//     backend's ledger, read through the Gateway, counts its bytes) within
//     the tolerance of being sent, while the client still holds the stream
//     open; the call then completes OK once the client half-closes;
//   - a bidirectional stream: the backend's echo of the first message
//     reaches the client within the tolerance, before the client
//     half-closes.
//
// A Gateway that holds a stream until its end fails each at any
// tolerance: the server stream's first message comes two intervals late,
// and a request stream held until the client half-closes never arrives
// while the client waits.
var FaultFidelityGRPCStreaming = suite.ConformanceTest{
	ShortName:   "FaultFidelityGRPCStreaming",
	Description: "A gRPC server stream's messages reach the client, and a client or bidirectional stream's first message reaches the backend before the client half-closes, each within the timing tolerance of being sent.",
	Features: []features.FeatureName{
		gwfeatures.SupportGateway,
		gwfeatures.SupportGRPCRoute,
		features.SupportFaultFidelityStreaming,
	},
	Manifests: []string{ManifestPrefix + "fault-fidelity-grpc-stream.yaml"},
	Parallel:  true,
	Test:      testFaultFidelityGRPCStreaming,
}

func testFaultFidelityGRPCStreaming(t *testing.T, s *suite.ConformanceTestSuite) {
	const host = "fault-fidelity-grpc-stream.gatewitness.test"
	g := newGRPCTarget(t, s, "fault-fidelity-grpc-stream")
	cc := g.conn(t, host)
	g.waitReady(t, cc)
	measure(t) // from here the messages' arrival is timed: no route changes while it is
	client := echopb.NewEchoClient(cc)
	tol := TimingTolerance()

	t.Run("server-stream", func(t *testing.T) {
		t.Parallel()
		d := ffStreamInterval()
		spec := fmt.Sprintf("messages=%d;interval=%v", ffStreamChunks, d)
		ctx := grpcCallContext(t, ffStreamChunks*d+ffGiveUp(), ffCallMetadata(testclient.NewID(t), spec)...)
		start := time.Now()
		stream, err := client.ServerStream(ctx, &echopb.EchoRequest{})
		if err != nil {
			t.Fatalf("ServerStream: %v", err)
		}
		var arrived []time.Duration
		for {
			if _, err := stream.Recv(); err != nil {
				if !errors.Is(err, io.EOF) {
					t.Fatalf("after %d messages: %v; want %d messages and OK", len(arrived), err, ffStreamChunks)
				}
				break
			}
			arrived = append(arrived, time.Since(start))
		}
		if len(arrived) != ffStreamChunks {
			t.Fatalf("%d messages; want the backend's %d", len(arrived), ffStreamChunks)
		}
		for i, at := range arrived {
			bound := time.Duration(i)*d + tol
			observe.Record(t, fmt.Sprintf("message-%d", i+1), observe.Within(at, time.Duration(i)*d, 0, bound))
			if at > bound {
				t.Errorf("message %d of %d arrived %v after the call started; want by %v: the backend sent it %v after the call, and the tolerance is %v",
					i+1, ffStreamChunks, at.Round(time.Millisecond), bound, time.Duration(i)*d, tol)
			}
		}
	})

	t.Run("client-stream", func(t *testing.T) {
		t.Parallel()
		id := testclient.NewID(t)
		ctx := grpcCallContext(t, tol+ffGiveUp(), ffCallMetadata(id, "")...)
		stream, err := client.ClientStream(ctx)
		if err != nil {
			t.Fatalf("ClientStream: %v", err)
		}
		sent := time.Now()
		if err := stream.Send(&echopb.EchoRequest{Payload: ffFirstPayload}); err != nil {
			t.Fatalf("sending the first message: %v", err)
		}
		seen, ok := ffAwaitBackendBytes(t, cc, id, int64(len(ffFirstPayload)), sent, tol)
		observe.Record(t, "backend-got-first-message", observe.Within(seen, 0, 0, tol))
		if !ok {
			t.Errorf("the backend had not got the first message %v after it was sent, with the client's stream still open; want it within the tolerance %v: the Gateway holds the request stream",
				seen.Round(time.Millisecond), tol)
		}
		if _, err := stream.CloseAndRecv(); err != nil {
			t.Errorf("after half-closing: %v; want the backend's answer and OK", err)
		}
	})

	t.Run("bidi-stream", func(t *testing.T) {
		t.Parallel()
		ctx := grpcCallContext(t, tol+ffGiveUp(), ffCallMetadata(testclient.NewID(t), "")...)
		stream, err := client.BidiStream(ctx)
		if err != nil {
			t.Fatalf("BidiStream: %v", err)
		}
		sent := time.Now()
		if err := stream.Send(&echopb.EchoRequest{Payload: ffFirstPayload}); err != nil {
			t.Fatalf("sending the first message: %v", err)
		}
		echoed := make(chan error, 1)
		go func() { _, err := stream.Recv(); echoed <- err }()
		timer := time.NewTimer(tol)
		defer timer.Stop()
		select {
		case err := <-echoed:
			took := time.Since(sent)
			observe.Record(t, "echo-of-first-message", observe.Within(took, 0, 0, tol))
			if err != nil {
				t.Fatalf("the echo of the first message: %v", err)
			}
			if took > tol {
				t.Errorf("the echo of the first message came %v after it was sent; want within the tolerance %v", took.Round(time.Millisecond), tol)
			}
			if err := stream.CloseSend(); err != nil {
				t.Fatalf("half-closing: %v", err)
			}
		case <-timer.C:
			observe.Record(t, "echo-of-first-message", "none within the tolerance")
			t.Errorf("no echo of the first message %v after it was sent, with the client's stream still open; want it within the tolerance: the Gateway holds the request stream (or the response)", tol)
			// Half-closing lets a Gateway that holds the stream send
			// it on; the test's bound ends the call otherwise.
			_ = stream.CloseSend()
			<-echoed
		}
		_, _ = grpcRecvRest(stream) // whatever it ends with
	})
}

// ffAwaitBackendBytes polls the backend's ledger of id, through cc, until
// its attempt has read at least n payload bytes, with reads that start at
// most within after sent. It returns when the read that saw the bytes
// started (or when the polling stopped), from sent, and whether it saw
// them.
func ffAwaitBackendBytes(t *testing.T, cc *grpc.ClientConn, id string, n int64, sent time.Time, within time.Duration) (time.Duration, bool) {
	t.Helper()
	var asked time.Duration
	seen := testclient.Poll(within-time.Since(sent), 20*time.Millisecond, func() bool {
		asked = time.Since(sent)
		if asked > within {
			return false
		}
		e, ok := testclient.GRPCLedger(t, cc, id)
		return ok && len(e.GetAttempts()) > 0 && e.GetAttempts()[0].GetBodyBytes() >= n
	})
	return asked, seen
}
