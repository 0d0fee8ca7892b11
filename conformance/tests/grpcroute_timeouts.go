package tests

// What the GRPCRoute timeout tests (GEP-3139) share: a client for the
// Gateway that serves their routes, the four kinds of call made to outlast
// a limit, raw HTTP/2 calls (internal/rawgrpc) that show a response's wire
// form and send grpc-timeout without enforcing it, and reads of the
// backend's ledger through the Gateway. docs/semantics/grpcroute-timeouts.md says what
// the tests expect and why.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/gateway-api/conformance/utils/kubernetes"
	"sigs.k8s.io/gateway-api/conformance/utils/suite"

	"github.com/gatecheck/gatecheck/conformance/observe"
	"github.com/gatecheck/gatecheck/contract/echowire"
	"github.com/gatecheck/gatecheck/echo-backend/echopb"
	"github.com/gatecheck/gatecheck/internal/rawgrpc"
)

// grpcEchoService is the full name of the echo-backend's echo service,
// which the tests' routes send to their backend.
const grpcEchoService = "gatecheck.echo.v1.Echo"

// grpcOutlastFault is a backend fault spec, per kind of call, that keeps the
// call going far longer than any limit the tests set: a unary call is
// answered after 10s, a server stream sends a message every 50ms for 10s.
// Client and bidirectional streams need no fault: the client keeps its side
// open, so the backend waits.
var grpcOutlastFault = map[string]string{
	"unary":         "delay=10s",
	"server-stream": "messages=200,interval=50ms",
}

// grpcTarget is a Gateway that serves a test's GRPCRoutes, with the
// clients that reach it.
type grpcTarget struct {
	s    *suite.ConformanceTestSuite
	addr string // the Gateway's address, host:port
	dial DialFunc
	raw  *http.Client
}

// newGRPCTarget waits until the shared Gateway (same-namespace in the
// infrastructure namespace) and the named GRPCRoutes are accepted, and
// returns the Gateway as a target.
func newGRPCTarget(t *testing.T, s *suite.ConformanceTestSuite, routes ...string) *grpcTarget {
	t.Helper()
	ns := suite.InfrastructureNamespace
	nns := make([]types.NamespacedName, len(routes))
	for i, r := range routes {
		nns[i] = types.NamespacedName{Namespace: ns, Name: r}
	}
	gw := kubernetes.NewGatewayRef(types.NamespacedName{Namespace: ns, Name: "same-namespace"})
	addr := kubernetes.GatewayAndRoutesMustBeAccepted(t, s.Client, s.TimeoutConfig, s.ControllerName, gw, &gwv1.GRPCRoute{}, true, nns...)
	dial := DialContext(s)
	p := new(http.Protocols)
	p.SetUnencryptedHTTP2(true)
	tr := &http.Transport{Protocols: p, DialContext: dial}
	t.Cleanup(tr.CloseIdleConnections)
	return &grpcTarget{
		s:    s,
		addr: addr,
		dial: dial,
		// A safety net only: every call has a shorter bound of its own.
		raw: &http.Client{Transport: tr, Timeout: time.Minute},
	}
}

// conn returns a gRPC connection to the Gateway that sends authority as
// :authority, closed when t ends.
func (g *grpcTarget) conn(t *testing.T, authority string) *grpc.ClientConn {
	t.Helper()
	cc, err := grpc.NewClient("passthrough:///"+g.addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithAuthority(authority),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			return g.dial(ctx, "tcp", addr)
		}),
	)
	if err != nil {
		t.Fatalf("gRPC connection to the Gateway %s for %s: %v", g.addr, authority, err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

// waitReady calls Echo.Unary through cc until the suite's
// RequiredConsecutiveSuccesses calls in a row succeed, so that the route of
// cc's authority is programmed before a test times anything. It fails t
// after the suite's MaxTimeToConsistency.
func (g *grpcTarget) waitReady(t *testing.T, cc *grpc.ClientConn) {
	t.Helper()
	client := echopb.NewEchoClient(cc)
	need := max(g.s.TimeoutConfig.RequiredConsecutiveSuccesses, 1)
	deadline := time.Now().Add(g.s.TimeoutConfig.MaxTimeToConsistency)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	ok := 0
	var last error
	for ok < need {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, last = client.Unary(ctx, &echopb.EchoRequest{})
		cancel()
		if last == nil {
			ok++
			continue
		}
		ok = 0
		if time.Now().After(deadline) {
			t.Fatalf("%s through the Gateway %s: no %d successful calls in a row within %v; last: %v",
				cc.CanonicalTarget(), g.addr, need, g.s.TimeoutConfig.MaxTimeToConsistency, last)
		}
		<-tick.C // polling interval, not synchronisation
	}
}

var grpcRequestSeq atomic.Int64

// grpcRequestID returns a request id for the backend's ledger that no other
// call of any run shares: the test's name, a counter and random bits.
func grpcRequestID(t *testing.T) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	name := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '-'
	}, t.Name())
	return fmt.Sprintf("%s-%d-%s", name, grpcRequestSeq.Add(1), hex.EncodeToString(b[:]))
}

