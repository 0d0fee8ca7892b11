package tests

// The calls the GRPCRoute timeout tests (GEP-3139) make and how they judge
// their end: the four kinds of call made to outlast a limit, and raw HTTP/2
// calls (internal/rawgrpc) that show a response's wire form and send
// grpc-timeout without enforcing it. grpcroute_target.go holds the Gateway
// they are made through; docs/semantics/grpcroute-timeouts.md says what the
// tests expect and why.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/gatewitness/gatewitness/contract/echowire"
	"github.com/gatewitness/gatewitness/contract/observe"
	"github.com/gatewitness/gatewitness/echo-backend/echopb"
	"github.com/gatewitness/gatewitness/internal/rawgrpc"
)

// grpcOutlastFault is a backend fault spec, per kind of call, that keeps the
// call going far longer than any limit the tests set: a unary call is
// answered after 10s, a server stream sends a message every 50ms for 10s.
// Client and bidirectional streams need no fault: the client keeps its side
// open, so the backend waits.
var grpcOutlastFault = map[string]string{
	"unary":         "delay=10s",
	"server-stream": "messages=200,interval=50ms",
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

// grpcWantWithin fails t unless a call that ended just now, elapsed after
// it began, ended within the timer window of limit (timerWindow). Earlier
// fails: limit is the time the call is given (maxStreamDuration, or the
// client's grpc-timeout), which users rely on. Later than the tolerance
// fails: the bound did not end the call.
func grpcWantWithin(t *testing.T, what string, elapsed, limit time.Duration) {
	t.Helper()
	lo, hi := timerWindow(limit)
	checkWindow(t, time.Now().Add(-elapsed), elapsed, lo, hi, what)
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
	return grpcRecvRest(stream)
}

// grpcRecvRest reads the rest of a stream's responses, to its end, and
// returns the messages read and the status (nil for OK).
func grpcRecvRest(stream grpc.ClientStream) (int, error) {
	n := 0
	for {
		if err := stream.RecvMsg(new(echopb.EchoResponse)); err != nil {
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
	lo, hi := timerWindow(limit)
	r.recordElapsed(t, observe.Within(r.elapsed, limit, lo, hi))
	switch {
	case r.gaveUp:
		t.Errorf("the call was still running after %v, when the test gave up; want it ended with a non-OK status within [%v, %v]",
			r.elapsed.Round(time.Millisecond), limit, limit+TimingTolerance())
		return
	case r.err == nil:
		t.Errorf("the call ended with OK after %v; want a non-OK status within [%v, %v]",
			r.elapsed.Round(time.Millisecond), limit, limit+TimingTolerance())
		return
	case r.refused():
		t.Errorf("the gateway refused the stream (%v) after %v; want a non-OK status within [%v, %v]: a refusal says the call was never processed and may be sent again, and gRPC clients do resend it (transparent retry; this client does not), so it does not end the call",
			status.Convert(r.err).Message(), r.elapsed.Round(time.Millisecond), limit, limit+TimingTolerance())
		return
	}
	grpcWantWithin(t, fmt.Sprintf("the call ended with %v", r.code()), r.elapsed, limit)
}

// refused reports whether the call ended because the server refused its
// stream or left it out of a GOAWAY, as grpc-go words it: the status
// grpc-go gives a call it would otherwise resend (testclient.GRPCNoResend
// stops the resend).
func (r grpcKindResult) refused() bool {
	msg := status.Convert(r.err).Message()
	return r.code() == codes.Unavailable &&
		(strings.Contains(msg, "RST_STREAM with error code: REFUSED_STREAM") || strings.Contains(msg, "the connection is draining"))
}

// grpcRawResult is a gRPC response as an HTTP/2 client sees it on the wire
// (rawgrpc.Response), with how long the call took.
type grpcRawResult struct {
	status   int // 0: no response headers came
	header   http.Header
	trailer  http.Header
	messages [][]byte
	partial  int    // bytes of an incomplete message at the end of the body
	bodyErr  error  // the stream did not end cleanly (a reset, say)
	end      string // how the stream ended (rawgrpc.Response.End)
	refused  bool   // the gateway said it did not process the call
	elapsed  time.Duration
	gaveUp   bool // the test's own give-up bound ended the call
}

// wire is r as a rawgrpc.Response, for its reading of the status.
func (r grpcRawResult) wire() *rawgrpc.Response {
	return &rawgrpc.Response{Status: r.status, Header: r.header, Trailer: r.trailer,
		Messages: r.messages, Partial: r.partial, BodyErr: r.bodyErr, End: r.end}
}

// how says how the call ended, for failure messages: the HTTP status and
// grpc-status, or, without response headers, the frame that ended it.
func (r grpcRawResult) how() string {
	switch {
	case r.refused && r.status == 0 && strings.HasPrefix(r.end, "RST_STREAM"):
		return fmt.Sprintf("the gateway refused the stream (%s)", r.end)
	case r.refused:
		return fmt.Sprintf("the gateway's %s left the stream out", r.end)
	case r.status == 0:
		return fmt.Sprintf("the stream ended with %s and no response headers", r.end)
	}
	return fmt.Sprintf("the call ended (HTTP %d, grpc-status %s, stream ended with %s)", r.status, grpcCodeName(r.grpcStatus()), r.end)
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
	case r.refused:
		t.Errorf("%s after %v; want a non-OK status within [%v, %v]: a refusal says the call was never processed and may be sent again, and gRPC clients do resend it (transparent retry), so it does not end the call",
			r.how(), r.elapsed.Round(time.Millisecond), limit, limit+TimingTolerance())
	default:
		grpcWantWithin(t, r.how(), r.elapsed, limit)
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
	observe.Record(t, "stream-end", r.end)
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
// it) and the given metadata pairs, and reads the whole response. The call
// is sent once, on a connection of its own (rawgrpc.Call): a refused
// stream or one a GOAWAY left out ends it, as what it was, instead of
// being sent again. The test gives up on the call after giveUp.
func (g *grpcTarget) rawCall(t *testing.T, giveUp time.Duration, authority, method, grpcTimeout string, md ...string) grpcRawResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), giveUp)
	defer cancel()
	payload, err := proto.Marshal(&echopb.EchoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	resp, err := rawgrpc.Call(ctx, rawgrpc.DialFunc(g.dial), rawgrpc.Request{
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
		end: resp.End, refused: resp.Refused(),
		elapsed: time.Since(start), gaveUp: resp.End == "" && ctx.Err() != nil,
	}
}
