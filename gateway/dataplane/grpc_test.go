package dataplane_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gatewitness/gatewitness/gateway/dataplane"
	"github.com/gatewitness/gatewitness/gateway/ir"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// grpcBackend implements the grpc.testing.TestService: it names itself in
// the "x-backend" header metadata and the "x-trailer" trailer, and prefixes
// payloads with its name.
type grpcBackend struct {
	testpb.UnimplementedTestServiceServer
	name string
	addr string
}

func startGRPCBackend(t *testing.T, name string) *grpcBackend {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &grpcBackend{name: name, addr: ln.Addr().String()}
	srv := grpc.NewServer()
	testpb.RegisterTestServiceServer(srv, b)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	return b
}

func (b *grpcBackend) ref() ir.Backend {
	return ir.Backend{Name: "default/" + b.name + ":9000", Weight: 1, Endpoints: []string{b.addr}}
}

func (b *grpcBackend) mark(ctx context.Context) {
	_ = grpc.SetHeader(ctx, metadata.Pairs("x-backend", b.name))
	// Request metadata named x-req-* comes back as echo-x-req-*, so that
	// tests see what the gateway forwarded.
	md, _ := metadata.FromIncomingContext(ctx)
	for k, vs := range md {
		if strings.HasPrefix(k, "x-req-") {
			_ = grpc.SetHeader(ctx, metadata.Pairs("echo-"+k, strings.Join(vs, ",")))
		}
	}
	grpc.SetTrailer(ctx, metadata.Pairs("x-trailer", "t-"+b.name))
}

func (b *grpcBackend) payload(body []byte) *testpb.Payload {
	return &testpb.Payload{Body: append([]byte(b.name+":"), body...)}
}

func (b *grpcBackend) EmptyCall(ctx context.Context, _ *testpb.Empty) (*testpb.Empty, error) {
	b.mark(ctx)
	return &testpb.Empty{}, nil
}

func (b *grpcBackend) UnaryCall(ctx context.Context, req *testpb.SimpleRequest) (*testpb.SimpleResponse, error) {
	if s := req.GetResponseStatus(); s != nil {
		return nil, status.Error(codes.Code(s.Code), s.Message)
	}
	b.mark(ctx)
	return &testpb.SimpleResponse{Payload: b.payload(req.GetPayload().GetBody())}, nil
}

func (b *grpcBackend) StreamingOutputCall(req *testpb.StreamingOutputCallRequest, stream grpc.ServerStreamingServer[testpb.StreamingOutputCallResponse]) error {
	b.mark(stream.Context())
	for i := range req.GetResponseParameters() {
		if err := stream.Send(&testpb.StreamingOutputCallResponse{Payload: b.payload(fmt.Appendf(nil, "%d", i))}); err != nil {
			return err
		}
	}
	return nil
}

func (b *grpcBackend) StreamingInputCall(stream grpc.ClientStreamingServer[testpb.StreamingInputCallRequest, testpb.StreamingInputCallResponse]) error {
	b.mark(stream.Context())
	total := 0
	for {
		req, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return stream.SendAndClose(&testpb.StreamingInputCallResponse{AggregatedPayloadSize: int32(total)})
		}
		if err != nil {
			return err
		}
		total += len(req.GetPayload().GetBody())
	}
}

func (b *grpcBackend) FullDuplexCall(stream grpc.BidiStreamingServer[testpb.StreamingOutputCallRequest, testpb.StreamingOutputCallResponse]) error {
	b.mark(stream.Context())
	for {
		req, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := stream.Send(&testpb.StreamingOutputCallResponse{Payload: b.payload(req.GetPayload().GetBody())}); err != nil {
			return err
		}
	}
}

