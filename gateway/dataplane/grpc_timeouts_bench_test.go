package dataplane_test

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/gatewitness/gatewitness/echo-backend/echopb"
	"github.com/gatewitness/gatewitness/gateway/dataplane/dataplanetest"
)

// BenchmarkGRPCBudget measures one call through the data plane to the
// echo-backend, without a budget and with one (the rule's limit, or the
// client's deadline), so the cost of the deadline, the grpc-timeout rewrite
// and the whole-message relay shows against the plain path.
func BenchmarkGRPCBudget(b *testing.B) {
	eb := startGRPCEcho(b)
	addr := grpcTimeoutGateway(b, dataplanetest.Hooks{}, standardRules(eb)...)
	conn, err := grpc.NewClient("passthrough:///"+addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithAuthority("grpc.example.com"))
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	client := echopb.NewEchoClient(conn)
	unary := func(rule string, clientDeadline bool) func(b *testing.B) {
		return func(b *testing.B) {
			ctx := metadata.AppendToOutgoingContext(context.Background(), "x-rule", rule)
			if clientDeadline {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, time.Hour)
				defer cancel()
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := client.Unary(ctx, &echopb.EchoRequest{Payload: []byte("ping")}); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	b.Run("unary/no-budget", unary("zero", false))
	b.Run("unary/route-limit", unary("allow-10s", false))
	b.Run("unary/route-and-client", unary("allow-10s", true))
	b.Run("server-stream-100/route-limit", func(b *testing.B) {
		ctx := metadata.AppendToOutgoingContext(context.Background(), "x-rule", "allow-10s")
		b.ReportAllocs()
		for b.Loop() {
			stream, err := client.ServerStream(ctx, &echopb.EchoRequest{Messages: 100})
			if err != nil {
				b.Fatal(err)
			}
			n := 0
			for {
				_, err := stream.Recv()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					b.Fatal(err)
				}
				n++
			}
			if n != 100 {
				b.Fatalf("%d messages, want 100", n)
			}
		}
	})
}
