package grpcecho_test

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"

	"github.com/gatewitness/gatewitness/echo-backend/echopb"
	"github.com/gatewitness/gatewitness/echo-backend/grpcecho"
	"github.com/gatewitness/gatewitness/echo-backend/ledger"
)

func TestGetLedger(t *testing.T) {
	b := startBackend(t, false)
	for range 2 {
		_, err := b.echo.Unary(withFault(timeout(t, 30*time.Second), "led", "fail=1;grpc-status=UNAVAILABLE"), &echopb.EchoRequest{Payload: []byte("abc")})
		_ = err // the first call fails on purpose; the ledger is what is checked
	}
	want := waitEntry(t, b.ledger, "led", ended(2))
	got, err := b.admin.GetLedger(timeout(t, 30*time.Second), &echopb.GetLedgerRequest{Id: "led"})
	if err != nil {
		t.Fatalf("GetLedger: %v", err)
	}
	if got.GetId() != "led" || len(got.GetAttempts()) != 2 || got.GetDropped() != 0 {
		t.Fatalf("GetLedger = %v; want 2 attempts of led", got)
	}
	for i, a := range got.GetAttempts() {
		w := want.Attempts[i]
		if int(a.GetNumber()) != w.Number || !a.GetArrived().AsTime().Equal(w.Arrived) ||
			!a.GetEnded().AsTime().Equal(*w.Ended) || a.GetOutcome() != string(w.Outcome) ||
			a.GetConn() != w.Conn || a.GetStream() != w.Stream || int(a.GetConnRequest()) != w.ConnRequest ||
			a.GetMethod() != w.Method || a.GetListener() != "grpc" || a.GetProtocol() != "HTTP/2.0" ||
			a.GetFault() != w.Fault || a.GetGrpcCode() != w.GRPCCode || a.GetBodyBytes() != 3 || int(a.GetStatus()) != w.Status {
			t.Errorf("attempt %d = %v; want %+v", i+1, a, w)
		}
		if w.HeadersSent == nil && a.GetHeadersSent() != nil || w.HeadersSent != nil && !a.GetHeadersSent().AsTime().Equal(*w.HeadersSent) {
			t.Errorf("attempt %d headers_sent = %v, want %v", i+1, a.GetHeadersSent(), w.HeadersSent)
		}
		if ids := a.GetHeaders()["x-gatewitness-id"].GetValues(); !slices.Equal(ids, []string{"led"}) {
			t.Errorf("attempt %d headers[x-gatewitness-id] = %q", i+1, ids)
		}
	}
	if got.GetAttempts()[0].GetOutcome() != "answered" || got.GetAttempts()[0].GetGrpcCode() != "UNAVAILABLE" ||
		got.GetAttempts()[1].GetGrpcCode() != "OK" {
		t.Errorf("outcomes = %v", got.GetAttempts())
	}

	_, err = b.admin.GetLedger(timeout(t, 30*time.Second), &echopb.GetLedgerRequest{Id: "never"})
	if status.Code(err) != codes.NotFound {
		t.Errorf("GetLedger(never): %v, want NOT_FOUND", err)
	}
	_, err = b.admin.GetLedger(timeout(t, 30*time.Second), &echopb.GetLedgerRequest{})
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "field id") {
		t.Errorf("GetLedger(\"\"): %v, want INVALID_ARGUMENT naming the id field", err)
	}
}

func TestLedgerEntryProtoCancelled(t *testing.T) {
	now := time.Now()
	later := now.Add(time.Second)
	p := grpcecho.LedgerEntryProto(ledger.Entry{ID: "x", Dropped: 4, Attempts: []ledger.Attempt{{
		Number: 1, Arrived: now, Ended: &later, CancelledAt: &later, Outcome: ledger.Cancelled,
	}}})
	a := p.GetAttempts()[0]
	if p.GetDropped() != 4 || a.GetHeadersSent() != nil || !a.GetCancelledAt().AsTime().Equal(later) || a.GetOutcome() != "cancelled" {
		t.Errorf("LedgerEntryProto = %v", p)
	}
}