func dialGRPC(t *testing.T, addr, authority string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient("passthrough:///"+addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithAuthority(authority))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func grpcMatch(service, method string, headers ...string) gwv1.GRPCRouteMatch {
	m := gwv1.GRPCRouteMatch{Method: &gwv1.GRPCMethodMatch{}}
	if service != "" {
		m.Method.Service = ptr(service)
	}
	if method != "" {
		m.Method.Method = ptr(method)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		m.Headers = append(m.Headers, gwv1.GRPCHeaderMatch{Name: gwv1.GRPCHeaderName(headers[i]), Value: headers[i+1]})
	}
	return m
}

const testService = "grpc.testing.TestService"

// grpcGateway serves GRPCRoutes on grpc.example.com and an HTTPRoute on
// http.example.com from one listener.
func grpcGateway(t *testing.T) (addr string, backends map[string]*grpcBackend, httpBackend *testBackend) {
	t.Helper()
	gA, gB, gC := startGRPCBackend(t, "gA"), startGRPCBackend(t, "gB"), startGRPCBackend(t, "gC")
	hb := startBackend(t, "http")
	grule := func(m gwv1.GRPCRouteMatch, b ir.Backend) ir.GRPCRule {
		return ir.GRPCRule{Matches: []gwv1.GRPCRouteMatch{m}, Backends: grpcBackends(b)}
	}
	groute := ir.GRPCRoute{
		RouteMeta: ir.RouteMeta{Namespace: "default", Name: "grpc", Hostnames: []string{"grpc.example.com"}},
		Rules: []ir.GRPCRule{
			grule(grpcMatch(testService, ""), gB.ref()),
			grule(grpcMatch(testService, "UnaryCall"), gA.ref()),
			grule(grpcMatch(testService, "EmptyCall"), gA.ref()),
			grule(grpcMatch(testService, "EmptyCall", "x-version", "2"), gC.ref()),
		},
	}
	cfg := &ir.Config{Gateways: []ir.Gateway{{
		Namespace: "gw-ns", Name: "gw",
		Listeners: []ir.Listener{{
			Name: "http", Port: 80, Protocol: gwv1.HTTPProtocolType,
			GRPCRoutes: []ir.GRPCRoute{groute},
			HTTPRoutes: []ir.HTTPRoute{route("web", 0, []string{"http.example.com"}, rule(nil, hb.ref()))},
		}},
	}}}
	return mustAddr(t, startGateway(t, cfg), 80), map[string]*grpcBackend{"gA": gA, "gB": gB, "gC": gC}, hb
}

func TestGRPCRouting(t *testing.T) {
	addr, _, _ := grpcGateway(t)
	client := testpb.NewTestServiceClient(dialGRPC(t, addr, "grpc.example.com"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	tests := []struct {
		name string
		call func(opts ...grpc.CallOption) error
		want string
	}{
		{"service and method", func(opts ...grpc.CallOption) error {
			_, err := client.UnaryCall(ctx, &testpb.SimpleRequest{}, opts...)
			return err
		}, "gA"},
		{"service only", func(opts ...grpc.CallOption) error {
			stream, err := client.StreamingOutputCall(ctx, &testpb.StreamingOutputCallRequest{}, opts...)
			if err != nil {
				return err
			}
			_, err = stream.Recv() // the header metadata is set once the stream has it
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}, "gB"},
		{"no header", func(opts ...grpc.CallOption) error {
			_, err := client.EmptyCall(ctx, &testpb.Empty{}, opts...)
			return err
		}, "gA"},
		{"more headers win", func(opts ...grpc.CallOption) error {
			_, err := client.EmptyCall(metadata.AppendToOutgoingContext(ctx, "x-version", "2"), &testpb.Empty{}, opts...)
			return err
		}, "gC"},
	}
	for _, tc := range tests {
		var header metadata.MD
		if err := tc.call(grpc.Header(&header)); err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if got := header.Get("x-backend"); len(got) != 1 || got[0] != tc.want {
			t.Errorf("%s: served by %v, want %s", tc.name, got, tc.want)
		}
	}
}

func TestGRPCUnimplemented(t *testing.T) {
	addr, _, _ := grpcGateway(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tests := []struct{ name, authority string }{
		{"unrouted service on a gRPC host", "grpc.example.com"},
		{"host without routes", "other.example.com"},
	}
	for _, tc := range tests {
		var header metadata.MD
		_, err := testpb.NewUnimplementedServiceClient(dialGRPC(t, addr, tc.authority)).
			UnimplementedCall(ctx, &testpb.Empty{}, grpc.Header(&header))
		if status.Code(err) != codes.Unimplemented {
			t.Errorf("%s: %v, want code Unimplemented", tc.name, err)
		}
		if len(header.Get("x-backend")) != 0 {
			t.Errorf("%s: answered by backend %v, want the gateway", tc.name, header.Get("x-backend"))
		}
	}
	// A gRPC route host gives plain HTTP clients a 404.
	if resp, body := get(t, addr, "grpc.example.com", "/"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("HTTP GET on the gRPC host: %d %q, want 404", resp.StatusCode, body)
	}
	// HTTPRoute and GRPCRoute coexist on the listener.
	resp, body := get(t, addr, "http.example.com", "/")
	if e := decode(t, resp, body); e.Backend != "http" {
		t.Errorf("HTTP GET on the HTTP host: served by %s, want http", e.Backend)
	}
}

func TestGRPCStreamingAndTrailers(t *testing.T) {
	addr, _, _ := grpcGateway(t)
	client := testpb.NewTestServiceClient(dialGRPC(t, addr, "grpc.example.com"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	t.Run("full duplex in lock step", func(t *testing.T) {
		stream, err := client.FullDuplexCall(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// Each answer must arrive before the next request is sent: a proxy
		// that buffered either direction would deadlock here until ctx ends.
		for i := range 5 {
			msg := fmt.Sprintf("msg-%d", i)
			if err := stream.Send(&testpb.StreamingOutputCallRequest{Payload: &testpb.Payload{Body: []byte(msg)}}); err != nil {
				t.Fatalf("send %d: %v", i, err)
			}
			resp, err := stream.Recv()
			if err != nil {
				t.Fatalf("recv %d: %v", i, err)
			}
			if got, want := string(resp.GetPayload().GetBody()), "gB:"+msg; got != want {
				t.Fatalf("recv %d: %q, want %q", i, got, want)
			}
		}
		if err := stream.CloseSend(); err != nil {
			t.Fatal(err)
		}
		if _, err := stream.Recv(); !errors.Is(err, io.EOF) {
			t.Fatalf("after CloseSend: %v, want EOF", err)
		}
		if got := stream.Trailer().Get("x-trailer"); len(got) != 1 || got[0] != "t-gB" {
			t.Errorf("trailer x-trailer = %v, want [t-gB]", got)
		}
	})

	t.Run("server streaming", func(t *testing.T) {
		stream, err := client.StreamingOutputCall(ctx, &testpb.StreamingOutputCallRequest{
			ResponseParameters: make([]*testpb.ResponseParameters, 10),
		})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for {
			_, err := stream.Recv()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("recv %d: %v", n, err)
			}
			n++
		}
		if n != 10 {
			t.Errorf("received %d messages, want 10", n)
		}
		if got := stream.Trailer().Get("x-trailer"); len(got) != 1 || got[0] != "t-gB" {
			t.Errorf("trailer x-trailer = %v, want [t-gB]", got)
		}
	})

	t.Run("client streaming", func(t *testing.T) {
		stream, err := client.StreamingInputCall(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for range 8 {
			if err := stream.Send(&testpb.StreamingInputCallRequest{Payload: &testpb.Payload{Body: make([]byte, 1000)}}); err != nil {
				t.Fatal(err)
			}
		}
		resp, err := stream.CloseAndRecv()
		if err != nil {
			t.Fatal(err)
		}
		if resp.GetAggregatedPayloadSize() != 8000 {
			t.Errorf("aggregated size %d, want 8000", resp.GetAggregatedPayloadSize())
		}
	})

	t.Run("unary with trailers", func(t *testing.T) {
		var trailer metadata.MD
		resp, err := client.UnaryCall(ctx, &testpb.SimpleRequest{Payload: &testpb.Payload{Body: []byte("hi")}}, grpc.Trailer(&trailer))
		if err != nil {
			t.Fatal(err)
		}
		if string(resp.GetPayload().GetBody()) != "gA:hi" {
			t.Errorf("payload %q, want gA:hi", resp.GetPayload().GetBody())
		}
		if got := trailer.Get("x-trailer"); len(got) != 1 || got[0] != "t-gA" {
			t.Errorf("trailer x-trailer = %v, want [t-gA]", got)
		}
	})

	t.Run("error status relayed", func(t *testing.T) {
		_, err := client.UnaryCall(ctx, &testpb.SimpleRequest{
			ResponseStatus: &testpb.EchoStatus{Code: int32(codes.FailedPrecondition), Message: "not now"},
		})
		if s := status.Convert(err); s.Code() != codes.FailedPrecondition || s.Message() != "not now" {
			t.Errorf("got %v, want FailedPrecondition \"not now\"", err)
		}
	})
}

// TestGRPCFilters checks GRPCRoute filters, which reach the data plane as
// GRPCRoute filters: the rule's header modifiers and then the backendRef's
// apply to the call, and a filter type GRPCRoute does not have makes the
// rule answer INTERNAL.
func TestGRPCFilters(t *testing.T) {
	b := startGRPCBackend(t, "gA")
	headerFilter := func(typ gwv1.GRPCRouteFilterType, h *gwv1.HTTPHeaderFilter) ir.GRPCFilter {
		f := ir.GRPCFilter{GRPCRouteFilter: gwv1.GRPCRouteFilter{Type: typ}}
		if typ == gwv1.GRPCRouteFilterRequestHeaderModifier {
			f.RequestHeaderModifier = h
		} else {
			f.ResponseHeaderModifier = h
		}
		return f
	}
	filtered := ir.GRPCRule{
		Matches: []gwv1.GRPCRouteMatch{grpcMatch(testService, "UnaryCall")},
		Filters: []ir.GRPCFilter{
			headerFilter(gwv1.GRPCRouteFilterRequestHeaderModifier, &gwv1.HTTPHeaderFilter{
				Set:    []gwv1.HTTPHeader{{Name: "x-req-set", Value: "rule"}},
				Add:    []gwv1.HTTPHeader{{Name: "x-req-add", Value: "rule"}},
				Remove: []string{"x-req-remove"},
			}),
			headerFilter(gwv1.GRPCRouteFilterResponseHeaderModifier, &gwv1.HTTPHeaderFilter{
				Set: []gwv1.HTTPHeader{{Name: "x-resp", Value: "rule"}},
			}),
		},
		Backends: grpcBackends(b.ref()),
	}
	// The backendRef's filter applies after the rule's: its Set wins.
	filtered.Backends[0].Filters = []ir.GRPCFilter{
		headerFilter(gwv1.GRPCRouteFilterRequestHeaderModifier, &gwv1.HTTPHeaderFilter{
			Set: []gwv1.HTTPHeader{{Name: "x-req-set", Value: "backend"}},
		}),
	}
	wrongType := ir.GRPCRule{
		Matches:  []gwv1.GRPCRouteMatch{grpcMatch(testService, "EmptyCall")},
		Filters:  []ir.GRPCFilter{{GRPCRouteFilter: gwv1.GRPCRouteFilter{Type: "URLRewrite"}}},
		Backends: grpcBackends(b.ref()),
	}
	cfg := oneListener()
	cfg.Gateways[0].Listeners[0].GRPCRoutes = []ir.GRPCRoute{{
		RouteMeta: ir.RouteMeta{Namespace: "default", Name: "g"},
		Rules:     []ir.GRPCRule{filtered, wrongType},
	}}
	s := dataplane.New(dataplane.Options{})
	t.Cleanup(func() { s.Close() })
	err := s.Apply(cfg)
	if err == nil || !strings.Contains(err.Error(), `type "URLRewrite" is not supported`) || !strings.Contains(err.Error(), "INTERNAL") {
		t.Fatalf("Apply: %v; want the URLRewrite GRPCRoute filter named, the rule answering INTERNAL", err)
	}
	client := testpb.NewTestServiceClient(dialGRPC(t, mustAddr(t, s, 80), "grpc.example.com"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	ctx = metadata.AppendToOutgoingContext(ctx, "x-req-set", "client", "x-req-add", "client", "x-req-remove", "client")
	var header metadata.MD
	if _, err := client.UnaryCall(ctx, &testpb.SimpleRequest{}, grpc.Header(&header)); err != nil {
		t.Fatalf("UnaryCall: %v", err)
	}
	for k, want := range map[string]string{
		"echo-x-req-set":    "backend",
		"echo-x-req-add":    "client,rule",
		"echo-x-req-remove": "",
		"x-resp":            "rule",
	} {
		if got := strings.Join(header.Get(k), ","); got != want {
			t.Errorf("response header %s = %q, want %q (all: %v)", k, got, want, header)
		}
	}

	_, err = client.EmptyCall(ctx, &testpb.Empty{})
	if status.Code(err) != codes.Internal {
		t.Errorf("EmptyCall on the rule with a URLRewrite filter: %v, want INTERNAL", err)
	}
}
