package grpcecho_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/gatewitness/gatewitness/echo-backend/echopb"
	"github.com/gatewitness/gatewitness/echo-backend/grpcecho"
	"github.com/gatewitness/gatewitness/echo-backend/h2tap"
	"github.com/gatewitness/gatewitness/echo-backend/ledger"
)

var (
	grpcTimeoutForm = regexp.MustCompile(`^[0-9]{1,8}[HMSmun]$`)
	connForm        = regexp.MustCompile(`^c[1-9][0-9]* 127\.0\.0\.1:[0-9]+$`)
)

// checkEcho checks what every echo of a call must say.
func checkEcho(t *testing.T, b *backend, r *echopb.EchoResponse, method, id string, attempt int) {
	t.Helper()
	if r.GetFullMethod() != method {
		t.Errorf("full_method = %q, want %q", r.GetFullMethod(), method)
	}
	if r.GetAuthority() != b.authority {
		t.Errorf("authority = %q, want %q", r.GetAuthority(), b.authority)
	}
	if got := r.GetMetadata()[":authority"].GetValues(); len(got) != 1 || got[0] != b.authority {
		t.Errorf("metadata[:authority] = %q, want [%q]", got, b.authority)
	}
	if got := r.GetMetadata()["x-test"].GetValues(); strings.Join(got, ",") != "one,two" {
		t.Errorf("metadata[x-test] = %q, want [one two]", got)
	}
	for _, k := range []string{h2tap.StreamHeader, h2tap.GRPCTimeoutHeader} {
		if _, ok := r.GetMetadata()[k]; ok {
			t.Errorf("metadata has the helper key %q", k)
		}
	}
	if r.GetRequestId() != id || int(r.GetAttempt()) != attempt {
		t.Errorf("request_id, attempt = %q, %d; want %q, %d", r.GetRequestId(), r.GetAttempt(), id, attempt)
	}
	p := r.GetPod()
	if p.GetNamespace() != testPod.Namespace || p.GetIngress() != testPod.Ingress ||
		p.GetService() != testPod.Service || p.GetPod() != testPod.Pod {
		t.Errorf("pod = %v, want %+v", p, testPod)
	}
	want := "grpc"
	if b.tls {
		want = "grpcs"
		ti := r.GetTls()
		if ti.GetVersion() != "TLSv1.3" || ti.GetNegotiatedProtocol() != "h2" || ti.GetServerName() != "echo.test" || ti.GetCipherSuite() == "" {
			t.Errorf("tls = %v; want TLSv1.3, h2, echo.test and a cipher suite", ti)
		}
	} else if r.GetTls() != nil {
		t.Errorf("tls = %v on a plaintext call", r.GetTls())
	}
	if r.GetListener() != want || !connForm.MatchString(r.GetConn()) || r.GetStream()%2 != 1 {
		t.Errorf("listener, conn, stream = %q, %q, %d; want %q, c<id> <peer>, an odd stream id",
			r.GetListener(), r.GetConn(), r.GetStream(), want)
	}
	if r.GetFault() != "" {
		t.Errorf("fault = %q, want none", r.GetFault())
	}
}

// checkDeadline checks the grpc-timeout and deadline of a call made with a
// deadline of at most d.
func checkDeadline(t *testing.T, r *echopb.EchoResponse, d time.Duration) {
	t.Helper()
	if !grpcTimeoutForm.MatchString(r.GetGrpcTimeout()) {
		t.Errorf("grpc_timeout = %q; want the grpc-timeout form, such as 4999883u", r.GetGrpcTimeout())
	}
	if got := r.GetMetadata()["grpc-timeout"].GetValues(); len(got) != 1 || got[0] != r.GetGrpcTimeout() {
		t.Errorf("metadata[grpc-timeout] = %q, want [%q]", got, r.GetGrpcTimeout())
	}
	left := r.GetDeadlineRemaining().AsDuration()
	if r.GetDeadlineRemaining() == nil || left <= 0 || left > d {
		t.Errorf("deadline_remaining = %v, want in (0, %v]", r.GetDeadlineRemaining(), d)
	}
}

