package dataplane_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	echobackend "github.com/gatewitness/gatewitness/echo-backend"
	"github.com/gatewitness/gatewitness/echo-backend/echopb"
	"github.com/gatewitness/gatewitness/echo-backend/ledger"
	"github.com/gatewitness/gatewitness/gateway/dataplane"
	"github.com/gatewitness/gatewitness/gateway/dataplane/dataplanetest"
	"github.com/gatewitness/gatewitness/gateway/ir"
	"github.com/gatewitness/gatewitness/internal/grpctimeout"
)

// The GEP-3139 tests run calls through the data plane to the real
// echo-backend gRPC server. Every rule is selected by the x-rule metadata
// key, so one gateway serves all of them.

const echoService = "gatewitness.echo.v1.Echo"

// limit is the short maxStreamDuration the expiry tests use; their faults
// last far longer, so a call that is not cut ends with OK instead.
const limit = 400 * time.Millisecond

func startGRPCEcho(t testing.TB) *echobackend.Backend {
	t.Helper()
	b, err := echobackend.Start(echobackend.Config{Mode: echobackend.ModeGRPC, Host: "127.0.0.1", HTTPPort: "0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// timeoutRule is a rule for calls with x-rule: name.
func timeoutRule(name string, b *echobackend.Backend, maxStream time.Duration, deny bool) ir.GRPCRule {
	return ir.GRPCRule{
		Matches:           []gwv1.GRPCRouteMatch{grpcMatch(echoService, "", "x-rule", name)},
		Backends:          grpcBackends(ir.Backend{Name: "default/echo:9000", Weight: 1, Endpoints: []string{b.Addr(echobackend.ListenerGRPC)}}),
		MaxStreamDuration: maxStream,
		StrictDeny:        deny,
	}
}

// standardRules are the rules most tests use.
func standardRules(b *echobackend.Backend) []ir.GRPCRule {
	return []ir.GRPCRule{
		timeoutRule("short", b, limit, false),
		timeoutRule("short-deny", b, limit, true),
		timeoutRule("allow-10s", b, 10*time.Second, false),
		timeoutRule("deny-10s", b, 10*time.Second, true),
		timeoutRule("zero", b, 0, false),
	}
}

// grpcTimeoutGateway serves rules on grpc.example.com on a data plane broken
// as bs says (none: healthy) and returns the gateway's address.
func grpcTimeoutGateway(t testing.TB, h dataplanetest.Hooks, rules ...ir.GRPCRule) string {
	t.Helper()
	cfg := &ir.Config{Gateways: []ir.Gateway{{
		Namespace: "gw-ns", Name: "gw",
		Listeners: []ir.Listener{{
			Name: "http", Port: 80, Protocol: gwv1.HTTPProtocolType,
			GRPCRoutes: []ir.GRPCRoute{{
				RouteMeta: ir.RouteMeta{Namespace: "default", Name: "timeouts", Hostnames: []string{"grpc.example.com"}},
				Rules:     rules,
			}},
		}},
	}}}
	s := dataplanetest.NewServer(dataplane.Options{}, h)
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	if err := s.Apply(cfg); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	addr, ok := s.Addr("gw-ns", "gw", 80)
	if !ok {
		t.Fatal("port 80 not served")
	}
	return addr
}

var idSeq atomic.Int64

// newID returns a request id unique within the test binary.
func newID(t testing.TB) string {
	return fmt.Sprintf("%s-%d", strings.ReplaceAll(t.Name(), "/", "-"), idSeq.Add(1))
}

// noDeadline returns a context without a deadline (so the client sends no
// grpc-timeout) that is cancelled after a generous bound, so a broken
// gateway cannot hang the test.
func noDeadline(t testing.TB) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	stop := time.AfterFunc(30*time.Second, cancel)
	t.Cleanup(func() { stop.Stop(); cancel() })
	return ctx
}

// within fails the test unless elapsed is in [lo, lo+tolerance].
func within(t *testing.T, what string, elapsed, lo time.Duration) {
	t.Helper()
	if elapsed < lo || elapsed > lo+tolerance {
		t.Errorf("%s after %v, want within [%v, %v]", what, elapsed, lo, lo+tolerance)
	}
}

// wantExpired checks that err is DEADLINE_EXCEEDED from the gateway's budget
// set by source ("maxStreamDuration" or "grpc-timeout").
func wantExpired(t *testing.T, what string, err error, source string) {
	t.Helper()
	s := status.Convert(err)
	if s.Code() != codes.DeadlineExceeded || !strings.Contains(s.Message(), "gateway: the call exceeded") || !strings.Contains(s.Message(), source) {
		t.Errorf("%s: %v; want DEADLINE_EXCEEDED from the gateway naming %s", what, err, source)
	}
}

// waitEnded polls the backend's ledger until the only attempt of id has
// ended, and returns it.
func waitEnded(t *testing.T, b *echobackend.Backend, id string) ledger.Attempt {
	t.Helper()
	deadline := time.Now().Add(tolerance)
	for {
		e, ok := b.Ledger().Get(id)
		if ok && len(e.Attempts) == 1 && e.Attempts[0].Ended != nil {
			return e.Attempts[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("id %s: the backend's attempt did not end within %v: %+v", id, tolerance, e)
		}
		time.Sleep(5 * time.Millisecond) // polling interval, not synchronisation
	}
}

// TestGRPCMaxStreamDurationAllKinds: the rule's limit ends unary,
// client-streaming, server-streaming and bidirectional calls with
// DEADLINE_EXCEEDED, not before the limit and not much after it, and the
// backend's stream ends with it.
func TestGRPCMaxStreamDurationAllKinds(t *testing.T) {
	b := startGRPCEcho(t)
	addr := grpcTimeoutGateway(t, dataplanetest.Hooks{}, standardRules(b)...)
	// The backend's own deadline (from the forwarded grpc-timeout, rounded
	// down by under 1µs) may end its stream a hair before the gateway does.
	allKindsExpire(t, b, addr, limit-time.Millisecond)
}

// TestGRPCExpiryCancelsBackend: with grpc-timeout propagation switched off
// the backend has no deadline of its own, so the call ending at the limit
// and the backend's stream ending with it are the gateway's doing alone.
func TestGRPCExpiryCancelsBackend(t *testing.T) {
	b := startGRPCEcho(t)
	addr := grpcTimeoutGateway(t, dataplanetest.Hooks{GRPC: dataplanetest.GRPCTimeouts{NoTimeoutPropagation: true}}, standardRules(b)...)
	a := allKindsExpire(t, b, addr, limit)
	for kind, attempt := range a {
		if got := attempt.Headers["grpc-timeout"]; len(got) != 0 {
			t.Errorf("%s: backend got grpc-timeout %v, want none (propagation off)", kind, got)
		}
	}
}

// allKindsExpire runs one call of each kind on the "short" rule, with no
// client deadline and a fault that outlasts the limit, and checks that each
// ends with the gateway's DEADLINE_EXCEEDED in [limit, limit+tolerance] and
// that the backend's stream was cancelled no earlier than backendFloor. It
// returns the backend's attempt per kind.
func allKindsExpire(t *testing.T, b *echobackend.Backend, addr string, backendFloor time.Duration) map[string]ledger.Attempt {
	t.Helper()
	client := echopb.NewEchoClient(dialGRPC(t, addr, "grpc.example.com"))
	kinds := []struct {
		name  string
		fault string
		call  func(ctx context.Context) error
	}{
		{"unary", "delay=10s", func(ctx context.Context) error {
			_, err := client.Unary(ctx, &echopb.EchoRequest{})
			return err
		}},
		{"server stream", "messages=200,interval=50ms", func(ctx context.Context) error {
			stream, err := client.ServerStream(ctx, &echopb.EchoRequest{})
			if err != nil {
				return err
			}
			n := 0
			for {
				if _, err := stream.Recv(); err != nil {
					if errors.Is(err, io.EOF) {
						return fmt.Errorf("stream ended after %d messages without an error", n)
					}
					if n == 0 || n >= 200 {
						t.Errorf("server stream: %d messages before the cut, want some but not all", n)
					}
					return err
				}
				n++
			}
		}},
		{"client stream", "", func(ctx context.Context) error {
			stream, err := client.ClientStream(ctx)
			if err != nil {
				return err
			}
			if err := stream.Send(&echopb.EchoRequest{Payload: []byte("one")}); err != nil {
				return err
			}
			// No half-close: the backend waits for more until the cut.
			return stream.RecvMsg(new(echopb.EchoResponse))
		}},
		{"bidi stream", "", func(ctx context.Context) error {
			stream, err := client.BidiStream(ctx)
			if err != nil {
				return err
			}
			if err := stream.Send(&echopb.EchoRequest{Payload: []byte("one")}); err != nil {
				return err
			}
			if resp, err := stream.Recv(); err != nil || string(resp.GetPayload()) != "one" {
				return fmt.Errorf("first echo: %v, %v", resp, err)
			}
			// Headers and one message are through; the client keeps its
			// side open and the stream goes quiet.
			_, err = stream.Recv()
			return err
		}},
	}
	out := map[string]ledger.Attempt{}
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			id := newID(t)
			md := metadata.Pairs("x-rule", "short", "x-gatewitness-id", id)
			if k.fault != "" {
				md.Append("x-gatewitness-fault", k.fault)
			}
			ctx := metadata.NewOutgoingContext(noDeadline(t), md)
			start := time.Now()
			err := k.call(ctx)
			within(t, "call ended", time.Since(start), limit)
			wantExpired(t, k.name, err, "maxStreamDuration")

			a := waitEnded(t, b, id)
			if a.Outcome != ledger.Cancelled || a.CancelledAt == nil {
				t.Fatalf("backend attempt outcome %q, want %q", a.Outcome, ledger.Cancelled)
			}
			within(t, "backend stream ended", a.CancelledAt.Sub(start), backendFloor)
			out[k.name] = a
		})
	}
	return out
}

