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
