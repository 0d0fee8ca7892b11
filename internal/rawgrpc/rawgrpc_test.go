package rawgrpc_test

import (
	"bytes"
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/proto"

	"github.com/gatewitness/gatewitness/internal/rawgrpc"
)

// dial dials as a test's client does.
var dial = (&net.Dialer{Timeout: 10 * time.Second}).DialContext

// callCtx bounds a test's call.
func callCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestCallGRPCGo calls grpc-go's health service: a normal answer (one
// message, then grpc-status 0 in the trailers) and an error before any
// message (a trailers-only response).
func TestCallGRPCGo(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	healthpb.RegisterHealthServer(gs, health.NewServer())
	go gs.Serve(ln)
	t.Cleanup(gs.Stop)
	url := "http://" + ln.Addr().String() + "/grpc.health.v1.Health/Check"

	msg, err := proto.Marshal(&healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := rawgrpc.Call(callCtx(t), dial, rawgrpc.Request{URL: url, Messages: [][]byte{msg}})
	if err != nil {
		t.Fatal(err)
	}
	if !r.OK() || r.TrailersOnly() || len(r.Messages) != 1 || r.Partial != 0 || r.End != rawgrpc.EndStream || r.Refused() {
		t.Fatalf("Check: %+v; want OK with one message and the status in the trailers", r)
	}
	var resp healthpb.HealthCheckResponse
	if err := proto.Unmarshal(r.Messages[0], &resp); err != nil || resp.Status != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("Check answered %v (%v), want SERVING", &resp, err)
	}

	msg, _ = proto.Marshal(&healthpb.HealthCheckRequest{Service: "no.such.Service"})
	r, err = rawgrpc.Call(callCtx(t), dial, rawgrpc.Request{URL: url, Messages: [][]byte{msg}})
	if err != nil {
		t.Fatal(err)
	}
	if r.OK() || !r.TrailersOnly() || r.GRPCStatus() != "5" || rawgrpc.CodeName(r.GRPCStatus()) != "NotFound" ||
		r.GRPCMessage() == "" || len(r.Messages) != 0 {
		t.Errorf("Check of an unknown service: %+v (message %q); want a trailers-only NOT_FOUND", r, r.GRPCMessage())
	}
}

// TestCallSendsWhatItIsGiven checks the request on the wire (method, path,
// :authority, content-type, te, grpc-timeout verbatim, metadata, framed
// messages) and reads a response that ends inside a message.
func TestCallSendsWhatItIsGiven(t *testing.T) {
	var got *http.Request
	var body []byte
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r
		body, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/grpc")
		w.Header().Set("Trailer", "Grpc-Status, Grpc-Message")
		w.Write(rawgrpc.Frame([]byte("one")))
		w.Write(rawgrpc.Frame([]byte("two"))[:6]) // 5-byte prefix and one byte of "two"
		w.Header().Set("Grpc-Status", "4")
		w.Header().Set("Grpc-Message", "took%20too%20long")
	}))
	srv.Config.Protocols = new(http.Protocols)
	srv.Config.Protocols.SetUnencryptedHTTP2(true)
	srv.Start()
	t.Cleanup(srv.Close)

	r, err := rawgrpc.Call(callCtx(t), dial, rawgrpc.Request{
		URL: srv.URL + "/pkg.Svc/Method", Authority: "svc.example.com", Timeout: "99999999H",
		Metadata: []string{"x-a", "1", "x-a", "2"}, Messages: [][]byte{[]byte("hi"), nil},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got.Method != http.MethodPost || got.URL.Path != "/pkg.Svc/Method" || got.Host != "svc.example.com" || got.ProtoMajor != 2 {
		t.Errorf("request %s %s host %s proto %s", got.Method, got.URL.Path, got.Host, got.Proto)
	}
	if got.Header.Get("Content-Type") != "application/grpc" || got.Header.Get("Te") != "trailers" ||
		got.Header.Get("Grpc-Timeout") != "99999999H" || strings.Join(got.Header.Values("X-A"), ",") != "1,2" {
		t.Errorf("request headers %v", got.Header)
	}
	if want := append(rawgrpc.Frame([]byte("hi")), rawgrpc.Frame(nil)...); !bytes.Equal(body, want) {
		t.Errorf("request body %q, want %q", body, want)
	}
	if len(r.Messages) != 1 || string(r.Messages[0]) != "one" || r.Partial != 6 {
		t.Errorf("messages %q, partial %d; want [one] and 6", r.Messages, r.Partial)
	}
	if r.GRPCStatus() != "4" || r.TrailersOnly() || r.GRPCMessage() != "took too long" || r.OK() {
		t.Errorf("status %q (trailers-only %t) message %q; want 4 in the trailers, \"took too long\"", r.GRPCStatus(), r.TrailersOnly(), r.GRPCMessage())
	}
}

func TestSplit(t *testing.T) {
	body := append(append(rawgrpc.Frame([]byte("a")), rawgrpc.Frame(nil)...), 0, 0, 0)
	msgs, partial := rawgrpc.Split(body)
	if len(msgs) != 2 || string(msgs[0]) != "a" || len(msgs[1]) != 0 || partial != 3 {
		t.Errorf("Split = %q, %d; want [a, \"\"] and 3", msgs, partial)
	}
}

// TestCallReportsAReset reads a response whose server resets the stream
// after a message: the message is kept, the end is the reset, and the call
// is neither OK nor refused.
func TestCallReportsAReset(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/grpc")
		w.Write(rawgrpc.Frame([]byte("one")))
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler) // RST_STREAM INTERNAL_ERROR
	}))
	srv.Config.Protocols = new(http.Protocols)
	srv.Config.Protocols.SetUnencryptedHTTP2(true)
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.Start()
	t.Cleanup(srv.Close)

	r, err := rawgrpc.Call(callCtx(t), dial, rawgrpc.Request{URL: srv.URL + "/pkg.Svc/Method"})
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != http.StatusOK || len(r.Messages) != 1 || r.End != "RST_STREAM INTERNAL_ERROR" || r.BodyErr == nil || r.OK() || r.Refused() {
		t.Errorf("got status %d, %d messages, end %q, body error %v, refused %t; want 200, 1 message, RST_STREAM INTERNAL_ERROR, an error, not refused",
			r.Status, len(r.Messages), r.End, r.BodyErr, r.Refused())
	}
}
