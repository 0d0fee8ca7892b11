package grpcecho_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/gatewitness/gatewitness/echo-backend/echopb"
	"github.com/gatewitness/gatewitness/echo-backend/grpcecho"
	"github.com/gatewitness/gatewitness/echo-backend/ledger"
)

func TestCodeForHTTPStatus(t *testing.T) {
	for s, want := range map[int]codes.Code{
		200: codes.OK, 204: codes.OK, 299: codes.OK,
		400: codes.Internal, 401: codes.Unauthenticated, 403: codes.PermissionDenied,
		404: codes.Unimplemented, 429: codes.Unavailable, 502: codes.Unavailable,
		503: codes.Unavailable, 504: codes.Unavailable,
		100: codes.Unknown, 302: codes.Unknown, 409: codes.Unknown, 500: codes.Unknown, 599: codes.Unknown,
	} {
		if got := grpcecho.CodeForHTTPStatus(s); got != want {
			t.Errorf("CodeForHTTPStatus(%d) = %v, want %v", s, got, want)
		}
	}
}

// forBoth runs f against a plaintext and a TLS backend, in parallel.
func forBoth(t *testing.T, f func(t *testing.T, b *backend)) {
	for _, useTLS := range []bool{false, true} {
		t.Run(fmt.Sprintf("tls=%t", useTLS), func(t *testing.T) {
			t.Parallel()
			f(t, startBackend(t, useTLS))
		})
	}
}

// only returns the single attempt of id once it ended.
func only(t *testing.T, b *backend, id string) ledger.Attempt {
	t.Helper()
	return waitEntry(t, b.ledger, id, ended(1)).Attempts[0]
}

func TestDelay(t *testing.T) {
	forBoth(t, func(t *testing.T, b *backend) {
		const d = 300 * time.Millisecond
		start := time.Now()
		r, err := b.echo.Unary(withFault(timeout(t, 30*time.Second), "delay", "delay=300ms"), &echopb.EchoRequest{})
		if err != nil {
			t.Fatalf("Unary: %v", err)
		}
		within(t, "the delayed call", time.Since(start), d)
		if r.GetFault() != "delay=300ms" {
			t.Errorf("fault = %q, want delay=300ms", r.GetFault())
		}
		a := only(t, b, "delay")
		if a.Outcome != ledger.Answered || a.Fault != "delay=300ms" || a.HeadersSent == nil {
			t.Fatalf("attempt = %+v; want answered with fault delay=300ms and headers sent", a)
		}
		within(t, "arrival to headers", a.HeadersSent.Sub(a.Arrived), d)
	})
}

func TestBodyDelay(t *testing.T) {
	forBoth(t, func(t *testing.T, b *backend) {
		const d = 400 * time.Millisecond
		start := time.Now()
		s, err := b.echo.ServerStream(withFault(timeout(t, 30*time.Second), "body", "body-delay=400ms"), &echopb.EchoRequest{})
		if err != nil {
			t.Fatalf("ServerStream: %v", err)
		}
		if _, err := s.Header(); err != nil {
			t.Fatalf("Header: %v", err)
		}
		if _, err := s.Recv(); err != nil {
			t.Fatalf("Recv: %v", err)
		}
		within(t, "the first message", time.Since(start), d)
		a := only(t, b, "body")
		// The headers left before the body delay, the end after it.
		if gap := a.HeadersSent.Sub(a.Arrived); gap >= d {
			t.Errorf("headers were sent %v after arrival, not before the %v body delay", gap, d)
		}
		within(t, "headers to end", a.Ended.Sub(*a.HeadersSent), d)
	})
}