// grpcCallContext returns a context for one call, with the given metadata
// pairs, that has no deadline, so that a gRPC client sends no grpc-timeout
// and every bound on the call is the Gateway's. It is cancelled after
// giveUp, so a Gateway that does not end the call cannot hang the test;
// a call that ends that way fails its timing window.
func grpcCallContext(t *testing.T, giveUp time.Duration, md ...string) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	stop := time.AfterFunc(giveUp, cancel)
	t.Cleanup(func() { stop.Stop(); cancel() })
	return metadata.NewOutgoingContext(ctx, metadata.Pairs(md...))
}

// grpcGiveUpAfter is how long a call that should end at end may run before the
// test stops waiting.
func grpcGiveUpAfter(end time.Duration) time.Duration {
	return end + 2*TimingTolerance() + 3*time.Second
}

// grpcWantWithin fails t unless elapsed is in [lo, lo+TimingTolerance()].
// Earlier fails: lo is the time the call is given (maxStreamDuration, or
// the client's grpc-timeout), which users rely on. Later than the
// tolerance fails: the bound did not end the call.
func grpcWantWithin(t *testing.T, what string, elapsed, lo time.Duration) {
	t.Helper()
	if hi := lo + TimingTolerance(); elapsed < lo || elapsed > hi {
		t.Errorf("%s after %v, want within [%v, %v] (tolerance %v)", what, elapsed.Round(time.Millisecond), lo, hi, TimingTolerance())
	}
}

// grpcKindResult is how one call ended, as a gRPC client saw it.
type grpcKindResult struct {
	err      error         // nil: OK
	elapsed  time.Duration // from before the call to its end
	messages int           // response messages received
	gaveUp   bool          // the test's own give-up bound ended the call
}

// code is the call's gRPC status code.
func (r grpcKindResult) code() codes.Code { return status.Code(r.err) }

// record records the status, elapsed time and messages received.
func (r grpcKindResult) record(t *testing.T) {
	t.Helper()
	r.recordElapsed(t, r.elapsed.Round(time.Millisecond))
}

// recordElapsed is record with the elapsed time recorded as given (an
// observe.Timing, when the caller holds it to a window).
func (r grpcKindResult) recordElapsed(t *testing.T, elapsed any) {
	t.Helper()
	observe.Record(t, "status", r.code())
	observe.Record(t, "elapsed", elapsed)
	observe.Record(t, "messages", r.messages)
	if r.err != nil {
		observe.Record(t, "grpc-message", status.Convert(r.err).Message())
	}
}

// grpcCallKinds are the four kinds of RPC GEP-3139 covers, in the order tests
// run them.
var grpcCallKinds = []string{"unary", "server-stream", "client-stream", "bidi-stream"}

