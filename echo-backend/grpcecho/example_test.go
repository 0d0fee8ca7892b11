package grpcecho_test

import (
	"context"
	"fmt"
	"net"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/gatewitness/gatewitness/contract/echowire"
	"github.com/gatewitness/gatewitness/echo-backend/control"
	"github.com/gatewitness/gatewitness/echo-backend/echopb"
	"github.com/gatewitness/gatewitness/echo-backend/grpcecho"
	"github.com/gatewitness/gatewitness/echo-backend/ledger"
)

// A call carries its request id and fault spec in metadata; Admin.GetLedger
// reads the id's attempts back. Here the first two attempts end with
// UNAVAILABLE and a trailer, and the third is echoed.
func ExampleNewServer() {
	l := ledger.New(ledger.Options{})
	defer l.Close()
	gs := grpcecho.NewServer(grpcecho.Options{Ledger: l, Controls: control.New(), Listener: "grpc"})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	go gs.Serve(ln)
	defer gs.Stop()

	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	callCtx := metadata.AppendToOutgoingContext(ctx,
		"x-gatewitness-id", "example-1",
		"x-gatewitness-fault", "fail=2;grpc-status=UNAVAILABLE;grpc-message=try later;trailer=x-backend:b1")
	for range 3 {
		var trailer metadata.MD
		resp, err := echopb.NewEchoClient(conn).Unary(callCtx, &echopb.EchoRequest{Payload: []byte("hi")}, grpc.Trailer(&trailer))
		if err != nil {
			st := status.Convert(err)
			fmt.Printf("%v %q x-backend=%v x-gatewitness-attempt=%v\n", st.Code(), st.Message(), trailer["x-backend"], trailer["x-gatewitness-attempt"])
			continue
		}
		fmt.Printf("OK requestId=%s attempt=%d payload=%s x-gatewitness-attempt=%v\n",
			resp.GetRequestId(), resp.GetAttempt(), resp.GetPayload(), trailer["x-gatewitness-attempt"])
	}

	e, err := echopb.NewAdminClient(conn).GetLedger(ctx, &echopb.GetLedgerRequest{Id: "example-1"})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, a := range e.GetAttempts() {
		fmt.Printf("attempt %d: %s grpcCode=%s outcome=%s fault=%q\n", a.GetNumber(), a.GetMethod(), a.GetGrpcCode(), a.GetOutcome(), a.GetFault())
	}
	// Output:
	// Unavailable "try later" x-backend=[b1] x-gatewitness-attempt=[1]
	// Unavailable "try later" x-backend=[b1] x-gatewitness-attempt=[2]
	// OK requestId=example-1 attempt=3 payload=hi x-gatewitness-attempt=[3]
	// attempt 1: /gatewitness.echo.v1.Echo/Unary grpcCode=UNAVAILABLE outcome=answered fault="grpc-status=UNAVAILABLE;trailer=x-backend:b1;grpc-message=try later"
	// attempt 2: /gatewitness.echo.v1.Echo/Unary grpcCode=UNAVAILABLE outcome=answered fault="grpc-status=UNAVAILABLE;trailer=x-backend:b1;grpc-message=try later"
	// attempt 3: /gatewitness.echo.v1.Echo/Unary grpcCode=OK outcome=answered fault=""
}

// grpc-go retries a call refused by GOAWAY once, on a new connection, without
// the application seeing it: the ledger shows both attempts.
func ExampleNewServer_goAwayTransparentRetry() {
	l := ledger.New(ledger.Options{})
	defer l.Close()
	gs := grpcecho.NewServer(grpcecho.Options{Ledger: l, Controls: control.New(), Listener: "grpc"})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	go gs.Serve(ln)
	defer gs.Stop()

	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	callCtx := metadata.AppendToOutgoingContext(ctx, "x-gatewitness-id", "example-2", "x-gatewitness-fault", "goaway;fail=1")
	resp, err := echopb.NewEchoClient(conn).Unary(callCtx, &echopb.EchoRequest{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("call succeeded with attempt %d\n", resp.GetAttempt())
	// The first attempt's outcome is recorded when its GOAWAY has been
	// written, which can be after the retry was answered: poll the ledger
	// until no attempt is in flight (within the call's deadline).
	e, _ := l.Get("example-2")
	for tick := time.NewTicker(5 * time.Millisecond); anyInFlight(e) && ctx.Err() == nil; <-tick.C {
		e, _ = l.Get("example-2")
	}
	for _, a := range e.Attempts {
		fmt.Printf("attempt %d: %s on stream %d\n", a.Number, a.Outcome, a.Stream)
	}
	// Output:
	// call succeeded with attempt 2
	// attempt 1: goaway on stream 1
	// attempt 2: answered on stream 1
}

// anyInFlight reports whether an attempt of e has not ended yet.
func anyInFlight(e echowire.Entry) bool {
	for _, a := range e.Attempts {
		if a.Outcome == echowire.InFlight {
			return true
		}
	}
	return false
}