// checkLedger checks the recorded attempt of a normal call.
func checkLedger(t *testing.T, b *backend, id, method string, messages int) ledger.Attempt {
	t.Helper()
	e := waitEntry(t, b.ledger, id, ended(1))
	a := e.Attempts[0]
	if a.Outcome != ledger.Answered || a.GRPCCode != "OK" || a.Status != 200 {
		t.Errorf("outcome, code, status = %s, %s, %d; want answered, OK, 200", a.Outcome, a.GRPCCode, a.Status)
	}
	if a.Method != method || a.Protocol != "HTTP/2.0" || a.Stream%2 != 1 || a.ConnRequest < 1 {
		t.Errorf("method, protocol, stream, connRequest = %q, %q, %d, %d", a.Method, a.Protocol, a.Stream, a.ConnRequest)
	}
	if !connForm.MatchString(a.Conn) {
		t.Errorf("conn = %q, want c<id> 127.0.0.1:<port>", a.Conn)
	}
	if a.HeadersSent == nil || a.HeadersSent.Before(a.Arrived) || a.Ended == nil || a.Ended.Before(*a.HeadersSent) {
		t.Errorf("arrived, headersSent, ended = %v, %v, %v; want in that order", a.Arrived, a.HeadersSent, a.Ended)
	}
	if got := a.Headers["x-test"]; strings.Join(got, ",") != "one,two" {
		t.Errorf("headers[x-test] = %q", got)
	}
	if _, ok := a.Headers[h2tap.StreamHeader]; ok {
		t.Errorf("ledger headers keep %s", h2tap.StreamHeader)
	}
	if len(a.Headers["grpc-timeout"]) != 1 {
		t.Errorf("headers[grpc-timeout] = %q, want the value received", a.Headers["grpc-timeout"])
	}
	if a.BodyBytes != int64(5*messages) {
		t.Errorf("bodyBytes = %d, want %d", a.BodyBytes, 5*messages)
	}
	return a
}