func TestDelayCancelled(t *testing.T) {
	forBoth(t, func(t *testing.T, b *backend) {
		t.Run("deadline", func(t *testing.T) {
			// Connect first: the deadline is for the call, not for dialing
			// (and a TLS handshake) on a loaded machine.
			if _, err := b.echo.Unary(timeout(t, 30*time.Second), &echopb.EchoRequest{}); err != nil {
				t.Fatalf("warm-up Unary: %v", err)
			}
			const deadline = time.Second
			start := time.Now()
			ctx, cancel := context.WithTimeout(withFault(t.Context(), "deadline", "delay=30s"), deadline)
			defer cancel()
			_, err := b.echo.Unary(ctx, &echopb.EchoRequest{})
			if status.Code(err) != codes.DeadlineExceeded {
				t.Fatalf("Unary: %v, want DEADLINE_EXCEEDED", err)
			}
			within(t, "the call", time.Since(start), deadline)
			a := only(t, b, "deadline")
			if a.Outcome != ledger.Cancelled || a.CancelledAt == nil || a.HeadersSent != nil {
				t.Fatalf("attempt = %+v; want cancelled before headers", a)
			}
			// The server's deadline is its arrival time plus the
			// grpc-timeout it received, which is what was left of the
			// client's deadline when the call was sent, rounded up: not
			// before the client's deadline, on the same clock.
			within(t, "the server's cancellation", a.CancelledAt.Sub(start), deadline)
		})
		t.Run("client cancel", func(t *testing.T) {
			ctx, cancel := context.WithCancel(withFault(t.Context(), "cancel", "body-delay=30s"))
			defer cancel()
			s, err := b.echo.ServerStream(ctx, &echopb.EchoRequest{})
			if err != nil {
				t.Fatalf("ServerStream: %v", err)
			}
			if _, err := s.Header(); err != nil {
				t.Fatalf("Header: %v", err)
			}
			cancel()
			if _, err := s.Recv(); status.Code(err) != codes.Canceled {
				t.Fatalf("Recv: %v, want CANCELED", err)
			}
			a := only(t, b, "cancel")
			if a.Outcome != ledger.Cancelled || a.HeadersSent == nil || a.GRPCCode != "CANCELLED" {
				t.Fatalf("attempt = %+v; want cancelled after headers with code CANCELLED", a)
			}
		})
	})
}

func TestGRPCStatus(t *testing.T) {
	forBoth(t, func(t *testing.T, b *backend) {
		for _, tc := range []struct {
			spec    string
			code    codes.Code
			message string
		}{
			{"grpc-status=14;grpc-message=try%20later;trailer=x-retry:1", codes.Unavailable, "try later"},
			{"grpc-status=resource_exhausted;grpc-message=slow down;trailer=x-retry:1", codes.ResourceExhausted, "slow down"},
			{"grpc-status=PermissionDenied,trailer=x-retry:1", codes.PermissionDenied, ""},
		} {
			id := "status-" + tc.code.String()
			var trailer, header metadata.MD
			_, err := b.echo.Unary(withFault(timeout(t, 30*time.Second), id, tc.spec), &echopb.EchoRequest{},
				grpc.Trailer(&trailer), grpc.Header(&header))
			st := status.Convert(err)
			if st.Code() != tc.code || st.Message() != tc.message {
				t.Errorf("%s: got %v %q, want %v %q", tc.spec, st.Code(), st.Message(), tc.code, tc.message)
			}
			if got := trailer.Get("x-retry"); len(got) != 1 || got[0] != "1" {
				t.Errorf("%s: trailer x-retry = %q, want [1]", tc.spec, got)
			}
			if got := trailer.Get(grpcecho.AttemptTrailer); len(got) != 1 || got[0] != "1" {
				t.Errorf("%s: trailer %s = %q, want [1]", tc.spec, grpcecho.AttemptTrailer, got)
			}
			a := only(t, b, id)
			if a.Outcome != ledger.Answered || a.GRPCCode != strings.ToUpper(codeName(tc.code)) || a.HeadersSent != nil {
				t.Errorf("%s: attempt = %+v; want answered trailers-only with code %v", tc.spec, a, tc.code)
			}
		}
	})
}

// codeName is the canonical name of c.
func codeName(c codes.Code) string {
	return map[codes.Code]string{
		codes.Unavailable: "UNAVAILABLE", codes.ResourceExhausted: "RESOURCE_EXHAUSTED",
		codes.PermissionDenied: "PERMISSION_DENIED", codes.Internal: "INTERNAL", codes.Unimplemented: "UNIMPLEMENTED",
	}[c]
}