// TestLedgerEntryProtoTruncated checks that what the ledger cut from an
// attempt reaches Admin clients, as it reaches the HTTP ledger's readers.
func TestLedgerEntryProtoTruncated(t *testing.T) {
	cut := []string{"headers: 1048576 bytes not kept", "path: 10 bytes not kept"}
	p := grpcecho.LedgerEntryProto(ledger.Entry{ID: "x", Attempts: []ledger.Attempt{
		{Number: 1, Arrived: time.Now(), Truncated: cut},
		{Number: 2, Arrived: time.Now()},
	}})
	if got := p.GetAttempts()[0].GetTruncated(); !slices.Equal(got, cut) {
		t.Errorf("attempt 1 truncated = %q, want %q", got, cut)
	}
	if got := p.GetAttempts()[1].GetTruncated(); got != nil {
		t.Errorf("whole attempt 2 truncated = %q, want none", got)
	}
}

func TestHealth(t *testing.T) {
	b := startBackend(t, false)
	health := healthpb.NewHealthClient(b.conn)
	ctx := timeout(t, 30*time.Second)

	set := func(service string, st echopb.ServingStatus) {
		t.Helper()
		r, err := b.admin.SetGRPCHealth(ctx, &echopb.SetGRPCHealthRequest{Service: service, Status: st})
		if err != nil || r.GetStatus() != st || r.GetService() != service {
			t.Fatalf("SetGRPCHealth(%q, %v) = %v, %v", service, st, r, err)
		}
	}
	check := func(service string, want healthpb.HealthCheckResponse_ServingStatus) {
		t.Helper()
		r, err := health.Check(ctx, &healthpb.HealthCheckRequest{Service: service})
		if err != nil || r.GetStatus() != want {
			t.Fatalf("Check(%q) = %v, %v; want %v", service, r, err, want)
		}
	}

	set("svc", echopb.ServingStatus_SERVING)
	check("svc", healthpb.HealthCheckResponse_SERVING)
	w, err := health.Watch(ctx, &healthpb.HealthCheckRequest{Service: "svc"})
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	next := func(want healthpb.HealthCheckResponse_ServingStatus) {
		t.Helper()
		r, err := w.Recv()
		if err != nil || r.GetStatus() != want {
			t.Fatalf("Watch Recv = %v, %v; want %v", r, err, want)
		}
	}
	next(healthpb.HealthCheckResponse_SERVING)
	set("svc", echopb.ServingStatus_NOT_SERVING)
	next(healthpb.HealthCheckResponse_NOT_SERVING)
	check("svc", healthpb.HealthCheckResponse_NOT_SERVING)
	set("svc", echopb.ServingStatus_SERVING)
	next(healthpb.HealthCheckResponse_SERVING)

	set("", echopb.ServingStatus_NOT_SERVING)
	check("", healthpb.HealthCheckResponse_NOT_SERVING)

	_, err = b.admin.SetGRPCHealth(ctx, &echopb.SetGRPCHealthRequest{Service: "svc", Status: 9})
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "SERVING, NOT_SERVING") {
		t.Errorf("SetGRPCHealth(9): %v, want INVALID_ARGUMENT with the accepted statuses", err)
	}
	check("svc", healthpb.HealthCheckResponse_SERVING)
}

func TestHTTPHealth(t *testing.T) {
	b := startBackend(t, false)
	ctx := timeout(t, 30*time.Second)
	r, err := b.admin.SetHTTPHealth(ctx, &echopb.SetHTTPHealthRequest{Status: 503})
	if err != nil || r.GetStatus() != 503 || b.controls.HTTPHealth() != 503 {
		t.Fatalf("SetHTTPHealth(503) = %v, %v; controls say %d", r, err, b.controls.HTTPHealth())
	}
	_, err = b.admin.SetHTTPHealth(ctx, &echopb.SetHTTPHealthRequest{Status: 42})
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "200 to 599") {
		t.Errorf("SetHTTPHealth(42): %v, want INVALID_ARGUMENT with the accepted range", err)
	}
	if b.controls.HTTPHealth() != 503 {
		t.Errorf("a rejected status changed the health to %d", b.controls.HTTPHealth())
	}
}