// grpcRunKind makes one call of the named kind (one of grpcCallKinds) with request
// id id and the backend fault spec faultSpec ("" for none; grpcOutlastFault[kind]
// makes it outlast any limit), and reports how it ended. The call is given
// up after giveUp.
func grpcRunKind(t *testing.T, cc *grpc.ClientConn, kind, id, faultSpec string, giveUp time.Duration) grpcKindResult {
	t.Helper()
	md := []string{echowire.IDMetadata, id}
	if faultSpec != "" {
		md = append(md, echowire.FaultMetadata, faultSpec)
	}
	ctx := grpcCallContext(t, giveUp, md...)
	client := echopb.NewEchoClient(cc)
	var r grpcKindResult
	start := time.Now()
	switch kind {
	case "unary":
		_, r.err = client.Unary(ctx, &echopb.EchoRequest{})
		if r.err == nil {
			r.messages = 1
		}
	case "server-stream":
		r.messages, r.err = grpcRecvAll(ctx, client)
	case "client-stream":
		// One message, and no half-close: the backend answers only once
		// the client is done, so the call lasts until something ends it.
		r.err = func() error {
			stream, err := client.ClientStream(ctx)
			if err != nil {
				return err
			}
			if err := stream.Send(&echopb.EchoRequest{Payload: []byte("one")}); err != nil && !errors.Is(err, io.EOF) {
				return err
			}
			return stream.RecvMsg(new(echopb.EchoResponse))
		}()
	case "bidi-stream":
		// One message and its echo, so headers and a message are through;
		// then the client keeps its side open and the stream goes quiet.
		r.err = func() error {
			stream, err := client.BidiStream(ctx)
			if err != nil {
				return err
			}
			if err := stream.Send(&echopb.EchoRequest{Payload: []byte("one")}); err != nil && !errors.Is(err, io.EOF) {
				return err
			}
			if _, err := stream.Recv(); err != nil {
				return err
			}
			r.messages++
			_, err = stream.Recv()
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}()
	default:
		t.Fatalf("grpcRunKind: unknown kind %q; want one of %v", kind, grpcCallKinds)
	}
	r.elapsed = time.Since(start)
	r.gaveUp = ctx.Err() != nil
	return r
}

// grpcRecvAll reads a server stream to its end and returns the messages read
// and the status (nil for OK).
func grpcRecvAll(ctx context.Context, client echopb.EchoClient) (int, error) {
	stream, err := client.ServerStream(ctx, &echopb.EchoRequest{})
	if err != nil {
		return 0, err
	}
	n := 0
	for {
		if _, err := stream.Recv(); err != nil {
			if errors.Is(err, io.EOF) {
				return n, nil
			}
			return n, err
		}
		n++
	}
}

// grpcWantCut checks that a call that outlasts limit ended with a non-OK status
// in [limit, limit+tolerance], and records how it ended.
func grpcWantCut(t *testing.T, r grpcKindResult, limit time.Duration) {
	t.Helper()
	r.recordElapsed(t, observe.Within(r.elapsed, limit, limit, limit+TimingTolerance()))
	switch {
	case r.gaveUp:
		t.Errorf("the call was still running after %v, when the test gave up; want it ended with a non-OK status within [%v, %v]",
			r.elapsed.Round(time.Millisecond), limit, limit+TimingTolerance())
		return
	case r.err == nil:
		t.Errorf("the call ended with OK after %v; want a non-OK status within [%v, %v]",
			r.elapsed.Round(time.Millisecond), limit, limit+TimingTolerance())
		return
	}
	grpcWantWithin(t, fmt.Sprintf("the call ended with %v", r.code()), r.elapsed, limit)
}

// grpcRawResult is a gRPC response as an HTTP/2 client sees it on the wire
// (rawgrpc.Response), with how long the call took.
type grpcRawResult struct {
	status   int
	header   http.Header
	trailer  http.Header
	messages [][]byte
	partial  int   // bytes of an incomplete message at the end of the body
	bodyErr  error // reading the body failed (a reset stream, say)
	elapsed  time.Duration
	gaveUp   bool // the test's own give-up bound ended the call
}

// wire is r as a rawgrpc.Response, for its reading of the status.
func (r grpcRawResult) wire() *rawgrpc.Response {
	return &rawgrpc.Response{Status: r.status, Header: r.header, Trailer: r.trailer,
		Messages: r.messages, Partial: r.partial, BodyErr: r.bodyErr}
}

// ok reports whether the call succeeded: HTTP 200, grpc-status 0 and a
// body read to its end.
func (r grpcRawResult) ok() bool { return r.wire().OK() }

// wantCut checks that a call that outlasts limit ended with a non-OK
// status in [limit, limit+tolerance].
func (r grpcRawResult) wantCut(t *testing.T, limit time.Duration) {
	t.Helper()
	switch {
	case r.gaveUp:
		t.Errorf("the call was still running after %v, when the test gave up; want it ended with a non-OK status within [%v, %v]",
			r.elapsed.Round(time.Millisecond), limit, limit+TimingTolerance())
	case r.ok():
		t.Errorf("the call ended with OK after %v; want a non-OK status within [%v, %v]",
			r.elapsed.Round(time.Millisecond), limit, limit+TimingTolerance())
	default:
		grpcWantWithin(t, fmt.Sprintf("the call ended (HTTP %d, grpc-status %s)", r.status, grpcCodeName(r.grpcStatus())), r.elapsed, limit)
	}
}