func TestStatusAfterMessages(t *testing.T) {
	b := startBackend(t, false)
	s, err := b.echo.ServerStream(withFault(timeout(t, 30*time.Second), "midfail", "messages=2;grpc-status=ABORTED"), &echopb.EchoRequest{})
	if err != nil {
		t.Fatalf("ServerStream: %v", err)
	}
	for i := range 2 {
		if _, err := s.Recv(); err != nil {
			t.Fatalf("Recv %d: %v", i, err)
		}
	}
	if _, err := s.Recv(); status.Code(err) != codes.Aborted {
		t.Fatalf("Recv after 2 messages: %v, want ABORTED", err)
	}
}

func TestMessagesInterval(t *testing.T) {
	forBoth(t, func(t *testing.T, b *backend) {
		const interval = 150 * time.Millisecond
		t.Run("server stream", func(t *testing.T) {
			start := time.Now()
			// The fault's messages=4 wins over the request's 1.
			s, err := b.echo.ServerStream(withFault(timeout(t, 30*time.Second), "stream", "messages=4;interval=150ms"),
				&echopb.EchoRequest{Messages: 1})
			if err != nil {
				t.Fatalf("ServerStream: %v", err)
			}
			n := 0
			for {
				r, err := s.Recv()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatalf("Recv %d: %v", n, err)
				}
				if int(r.GetMessageIndex()) != n {
					t.Errorf("message %d has index %d", n, r.GetMessageIndex())
				}
				n++
			}
			if n != 4 {
				t.Errorf("got %d messages, want 4", n)
			}
			within(t, "4 messages 150ms apart", time.Since(start), 3*interval)
		})
		t.Run("bidi", func(t *testing.T) {
			s, err := b.echo.BidiStream(withFault(timeout(t, 30*time.Second), "bidi", "interval=150ms"))
			if err != nil {
				t.Fatalf("BidiStream: %v", err)
			}
			for i := range 3 {
				if err := s.Send(&echopb.EchoRequest{}); err != nil {
					t.Fatalf("Send %d: %v", i, err)
				}
			}
			if err := s.CloseSend(); err != nil {
				t.Fatalf("CloseSend: %v", err)
			}
			start := time.Now()
			for i := range 3 {
				if _, err := s.Recv(); err != nil {
					t.Fatalf("Recv %d: %v", i, err)
				}
				if i == 0 {
					start = time.Now()
				}
			}
			// The second and third answers each wait an interval after
			// the one before.
			within(t, "answers 2 and 3", time.Since(start), 2*interval-50*time.Millisecond)
		})
	})
}

func TestReset(t *testing.T) {
	forBoth(t, func(t *testing.T, b *backend) {
		t.Run("CANCEL before headers", func(t *testing.T) {
			_, err := b.echo.Unary(withFault(timeout(t, 30*time.Second), "cancel", "reset;reset-code=CANCEL"), &echopb.EchoRequest{})
			if status.Code(err) != codes.Canceled {
				t.Fatalf("Unary: %v, want CANCELED", err)
			}
			a := only(t, b, "cancel")
			if a.Outcome != ledger.Reset || a.HeadersSent != nil || a.Fault != "reset=before-headers;reset-code=CANCEL" {
				t.Errorf("attempt = %+v; want reset before headers", a)
			}
		})
		t.Run("REFUSED_STREAM after headers", func(t *testing.T) {
			_, err := b.echo.Unary(withFault(timeout(t, 30*time.Second), "refused", "reset=after-headers;reset-code=REFUSED_STREAM"),
				&echopb.EchoRequest{})
			if status.Code(err) != codes.Unavailable {
				t.Fatalf("Unary: %v, want UNAVAILABLE", err)
			}
			// grpc-go retries a refused stream once, transparently.
			e := waitEntry(t, b.ledger, "refused", ended(2))
			for _, a := range e.Attempts {
				if a.Outcome != ledger.Reset || a.HeadersSent == nil {
					t.Errorf("attempt %d = %+v; want reset after headers", a.Number, a)
				}
			}
		})
		t.Run("mid-body of a stream", func(t *testing.T) {
			s, err := b.echo.ServerStream(withFault(timeout(t, 30*time.Second), "mid", "reset=mid-body"), &echopb.EchoRequest{Messages: 3})
			if err != nil {
				t.Fatalf("ServerStream: %v", err)
			}
			if _, err := s.Recv(); err != nil {
				t.Fatalf("first Recv: %v", err)
			}
			if _, err := s.Recv(); status.Code(err) != codes.Internal {
				t.Fatalf("second Recv: %v, want INTERNAL (RST_STREAM INTERNAL_ERROR)", err)
			}
			if a := only(t, b, "mid"); a.Outcome != ledger.Reset {
				t.Errorf("attempt = %+v; want reset", a)
			}
		})
		t.Run("mid-body of a unary call", func(t *testing.T) {
			_, err := b.echo.Unary(withFault(timeout(t, 30*time.Second), "midunary", "reset=mid-body;reset-code=CANCEL"), &echopb.EchoRequest{})
			if status.Code(err) != codes.Canceled {
				t.Fatalf("Unary: %v, want CANCELED", err)
			}
			if a := only(t, b, "midunary"); a.Outcome != ledger.Reset || a.HeadersSent == nil {
				t.Errorf("attempt = %+v; want reset after headers", a)
			}
		})
	})
}