// tcpSwitch is a control.Switch that records its state, standing in for the
// TCP echo listener.
type tcpSwitch struct {
	mu   sync.Mutex
	open bool
	fail error
}

func (s *tcpSwitch) SetOpen(open bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return s.fail
	}
	s.open = open
	return nil
}

func (s *tcpSwitch) IsOpen() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.open
}

func TestSetTCPOpen(t *testing.T) {
	b := startBackend(t, false)
	ctx := timeout(t, 30*time.Second)
	_, err := b.admin.SetTCPOpen(ctx, &echopb.SetTCPOpenRequest{Open: true})
	if status.Code(err) != codes.FailedPrecondition {
		t.Errorf("SetTCPOpen without a TCP listener: %v, want FAILED_PRECONDITION", err)
	}
	sw := &tcpSwitch{open: true}
	b.controls.SetTCPSwitch(sw)
	for _, open := range []bool{false, true, false} {
		r, err := b.admin.SetTCPOpen(ctx, &echopb.SetTCPOpenRequest{Open: open})
		if err != nil || r.GetOpen() != open || sw.IsOpen() != open {
			t.Fatalf("SetTCPOpen(%t) = %v, %v; switch open %t", open, r, err, sw.IsOpen())
		}
	}
	sw.mu.Lock()
	sw.fail = errors.New("address in use")
	sw.mu.Unlock()
	_, err = b.admin.SetTCPOpen(ctx, &echopb.SetTCPOpenRequest{Open: true})
	if status.Code(err) != codes.Internal || !strings.Contains(err.Error(), "address in use") {
		t.Errorf("SetTCPOpen with a failing listener: %v, want INTERNAL with the cause", err)
	}
}

func TestReflection(t *testing.T) {
	b := startBackend(t, false)
	s, err := reflectionpb.NewServerReflectionClient(b.conn).ServerReflectionInfo(timeout(t, 30*time.Second))
	if err != nil {
		t.Fatalf("ServerReflectionInfo: %v", err)
	}
	if err := s.Send(&reflectionpb.ServerReflectionRequest{
		MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{},
	}); err != nil {
		t.Fatalf("Send: %v", err)
	}
	r, err := s.Recv()
	if err != nil {
		t.Fatalf("Recv: %v", err)
	}
	var names []string
	for _, svc := range r.GetListServicesResponse().GetService() {
		names = append(names, svc.GetName())
	}
	for _, want := range []string{
		"gatewitness.echo.v1.Echo", "gatewitness.echo.v1.Admin", "grpc.health.v1.Health",
		"gateway_api_conformance.echo_basic.grpcecho.GrpcEcho",
	} {
		if !slices.Contains(names, want) {
			t.Errorf("reflection lists %q; want it to include %s", names, want)
		}
	}
}

func TestMetadataBound(t *testing.T) {
	b := startBackend(t, false)
	ctx := metadata.AppendToOutgoingContext(timeout(t, 30*time.Second), "x-big", strings.Repeat("a", 300<<10))
	_, err := b.echo.Unary(ctx, &echopb.EchoRequest{})
	if err == nil {
		t.Fatalf("Unary with 300 KiB of metadata succeeded; want it refused")
	}
	// Metadata within the bound is fine.
	ctx = metadata.AppendToOutgoingContext(timeout(t, 30*time.Second), "x-big", strings.Repeat("a", 100<<10))
	if _, err := b.echo.Unary(ctx, &echopb.EchoRequest{}); err != nil {
		t.Fatalf("Unary with 100 KiB of metadata: %v", err)
	}
}