// rawResult is a gRPC response as seen on the wire by an HTTP/2 client.
type rawResult struct {
	status   int
	header   http.Header
	messages [][]byte
	trailer  http.Header
	elapsed  time.Duration
	bodyErr  error
}

// code is the grpc-status of the response: from the headers of a
// trailers-only response, else from the trailers.
func (r rawResult) code() string {
	if v := r.header.Get("Grpc-Status"); v != "" {
		return v
	}
	return r.trailer.Get("Grpc-Status")
}

func (r rawResult) message() string {
	v := r.header.Get("Grpc-Message")
	if v == "" {
		v = r.trailer.Get("Grpc-Message")
	}
	m, _ := url.PathUnescape(v)
	return m
}

// rawGRPCClient speaks HTTP/2 with prior knowledge and sets no deadline, so the
// grpc-timeout header is exactly what a test puts there.
var rawGRPCClient = func() *http.Client {
	p := new(http.Protocols)
	p.SetUnencryptedHTTP2(true)
	return &http.Client{Transport: &http.Transport{Protocols: p}, Timeout: 30 * time.Second}
}()

// rawCall sends one gatewitness.echo.v1.Echo call with an empty EchoRequest
// and the given metadata pairs (grpc-timeout included, verbatim) and reads
// the whole response, message by message.
func rawCall(t *testing.T, addr, method string, grpcTimeout []string, md ...string) rawResult {
	t.Helper()
	payload, err := proto.Marshal(&echopb.EchoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	frame := make([]byte, 5, 5+len(payload))
	binary.BigEndian.PutUint32(frame[1:], uint32(len(payload)))
	frame = append(frame, payload...)
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/"+echoService+"/"+method, io.NopCloser(bytes.NewReader(frame)))
	if err != nil {
		t.Fatal(err)
	}
	req.Host = "grpc.example.com"
	req.Header.Set("Content-Type", "application/grpc")
	req.Header.Set("Te", "trailers")
	for _, v := range grpcTimeout {
		req.Header.Add("Grpc-Timeout", v)
	}
	for i := 0; i+1 < len(md); i += 2 {
		req.Header.Add(md[i], md[i+1])
	}
	start := time.Now()
	resp, err := rawGRPCClient.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	defer resp.Body.Close()
	res := rawResult{status: resp.StatusCode, header: resp.Header}
	body, err := io.ReadAll(resp.Body)
	res.elapsed = time.Since(start)
	res.bodyErr = err
	res.trailer = resp.Trailer
	for len(body) >= 5 {
		n := int(binary.BigEndian.Uint32(body[1:5]))
		if len(body) < 5+n {
			break
		}
		res.messages = append(res.messages, body[5:5+n])
		body = body[5+n:]
	}
	if len(body) != 0 {
		t.Errorf("%s: %d bytes of an incomplete message at the end of the response", method, len(body))
	}
	return res
}

// echoOf decodes the i-th response message as an EchoResponse.
func (r rawResult) echoOf(t *testing.T, i int) *echopb.EchoResponse {
	t.Helper()
	if len(r.messages) <= i {
		t.Fatalf("response has %d messages, want message %d (grpc-status %q %q)", len(r.messages), i, r.code(), r.message())
	}
	e := &echopb.EchoResponse{}
	if err := proto.Unmarshal(r.messages[i], e); err != nil {
		t.Fatal(err)
	}
	return e
}

// TestGRPCExpiryResponseShape checks the wire form of an expiry: before
// response headers, a trailers-only response (HTTP 200, grpc-status 4 in
// the only HEADERS frame, no body); after them, whole messages followed by
// trailers with grpc-status 4.
func TestGRPCExpiryResponseShape(t *testing.T) {
	b := startGRPCEcho(t)
	addr := grpcTimeoutGateway(t, dataplanetest.Hooks{}, standardRules(b)...)

	t.Run("before headers", func(t *testing.T) {
		res := rawCall(t, addr, "Unary", nil, "x-rule", "short", "x-gatewitness-fault", "delay=10s")
		within(t, "trailers-only response", res.elapsed, limit)
		if res.status != http.StatusOK || res.header.Get("Grpc-Status") != "4" || len(res.messages) != 0 || len(res.trailer) != 0 {
			t.Errorf("HTTP %d, header grpc-status %q, %d messages, trailers %v; want 200, 4 in the headers, no body, no trailers",
				res.status, res.header.Get("Grpc-Status"), len(res.messages), res.trailer)
		}
		if res.header.Get("Content-Type") != "application/grpc" {
			t.Errorf("content-type %q, want application/grpc", res.header.Get("Content-Type"))
		}
	})

	t.Run("after headers", func(t *testing.T) {
		res := rawCall(t, addr, "ServerStream", nil, "x-rule", "short", "x-gatewitness-fault", "messages=200,interval=50ms")
		within(t, "trailers", res.elapsed, limit)
		if res.bodyErr != nil {
			t.Errorf("reading the body: %v; want a clean end with trailers", res.bodyErr)
		}
		if res.status != http.StatusOK || res.header.Get("Grpc-Status") != "" || res.trailer.Get("Grpc-Status") != "4" {
			t.Errorf("HTTP %d, header grpc-status %q, trailer grpc-status %q; want 200, none, 4",
				res.status, res.header.Get("Grpc-Status"), res.trailer.Get("Grpc-Status"))
		}
		if n := len(res.messages); n == 0 || n >= 200 {
			t.Errorf("%d messages before the cut, want some but not all", n)
		}
		for i := range res.messages {
			if got := res.echoOf(t, i).GetMessageIndex(); got != int32(i) {
				t.Errorf("message %d has index %d: a message was lost or split", i, got)
			}
		}
		if !strings.Contains(res.message(), "maxStreamDuration") {
			t.Errorf("grpc-message %q, want it to name maxStreamDuration", res.message())
		}
	})
}

// TestGRPCBudgetPropagated reads the grpc-timeout the backend received and
// the deadline it had left, which show the budget the gateway chose: never
// more than the budget, and not less than the budget minus the tolerance.
func TestGRPCBudgetPropagated(t *testing.T) {
	b := startGRPCEcho(t)
	addr := grpcTimeoutGateway(t, dataplanetest.Hooks{}, standardRules(b)...)
	tests := []struct {
		name, rule string
		client     []string // grpc-timeout sent
		want       time.Duration
	}{
		{"allow: client stricter", "allow-10s", []string{"3S"}, 3 * time.Second},
		{"allow: route stricter", "allow-10s", []string{"60S"}, 10 * time.Second},
		{"allow: route alone", "allow-10s", nil, 10 * time.Second},
		{"deny: client longer wins", "deny-10s", []string{"60S"}, 60 * time.Second},
		{"deny: client shorter wins", "deny-10s", []string{"3000m"}, 3 * time.Second},
		{"deny: route without client", "deny-10s", nil, 10 * time.Second},
		{"0s: client alone", "zero", []string{"5000000u"}, 5 * time.Second},
		{"0s: nothing", "zero", nil, 0},
	}
	for _, tc := range tests {
		res := rawCall(t, addr, "Unary", tc.client, "x-rule", tc.rule)
		if res.code() != "0" {
			t.Errorf("%s: grpc-status %q %q, want 0", tc.name, res.code(), res.message())
			continue
		}
		e := res.echoOf(t, 0)
		if tc.want == 0 {
			if e.GetGrpcTimeout() != "" || e.GetDeadlineRemaining() != nil {
				t.Errorf("%s: backend got grpc-timeout %q, deadline %v; want none", tc.name, e.GetGrpcTimeout(), e.GetDeadlineRemaining().AsDuration())
			}
			continue
		}
		if e.GetGrpcTimeout() == "" || e.GetDeadlineRemaining() == nil {
			t.Errorf("%s: backend got no grpc-timeout, want about %v", tc.name, tc.want)
			continue
		}
		if got := e.GetDeadlineRemaining().AsDuration(); got > tc.want || got < tc.want-tolerance {
			t.Errorf("%s: backend had %v left (grpc-timeout %q), want within [%v, %v]",
				tc.name, got, e.GetGrpcTimeout(), tc.want-tolerance, tc.want)
		}
	}
}

// TestGRPCBudgetEnforced: which value ends a call, by the clock. The raw
// client sets grpc-timeout without a deadline of its own, so every
// DEADLINE_EXCEEDED here is the gateway's.
func TestGRPCBudgetEnforced(t *testing.T) {
	b := startGRPCEcho(t)
	addr := grpcTimeoutGateway(t, dataplanetest.Hooks{}, standardRules(b)...)
	ms := func(d time.Duration) string { return fmt.Sprintf("%dm", d.Milliseconds()) }
	tests := []struct {
		name, rule string
		client     []string
		fault      string
		expireAt   time.Duration // 0: the call must succeed
		source     string
	}{
		{"allow: route stricter ends the call", "short", []string{"10S"}, "delay=3s", limit, "maxStreamDuration"},
		{"allow: client stricter ends the call", "allow-10s", []string{ms(limit)}, "delay=3s", limit, "grpc-timeout"},
		{"deny: the route's limit is not applied", "short-deny", []string{"10S"}, "delay=1s", 0, ""},
		{"deny: client ends the call", "deny-10s", []string{ms(limit)}, "delay=3s", limit, "grpc-timeout"},
		{"0s: client still applies", "zero", []string{ms(limit)}, "delay=3s", limit, "grpc-timeout"},
		{"0s: no limit at all", "zero", nil, "delay=1s", 0, ""},
	}
	for _, tc := range tests {
		res := rawCall(t, addr, "Unary", tc.client, "x-rule", tc.rule, "x-gatewitness-fault", tc.fault)
		if tc.expireAt == 0 {
			if res.code() != "0" {
				t.Errorf("%s: grpc-status %q %q, want 0", tc.name, res.code(), res.message())
			}
			continue
		}
		if res.code() != "4" || !strings.Contains(res.message(), tc.source) {
			t.Errorf("%s: grpc-status %q %q, want 4 naming %s", tc.name, res.code(), res.message(), tc.source)
		}
		within(t, tc.name, res.elapsed, tc.expireAt)
	}
}

// TestGRPCBadClientTimeout: a malformed grpc-timeout is answered by the
// gateway with INTERNAL naming the header and the accepted form; the
// backend never sees the call.
func TestGRPCBadClientTimeout(t *testing.T) {
	b := startGRPCEcho(t)
	addr := grpcTimeoutGateway(t, dataplanetest.Hooks{}, standardRules(b)...)
	for _, v := range [][]string{{"1x"}, {"123456789S"}, {"S"}, {"-5S"}, {"1.5S"}, {"1S", "2S"}} {
		id := newID(t)
		res := rawCall(t, addr, "Unary", v, "x-rule", "allow-10s", "x-gatewitness-id", id)
		if res.code() != "13" || !strings.Contains(res.message(), "grpc-timeout") || !strings.Contains(res.message(), grpctimeout.Form) {
			t.Errorf("grpc-timeout %q: grpc-status %q %q, want 13 naming grpc-timeout and the accepted form", v, res.code(), res.message())
		}
		if _, ok := b.Ledger().Get(id); ok {
			t.Errorf("grpc-timeout %q: the backend saw the call", v)
		}
	}
}

// TestGRPCTimeoutFaults: each negative-check breakage of the GRPCRoute
// timeouts changes exactly the behaviour it names, so a conformance test of
// that behaviour fails against it.
func TestGRPCTimeoutFaults(t *testing.T) {
	b := startGRPCEcho(t)
	faulty := func(f dataplanetest.GRPCTimeouts) string {
		return grpcTimeoutGateway(t, dataplanetest.Hooks{GRPC: f}, standardRules(b)...)
	}
	remaining := func(res rawResult) time.Duration {
		t.Helper()
		e := res.echoOf(t, 0)
		if e.GetDeadlineRemaining() == nil {
			return 0
		}
		return e.GetDeadlineRemaining().AsDuration()
	}

	t.Run("UnavailableOnExpiry", func(t *testing.T) {
		res := rawCall(t, faulty(dataplanetest.GRPCTimeouts{UnavailableOnExpiry: true}), "Unary", nil, "x-rule", "short", "x-gatewitness-fault", "delay=3s")
		if res.code() != "14" {
			t.Errorf("grpc-status %q, want 14 (UNAVAILABLE)", res.code())
		}
	})
	t.Run("IgnoreClientTimeout", func(t *testing.T) {
		addr := faulty(dataplanetest.GRPCTimeouts{IgnoreClientTimeout: true})
		res := rawCall(t, addr, "Unary", []string{"300m"}, "x-rule", "allow-10s", "x-gatewitness-fault", "delay=1s")
		if res.code() != "0" {
			t.Errorf("grpc-status %q %q, want 0: the client's 300ms is ignored", res.code(), res.message())
		}
	})
	t.Run("LooserWins", func(t *testing.T) {
		res := rawCall(t, faulty(dataplanetest.GRPCTimeouts{LooserWins: true}), "Unary", []string{"3S"}, "x-rule", "allow-10s")
		if got := remaining(res); got <= 3*time.Second {
			t.Errorf("backend had %v left, want more than the client's 3s", got)
		}
	})
	t.Run("NoTimeoutPropagation", func(t *testing.T) {
		addr := faulty(dataplanetest.GRPCTimeouts{NoTimeoutPropagation: true})
		if got := rawCall(t, addr, "Unary", nil, "x-rule", "allow-10s").echoOf(t, 0).GetGrpcTimeout(); got != "" {
			t.Errorf("route limit only: backend got grpc-timeout %q, want none", got)
		}
		if got := rawCall(t, addr, "Unary", []string{"60S"}, "x-rule", "allow-10s").echoOf(t, 0).GetGrpcTimeout(); got != "60S" {
			t.Errorf("client 60S: backend got grpc-timeout %q, want 60S as sent", got)
		}
	})
}

// TestGRPCClientDeadlineThroughGateway: a grpc-go client's own deadline,
// longer than the rule's limit, does not extend the call (Allow), and a
// shorter one is what the backend sees.
func TestGRPCClientDeadlineThroughGateway(t *testing.T) {
	b := startGRPCEcho(t)
	addr := grpcTimeoutGateway(t, dataplanetest.Hooks{}, standardRules(b)...)
	client := echopb.NewEchoClient(dialGRPC(t, addr, "grpc.example.com"))

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	_, err := client.Unary(metadata.AppendToOutgoingContext(ctx, "x-rule", "short", "x-gatewitness-fault", "delay=10s"), &echopb.EchoRequest{})
	within(t, "call ended", time.Since(start), limit)
	wantExpired(t, "client deadline 20s, rule 400ms", err, "maxStreamDuration")

	ctx2, cancel2 := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel2()
	resp, err := client.Unary(metadata.AppendToOutgoingContext(ctx2, "x-rule", "allow-10s"), &echopb.EchoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.GetDeadlineRemaining().AsDuration(); got > 2*time.Second || got < 2*time.Second-tolerance {
		t.Errorf("backend had %v left, want within [%v, 2s]", got, 2*time.Second-tolerance)
	}
}

// TestGRPCLargeMessagesRelayed: messages above the relay's whole-message
// buffer are streamed through intact, with and without a budget.
func TestGRPCLargeMessagesRelayed(t *testing.T) {
	b := startGRPCEcho(t)
	addr := grpcTimeoutGateway(t, dataplanetest.Hooks{}, standardRules(b)...)
	client := echopb.NewEchoClient(dialGRPC(t, addr, "grpc.example.com"))
	payload := bytes.Repeat([]byte("0123456789abcdef"), (3<<20)/16) // 3 MiB
	for _, rule := range []string{"zero", "allow-10s"} {
		stream, err := client.ServerStream(metadata.AppendToOutgoingContext(noDeadline(t), "x-rule", rule),
			&echopb.EchoRequest{Payload: payload, Messages: 2}, grpc.MaxCallRecvMsgSize(8<<20))
		if err != nil {
			t.Fatal(err)
		}
		for i := range 2 {
			resp, err := stream.Recv()
			if err != nil {
				t.Fatalf("%s: message %d: %v", rule, i, err)
			}
			if !bytes.Equal(resp.GetPayload(), payload) {
				t.Fatalf("%s: message %d: payload of %d bytes differs from the 3 MiB sent", rule, i, len(resp.GetPayload()))
			}
		}
		if _, err := stream.Recv(); !errors.Is(err, io.EOF) {
			t.Errorf("%s: after two messages: %v, want EOF", rule, err)
		}
	}
}

// TestGRPCBadMaxStreamDuration: a limit the API cannot express is reported
// by Apply naming the field, and the rule answers INTERNAL.
func TestGRPCBadMaxStreamDuration(t *testing.T) {
	b := startGRPCEcho(t)
	for _, d := range []time.Duration{-time.Second, 500 * time.Microsecond} {
		s := dataplane.New(dataplane.Options{})
		err := s.Apply(&ir.Config{Gateways: []ir.Gateway{{
			Namespace: "gw-ns", Name: "gw",
			Listeners: []ir.Listener{{Name: "http", Port: 80, Protocol: gwv1.HTTPProtocolType,
				GRPCRoutes: []ir.GRPCRoute{{
					RouteMeta: ir.RouteMeta{Namespace: "default", Name: "bad"},
					Rules:     []ir.GRPCRule{timeoutRule("bad", b, d, false)},
				}}}},
		}}})
		if err == nil || !strings.Contains(err.Error(), "GRPCRoute default/bad rule 0: timeouts.maxStreamDuration") ||
			!strings.Contains(err.Error(), "accepted: 0 (no limit) or at least 1ms") {
			t.Errorf("%v: Apply error %v, want one naming timeouts.maxStreamDuration and the accepted values", d, err)
		}
		addr, _ := s.Addr("gw-ns", "gw", 80)
		req := rawCall(t, addr, "Unary", nil, "x-rule", "bad")
		if req.code() != "13" {
			t.Errorf("%v: grpc-status %q, want 13 (INTERNAL)", d, req.code())
		}
		s.Close()
	}
}
