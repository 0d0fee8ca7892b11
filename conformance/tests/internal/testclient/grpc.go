package testclient

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/gatewitness/gatewitness/echo-backend/echopb"
)

// GRPCNoResend are the dial options of a gRPC client that never sends a
// call again by itself, so that every attempt a gateway or backend sees,
// and every end a test times, is the call's own. grpc-go resends a call
// "transparently", whatever its retry policy, when the server refuses its
// stream (RST_STREAM REFUSED_STREAM) or leaves it out of a GOAWAY;
// grpc.WithDisableRetry stops only policy retries (its doc says so).
// A call it has committed to is never resent, and it commits once the
// call's buffered request exceeds MaxRetryRPCBufferSize: with 0, as soon as
// the first message is sent. A refusal that comes before that (in the
// microseconds between opening the stream and sending the first message)
// may still be resent once; internal/rawgrpc's calls have no such window.
func GRPCNoResend() []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithDisableRetry(),
		grpc.WithDefaultCallOptions(grpc.MaxRetryRPCBufferSize(0)),
	}
}

// GRPCLedger reads the backend's ledger of request id through cc (the
// echo-backend's Admin.GetLedger, routed to the same single replica as the
// calls). ok is false when the backend has no entry for id; any other
// error fails t.
func GRPCLedger(t testing.TB, cc *grpc.ClientConn, id string) (e *echopb.LedgerEntry, ok bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	e, err := echopb.NewAdminClient(cc).GetLedger(ctx, &echopb.GetLedgerRequest{Id: id})
	if status.Code(err) == codes.NotFound {
		return nil, false
	}
	if err != nil {
		t.Fatalf("reading the backend's ledger of %s through the Gateway: %v", id, err)
	}
	return e, true
}
