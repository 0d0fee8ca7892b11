package grpcecho_test

import (
	"context"
	"fmt"
	"testing"

	"google.golang.org/grpc/credentials/insecure"

	"github.com/gatewitness/gatewitness/echo-backend/control"
	"github.com/gatewitness/gatewitness/echo-backend/echopb"
	"github.com/gatewitness/gatewitness/echo-backend/grpcecho"
	"github.com/gatewitness/gatewitness/echo-backend/ledger"
	"github.com/gatewitness/gatewitness/echo-backend/podinfo"
)

// BenchmarkUnary measures a recorded unary echo over loopback plaintext,
// each call under its own request id.
func BenchmarkUnary(b *testing.B) {
	l := ledger.New(ledger.Options{})
	defer l.Close()
	gs := grpcecho.NewServer(grpcecho.Options{Pod: podinfo.Info{Pod: "bench"}, Ledger: l, Controls: control.New(), Listener: "grpc"})
	ln := listen(b)
	go gs.Serve(ln)
	defer gs.Stop()
	echo := echopb.NewEchoClient(dial(b, ln.Addr().String(), insecure.NewCredentials()))
	req := &echopb.EchoRequest{Payload: make([]byte, 256)}
	i := 0
	for b.Loop() {
		i++
		if _, err := echo.Unary(withFault(context.Background(), fmt.Sprint("bench-", i), ""), req); err != nil {
			b.Fatalf("Unary: %v", err)
		}
	}
}