func TestGoAway(t *testing.T) {
	forBoth(t, func(t *testing.T, b *backend) {
		// grpc-go retries a call excluded by GOAWAY once, on a new
		// connection: the retry answers.
		r, err := b.echo.Unary(withFault(timeout(t, 30*time.Second), "goaway", "fail=1;goaway"), &echopb.EchoRequest{})
		if err != nil {
			t.Fatalf("Unary: %v", err)
		}
		if r.GetAttempt() != 2 {
			t.Errorf("answered attempt %d, want 2", r.GetAttempt())
		}
		e := waitEntry(t, b.ledger, "goaway", ended(2))
		first, second := e.Attempts[0], e.Attempts[1]
		if first.Outcome != ledger.GoAway || first.Fault != "goaway" || second.Outcome != ledger.Answered {
			t.Errorf("outcomes = %s (%q), %s; want goaway (goaway), answered", first.Outcome, first.Fault, second.Outcome)
		}
		if first.Conn == second.Conn {
			t.Errorf("both attempts came on %s; want a new connection after GOAWAY", first.Conn)
		}

		_, err = b.echo.Unary(withFault(timeout(t, 30*time.Second), "goaway-always", "goaway"), &echopb.EchoRequest{})
		if status.Code(err) != codes.Unavailable {
			t.Fatalf("Unary with goaway on every attempt: %v, want UNAVAILABLE", err)
		}
	})
}

func TestClose(t *testing.T) {
	forBoth(t, func(t *testing.T, b *backend) {
		_, err := b.echo.Unary(withFault(timeout(t, 30*time.Second), "close", "fail=1;close"), &echopb.EchoRequest{})
		if status.Code(err) != codes.Unavailable {
			t.Fatalf("Unary: %v, want UNAVAILABLE", err)
		}
		a := only(t, b, "close")
		if a.Outcome != ledger.Closed || a.HeadersSent != nil {
			t.Errorf("attempt = %+v; want closed without headers", a)
		}
		// The client reconnects; the second attempt answers.
		r, err := b.echo.Unary(withFault(timeout(t, 30*time.Second), "close", "fail=1;close"), &echopb.EchoRequest{})
		if err != nil || r.GetAttempt() != 2 || r.GetConn() == a.Conn {
			t.Fatalf("second call: %v, attempt %d on %q; want attempt 2 on a new connection", err, r.GetAttempt(), r.GetConn())
		}
	})
}