func TestEchoKinds(t *testing.T) {
	for _, useTLS := range []bool{false, true} {
		t.Run(fmt.Sprintf("tls=%t", useTLS), func(t *testing.T) {
			t.Parallel()
			b := startBackend(t, useTLS)
			ctx := func(id string) context.Context {
				c := withFault(timeout(t, 30*time.Second), id, "")
				return metadata.AppendToOutgoingContext(c, "x-test", "one", "x-test", "two")
			}

			t.Run("unary", func(t *testing.T) {
				var trailer metadata.MD
				r, err := b.echo.Unary(ctx("unary"), &echopb.EchoRequest{Payload: []byte("hello")}, grpc.Trailer(&trailer))
				if err != nil {
					t.Fatalf("Unary: %v", err)
				}
				checkEcho(t, b, r, echopb.Echo_Unary_FullMethodName, "unary", 1)
				checkDeadline(t, r, 30*time.Second)
				if string(r.GetPayload()) != "hello" || r.GetMessagesReceived() != 1 || r.GetMessageIndex() != 0 {
					t.Errorf("payload, received, index = %q, %d, %d", r.GetPayload(), r.GetMessagesReceived(), r.GetMessageIndex())
				}
				if got := trailer.Get(grpcecho.AttemptTrailer); len(got) != 1 || got[0] != "1" {
					t.Errorf("trailer %s = %q, want [1]", grpcecho.AttemptTrailer, got)
				}
				checkLedger(t, b, "unary", echopb.Echo_Unary_FullMethodName, 1)
			})

			t.Run("no deadline", func(t *testing.T) {
				r, err := b.echo.Unary(withFault(t.Context(), "nodeadline", ""), &echopb.EchoRequest{})
				if err != nil {
					t.Fatalf("Unary: %v", err)
				}
				if r.GetDeadlineRemaining() != nil || r.GetGrpcTimeout() != "" {
					t.Errorf("deadline_remaining, grpc_timeout = %v, %q; want none", r.GetDeadlineRemaining(), r.GetGrpcTimeout())
				}
				if _, ok := r.GetMetadata()["grpc-timeout"]; ok {
					t.Errorf("metadata has grpc-timeout without a deadline")
				}
			})

			t.Run("server stream", func(t *testing.T) {
				s, err := b.echo.ServerStream(ctx("server"), &echopb.EchoRequest{Payload: []byte("hello"), Messages: 3})
				if err != nil {
					t.Fatalf("ServerStream: %v", err)
				}
				for i := range 3 {
					r, err := s.Recv()
					if err != nil {
						t.Fatalf("Recv %d: %v", i, err)
					}
					checkEcho(t, b, r, echopb.Echo_ServerStream_FullMethodName, "server", 1)
					checkDeadline(t, r, 30*time.Second)
					if int(r.GetMessageIndex()) != i || string(r.GetPayload()) != "hello" {
						t.Errorf("message %d: index, payload = %d, %q", i, r.GetMessageIndex(), r.GetPayload())
					}
				}
				if _, err := s.Recv(); !errors.Is(err, io.EOF) {
					t.Fatalf("Recv after 3 messages: %v, want io.EOF", err)
				}
				checkLedger(t, b, "server", echopb.Echo_ServerStream_FullMethodName, 1)
			})

			t.Run("client stream", func(t *testing.T) {
				s, err := b.echo.ClientStream(ctx("client"))
				if err != nil {
					t.Fatalf("ClientStream: %v", err)
				}
				for i := range 4 {
					if err := s.Send(&echopb.EchoRequest{Payload: fmt.Appendf(nil, "msg-%d", i)}); err != nil {
						t.Fatalf("Send %d: %v", i, err)
					}
				}
				r, err := s.CloseAndRecv()
				if err != nil {
					t.Fatalf("CloseAndRecv: %v", err)
				}
				checkEcho(t, b, r, echopb.Echo_ClientStream_FullMethodName, "client", 1)
				if r.GetMessagesReceived() != 4 || string(r.GetPayload()) != "msg-3" {
					t.Errorf("received, payload = %d, %q; want 4, msg-3", r.GetMessagesReceived(), r.GetPayload())
				}
				checkLedger(t, b, "client", echopb.Echo_ClientStream_FullMethodName, 4)
			})

			t.Run("bidi stream", func(t *testing.T) {
				s, err := b.echo.BidiStream(ctx("bidi"))
				if err != nil {
					t.Fatalf("BidiStream: %v", err)
				}
				for i := range 3 {
					if err := s.Send(&echopb.EchoRequest{Payload: fmt.Appendf(nil, "msg-%d", i)}); err != nil {
						t.Fatalf("Send %d: %v", i, err)
					}
					r, err := s.Recv()
					if err != nil {
						t.Fatalf("Recv %d: %v", i, err)
					}
					checkEcho(t, b, r, echopb.Echo_BidiStream_FullMethodName, "bidi", 1)
					if int(r.GetMessageIndex()) != i || int(r.GetMessagesReceived()) != i+1 || string(r.GetPayload()) != fmt.Sprintf("msg-%d", i) {
						t.Errorf("answer %d: index, received, payload = %d, %d, %q", i, r.GetMessageIndex(), r.GetMessagesReceived(), r.GetPayload())
					}
				}
				if err := s.CloseSend(); err != nil {
					t.Fatalf("CloseSend: %v", err)
				}
				if _, err := s.Recv(); !errors.Is(err, io.EOF) {
					t.Fatalf("Recv after CloseSend: %v, want io.EOF", err)
				}
				checkLedger(t, b, "bidi", echopb.Echo_BidiStream_FullMethodName, 3)
			})

			t.Run("attempts count per id", func(t *testing.T) {
				for want := 1; want <= 3; want++ {
					var trailer metadata.MD
					r, err := b.echo.Unary(ctx("repeat"), &echopb.EchoRequest{}, grpc.Trailer(&trailer))
					if err != nil {
						t.Fatalf("Unary %d: %v", want, err)
					}
					if int(r.GetAttempt()) != want || trailer.Get(grpcecho.AttemptTrailer)[0] != fmt.Sprint(want) {
						t.Errorf("call %d: attempt %d, trailer %q", want, r.GetAttempt(), trailer.Get(grpcecho.AttemptTrailer))
					}
				}
			})
		})
	}
}

// TestLedgerCountsMessagesAsTheyArrive: a client stream's messages show in
// the ledger while the client still holds the stream open.
func TestLedgerCountsMessagesAsTheyArrive(t *testing.T) {
	b := startBackend(t, false)
	const id = "client-stream-open"
	stream, err := b.echo.ClientStream(withFault(timeout(t, 10*time.Second), id, ""))
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := stream.Send(&echopb.EchoRequest{Payload: []byte("x")}); err != nil {
			t.Fatal(err)
		}
	}
	e := waitEntry(t, b.ledger, id, func(e ledger.Entry) bool { return len(e.Attempts) == 1 && e.Attempts[0].Messages == 2 })
	a := e.Attempts[0]
	if a.Outcome != ledger.InFlight || a.BodyBytes != 2 || a.FirstMessage == nil || a.FirstMessage.Before(a.Arrived) {
		t.Errorf("attempt %+v: want in flight, 2 payload bytes, the first message's time at or after its arrival", a)
	}
	if _, err := stream.CloseAndRecv(); err != nil {
		t.Fatal(err)
	}
}
