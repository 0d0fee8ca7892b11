package grpcecho_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/gatewitness/gatewitness/contract/echowire"
	"github.com/gatewitness/gatewitness/echo-backend/echopb"
	"github.com/gatewitness/gatewitness/internal/rawgrpc"
)

// TestDeadlineAnswerIsAlwaysTheStatus calls each kind of call that
// outlasts its grpc-timeout many times, from a client that does not
// enforce the deadline, and wants the same answer from every one, read
// frame by frame: DEADLINE_EXCEEDED with END_STREAM, never a bare
// RST_STREAM (grpc-go's own deadline raced its handler's status with a
// reset, CANCEL, of its transport's timer). Before any message the status
// is trailers-only; after one, in trailers. A client stream whose client
// keeps its side open is answered the same.
func TestDeadlineAnswerIsAlwaysTheStatus(t *testing.T) {
	b := startBackend(t, false)
	msg, err := proto.Marshal(&echopb.EchoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	const timeout = 100 * time.Millisecond
	cases := []struct {
		name, method, fault    string
		keepOpen, afterHeaders bool
	}{
		{"unary", "Unary", "delay=10s", false, false},
		{"server-stream", "ServerStream", "messages=50,interval=50ms", false, true},
		{"client-stream-open", "ClientStream", "", true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for i := range 20 {
				ctx, cancel := context.WithTimeout(context.Background(), tolerance)
				md := []string{echowire.IDMetadata, t.Name()}
				if tc.fault != "" {
					md = append(md, echowire.FaultMetadata, tc.fault)
				}
				start := time.Now()
				r, err := rawgrpc.Call(ctx, (&net.Dialer{}).DialContext, rawgrpc.Request{
					URL: "http://" + b.addr + "/gatewitness.echo.v1.Echo/" + tc.method, Timeout: "100m",
					Metadata: md, Messages: [][]byte{msg}, KeepOpen: tc.keepOpen,
				})
				took := time.Since(start)
				cancel()
				if err != nil {
					t.Fatal(err)
				}
				if r.End != rawgrpc.EndStream || r.GRPCStatus() != "4" || r.TrailersOnly() == tc.afterHeaders {
					t.Fatalf("call %d: stream ended with %s, grpc-status %s (trailers-only %t) after %v; want END_STREAM with DEADLINE_EXCEEDED, trailers-only %t",
						i, r.End, rawgrpc.CodeName(r.GRPCStatus()), r.TrailersOnly(), took, !tc.afterHeaders)
				}
				if took < timeout || took > timeout+tolerance {
					t.Fatalf("call %d ended after %v; want within [%v, %v]", i, took, timeout, timeout+tolerance)
				}
			}
		})
	}
}

// TestMalformedTimeoutIsInternal: a grpc-timeout that is not 1 to 8 digits
// and a unit is answered INTERNAL, as grpc-go answers it, naming the header.
func TestMalformedTimeoutIsInternal(t *testing.T) {
	b := startBackend(t, false)
	ctx, cancel := context.WithTimeout(context.Background(), tolerance)
	defer cancel()
	r, err := rawgrpc.Call(ctx, (&net.Dialer{}).DialContext, rawgrpc.Request{
		URL: "http://" + b.addr + "/gatewitness.echo.v1.Echo/Unary", Timeout: "1x", Messages: [][]byte{nil},
	})
	if err != nil {
		t.Fatal(err)
	}
	if r.GRPCStatus() != "13" || !strings.Contains(r.GRPCMessage(), "grpc-timeout") {
		t.Errorf("grpc-status %s %q; want INTERNAL naming grpc-timeout", rawgrpc.CodeName(r.GRPCStatus()), r.GRPCMessage())
	}
}