// grpcStatus is the response's grpc-status: from the headers of a
// trailers-only response, else from the trailers; "" when there is none.
func (r grpcRawResult) grpcStatus() string { return r.wire().GRPCStatus() }

// grpcMessage is the response's grpc-message, percent-decoded.
func (r grpcRawResult) grpcMessage() string { return r.wire().GRPCMessage() }

// record records the HTTP status, grpc-status, where it came, the
// messages and the elapsed time.
func (r grpcRawResult) record(t *testing.T) {
	t.Helper()
	observe.Record(t, "http-status", r.status)
	observe.Record(t, "status", grpcCodeName(r.grpcStatus()))
	where := "none"
	switch {
	case r.header.Get("Grpc-Status") != "":
		where = "headers (trailers-only)"
	case r.trailer.Get("Grpc-Status") != "":
		where = "trailers"
	}
	observe.Record(t, "grpc-status-in", where)
	observe.Record(t, "messages", len(r.messages))
	observe.Record(t, "elapsed", r.elapsed.Round(time.Millisecond))
	if r.bodyErr != nil {
		observe.Record(t, "body-error", r.bodyErr)
	}
}

// grpcCodeName names a grpc-status value such as "4" (DeadlineExceeded);
// anything else is returned quoted.
func grpcCodeName(v string) string { return rawgrpc.CodeName(v) }

// rawCall sends one call of method of the echo service, with an empty
// EchoRequest, to authority through the Gateway, with grpc-timeout set to
// grpcTimeout verbatim when it is not empty (the client does not enforce
// it) and the given metadata pairs, and reads the whole response. The
// test gives up on the call after giveUp.
func (g *grpcTarget) rawCall(t *testing.T, giveUp time.Duration, authority, method, grpcTimeout string, md ...string) grpcRawResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), giveUp)
	defer cancel()
	payload, err := proto.Marshal(&echopb.EchoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	resp, err := rawgrpc.Call(ctx, g.raw, rawgrpc.Request{
		URL:       "http://" + g.addr + "/" + grpcEchoService + "/" + method,
		Authority: authority,
		Timeout:   grpcTimeout,
		Metadata:  md,
		Messages:  [][]byte{payload},
	})
	if err != nil {
		if ctx.Err() != nil {
			return grpcRawResult{header: http.Header{}, trailer: http.Header{}, elapsed: time.Since(start), gaveUp: true, bodyErr: err}
		}
		t.Fatalf("%s to %s through the Gateway %s: %v", method, authority, g.addr, err)
	}
	return grpcRawResult{
		status: resp.Status, header: resp.Header, trailer: resp.Trailer,
		messages: resp.Messages, partial: resp.Partial, bodyErr: resp.BodyErr,
		elapsed: time.Since(start), gaveUp: ctx.Err() != nil,
	}
}

// grpcLedgerEntry reads the backend's ledger of request id through the
// Gateway (the echo-backend's Admin.GetLedger, routed to the same single
// replica as the calls). ok is false when the backend has no entry for id.
func grpcLedgerEntry(t *testing.T, cc *grpc.ClientConn, id string) (e *echopb.LedgerEntry, ok bool) {
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

// grpcWaitAttemptEnded polls the backend's ledger until the only attempt of id
// has ended, for at most within, and returns it. It fails t if the backend
// saw no attempt, more than one, or one that did not end in time.
func grpcWaitAttemptEnded(t *testing.T, cc *grpc.ClientConn, id string, within time.Duration) *echopb.Attempt {
	t.Helper()
	deadline := time.Now().Add(within)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		e, ok := grpcLedgerEntry(t, cc, id)
		if ok && len(e.GetAttempts()) > 1 {
			t.Fatalf("the backend saw %d attempts of %s, want 1: %v", len(e.GetAttempts()), id, e)
		}
		if ok && len(e.GetAttempts()) == 1 && e.GetAttempts()[0].GetEnded() != nil {
			return e.GetAttempts()[0]
		}
		if time.Now().After(deadline) {
			if !ok {
				t.Fatalf("the backend has no record of %s", id)
			}
			t.Fatalf("the backend's attempt of %s had not ended %v after the call: %v", id, within, e)
		}
		<-tick.C // polling interval, not synchronisation
	}
}
