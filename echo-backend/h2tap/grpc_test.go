package h2tap_test

import (
	"context"
	"crypto/tls"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/gatewitness/gatewitness/echo-backend/h2tap"
	"github.com/gatewitness/gatewitness/internal/grpctimeout"
)

// healthServer's Check resets its own stream when the requested service is
// "cancel" or "refuse", and otherwise answers with the tap's headers as
// response header metadata.
type healthServer struct {
	healthpb.UnimplementedHealthServer
	t     *testing.T
	calls atomic.Int32
}

func (s *healthServer) Check(ctx context.Context, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	s.calls.Add(1)
	md, _ := metadata.FromIncomingContext(ctx)
	tags := md.Get(h2tap.StreamHeader)
	var code http2.ErrCode
	switch req.Service {
	case "cancel":
		code = http2.ErrCodeCancel
	case "refuse":
		code = http2.ErrCodeRefusedStream
	default:
		grpc.SetHeader(ctx, metadata.Pairs(
			"x-tags", strings.Join(tags, ","),
			"x-timeouts", strings.Join(md.Get(h2tap.GRPCTimeoutHeader), ","),
		))
		return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
	}
	if len(tags) != 1 {
		return nil, status.Errorf(codes.FailedPrecondition, "tags %q, want one", tags)
	}
	connID, streamID, ok := h2tap.ParseStreamHeader(tags[0])
	c, found := h2tap.Lookup(connID)
	if !ok || !found {
		return nil, status.Errorf(codes.FailedPrecondition, "tag %q: parsed %v, found %v", tags[0], ok, found)
	}
	if err := c.ResetStream(streamID, uint32(code)); err != nil {
		s.t.Errorf("ResetStream: %v", err)
	}
	return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
}

// serveGRPC serves healthServer with creds wrapped by h2tap.Credentials.
func serveGRPC(t *testing.T, creds credentials.TransportCredentials) (string, *healthServer) {
	t.Helper()
	ln := listen(t)
	hs := &healthServer{t: t}
	srv := grpc.NewServer(grpc.Creds(h2tap.Credentials(creds)))
	healthpb.RegisterHealthServer(srv, hs)
	go srv.Serve(ln)
	t.Cleanup(srv.Stop)
	return ln.Addr().String(), hs
}

func dialGRPC(t *testing.T, addr string, creds credentials.TransportCredentials) healthpb.HealthClient {
	t.Helper()
	cc, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		t.Fatalf("grpc.NewClient: %v", err)
	}
	t.Cleanup(func() { cc.Close() })
	return healthpb.NewHealthClient(cc)
}

// check calls Check and returns the response header metadata.
func check(t *testing.T, client healthpb.HealthClient, ctx context.Context, service string) (metadata.MD, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, testTimeout)
	defer cancel()
	var hdr metadata.MD
	_, err := client.Check(ctx, &healthpb.HealthCheckRequest{Service: service}, grpc.Header(&hdr))
	return hdr, err
}

func TestGRPC(t *testing.T) {
	cert, roots := testCert(t)
	for _, tc := range []struct {
		name         string
		server, dial credentials.TransportCredentials
	}{
		{"plaintext", insecure.NewCredentials(), insecure.NewCredentials()},
		{"tls",
			credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{cert}}),
			credentials.NewTLS(&tls.Config{RootCAs: roots, ServerName: "localhost"})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr, hs := serveGRPC(t, tc.server)
			client := dialGRPC(t, addr, tc.dial)
			testGRPC(t, client, hs)
		})
	}
}

func testGRPC(t *testing.T, client healthpb.HealthClient, hs *healthServer) {
	// A spoofed tag is replaced; stream ids grow on the one connection.
	ctx := metadata.AppendToOutgoingContext(context.Background(), h2tap.StreamHeader, "999/1")
	hdr, err := check(t, client, ctx, "")
	if err != nil {
		t.Fatalf("first call: %v", err)
	}
	first := hdr.Get("x-tags")
	if len(first) != 1 {
		t.Fatalf("x-tags %q, want one value", first)
	}
	connID, stream1, ok := h2tap.ParseStreamHeader(first[0])
	if !ok || connID == 999 {
		t.Fatalf("handler saw tag %q, want the tap's", first[0])
	}

	hs.calls.Store(0)
	_, err = check(t, client, context.Background(), "cancel")
	if got := status.Code(err); got != codes.Canceled {
		t.Errorf("RST_STREAM(CANCEL): got %v (%v), want Canceled", got, err)
	}
	if n := hs.calls.Load(); n != 1 {
		t.Errorf("RST_STREAM(CANCEL): handler ran %d times, want 1", n)
	}

	hs.calls.Store(0)
	_, err = check(t, client, context.Background(), "refuse")
	if got := status.Code(err); got != codes.Unavailable {
		t.Errorf("RST_STREAM(REFUSED_STREAM): got %v (%v), want Unavailable", got, err)
	}
	// grpc-go retries a refused stream once, transparently.
	if n := hs.calls.Load(); n != 2 {
		t.Errorf("RST_STREAM(REFUSED_STREAM): handler ran %d times, want 2 (a transparent retry)", n)
	}

	hdr, err = check(t, client, context.Background(), "")
	if err != nil {
		t.Fatalf("call after the resets: %v", err)
	}
	last := strings.Join(hdr.Get("x-tags"), ",")
	c2, stream2, ok := h2tap.ParseStreamHeader(last)
	if !ok || c2 != connID || stream2 != stream1+8 {
		t.Errorf("call after the resets has tag %q, want %d/%d (same connection, four streams later)", last, connID, stream1+8)
	}
}

func TestGRPCTimeoutHeader(t *testing.T) {
	addr, _ := serveGRPC(t, insecure.NewCredentials())
	client := dialGRPC(t, addr, insecure.NewCredentials())

	ctx := metadata.AppendToOutgoingContext(context.Background(), h2tap.GRPCTimeoutHeader, "1S")
	ctx, cancel := context.WithTimeout(ctx, 7*time.Second)
	defer cancel()
	hdr, err := check(t, client, ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	got := hdr.Get("x-timeouts")
	if len(got) != 1 {
		t.Fatalf("handler saw %s values %q, want one", h2tap.GRPCTimeoutHeader, got)
	}
	d, err := grpctimeout.Parse(got[0])
	if err != nil {
		t.Fatalf("%s: %v", h2tap.GRPCTimeoutHeader, err)
	}
	// The client sends what is left of its 7 s deadline.
	if d <= 0 || d > 7*time.Second {
		t.Errorf("%s %q = %v, want in (0, 7s]", h2tap.GRPCTimeoutHeader, got[0], d)
	}

	// Without a deadline there is no grpc-timeout, so the spoofed copy is
	// removed and none is added. (Cancelled by a timer, not a deadline.)
	ctx, cancel = context.WithCancel(metadata.AppendToOutgoingContext(context.Background(), h2tap.GRPCTimeoutHeader, "1S"))
	defer cancel()
	stop := time.AfterFunc(testTimeout, cancel)
	defer stop.Stop()
	hdr = nil
	if _, err := client.Check(ctx, &healthpb.HealthCheckRequest{}, grpc.Header(&hdr)); err != nil {
		t.Fatal(err)
	}
	if v := hdr.Get("x-timeouts"); len(v) != 1 || v[0] != "" {
		t.Errorf("without a deadline the handler saw %s %q, want none", h2tap.GRPCTimeoutHeader, v)
	}
}