func TestFailN(t *testing.T) {
	forBoth(t, func(t *testing.T, b *backend) {
		const spec = "fail=2;grpc-status=UNAVAILABLE"
		for i := 1; i <= 3; i++ {
			r, err := b.echo.Unary(withFault(timeout(t, 30*time.Second), "fail", spec), &echopb.EchoRequest{})
			switch {
			case i <= 2 && status.Code(err) != codes.Unavailable:
				t.Errorf("call %d: %v, want UNAVAILABLE", i, err)
			case i == 3 && (err != nil || r.GetAttempt() != 3 || r.GetFault() != ""):
				t.Errorf("call 3: %v, attempt %d, fault %q; want a normal answer to attempt 3", err, r.GetAttempt(), r.GetFault())
			}
		}
		e := waitEntry(t, b.ledger, "fail", ended(3))
		for i, want := range []string{"UNAVAILABLE", "UNAVAILABLE", "OK"} {
			if e.Attempts[i].GRPCCode != want {
				t.Errorf("attempt %d code %q, want %q", i+1, e.Attempts[i].GRPCCode, want)
			}
		}
	})
}

func TestScript(t *testing.T) {
	forBoth(t, func(t *testing.T, b *backend) {
		const spec = "script=503|404|UNAVAILABLE+grpc-message:busy|delay:100ms|ok"
		want := []struct {
			code    codes.Code
			message string
		}{
			{codes.Unavailable, "gatewitness fault: HTTP status 503"},
			{codes.Unimplemented, "gatewitness fault: HTTP status 404"},
			{codes.Unavailable, "busy"},
			{codes.OK, ""},
			{codes.OK, ""},
		}
		for i, w := range want {
			r, err := b.echo.Unary(withFault(timeout(t, 30*time.Second), "script", spec), &echopb.EchoRequest{})
			if st := status.Convert(err); st.Code() != w.code || st.Message() != w.message {
				t.Errorf("call %d: %v %q, want %v %q", i+1, st.Code(), st.Message(), w.code, w.message)
			}
			if i == 3 && r.GetFault() != "delay=100ms" {
				t.Errorf("call 4: fault %q, want delay=100ms", r.GetFault())
			}
		}
		e := waitEntry(t, b.ledger, "script", ended(5))
		if e.Attempts[0].Fault != "status=503" || e.Attempts[4].Fault != "" {
			t.Errorf("faults recorded: %q ... %q; want status=503 ... none", e.Attempts[0].Fault, e.Attempts[4].Fault)
		}
	})
}

func TestBadSpec(t *testing.T) {
	b := startBackend(t, false)
	for _, tc := range []struct{ spec, names string }{
		{"delay=soon", `"delay"`},
		{"bogus=1", `"bogus"`},
		{"messages=0", `"messages"`},
		{"grpc-status=99", `"grpc-status"`},
		{"reset=sideways", `"reset"`},
	} {
		id := "bad-" + tc.spec
		_, err := b.echo.Unary(withFault(timeout(t, 30*time.Second), id, tc.spec), &echopb.EchoRequest{})
		st := status.Convert(err)
		if st.Code() != codes.InvalidArgument || !strings.Contains(st.Message(), tc.names) || !strings.Contains(st.Message(), "accepted") {
			t.Errorf("%s: %v %q; want INVALID_ARGUMENT naming %s and the accepted form", tc.spec, st.Code(), st.Message(), tc.names)
		}
		if a := only(t, b, id); a.Outcome != ledger.Rejected || a.GRPCCode != "INVALID_ARGUMENT" {
			t.Errorf("%s: attempt = %+v; want rejected", tc.spec, a)
		}
	}
	// A stream with a bad spec is rejected the same way.
	s, err := b.echo.BidiStream(withFault(timeout(t, 30*time.Second), "bad-bidi", "interval=-1s"))
	if err != nil {
		t.Fatalf("BidiStream: %v", err)
	}
	if _, err := s.Recv(); status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), `"interval"`) {
		t.Errorf("BidiStream Recv: %v; want INVALID_ARGUMENT naming interval", err)
	}
	// So is a request asking for too many messages.
	ss, err := b.echo.ServerStream(withFault(timeout(t, 30*time.Second), "bad-messages", ""), &echopb.EchoRequest{Messages: 51})
	if err != nil {
		t.Fatalf("ServerStream: %v", err)
	}
	if _, err := ss.Recv(); status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "messages is 51; accepted: 0 (one message) to 50") {
		t.Errorf("ServerStream Recv: %v; want INVALID_ARGUMENT naming messages and its range", err)
	}
}
