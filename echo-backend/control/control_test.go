package control_test

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/gatewitness/gatewitness/echo-backend/control"
)

const (
	serving    = healthpb.HealthCheckResponse_SERVING
	notServing = healthpb.HealthCheckResponse_NOT_SERVING
)

func TestGRPCServices(t *testing.T) {
	c := control.New()
	if got, want := c.GRPCServices(), map[string]string{"": "SERVING"}; !maps.Equal(got, want) {
		t.Errorf("new controls: GRPCServices() = %v, want %v", got, want)
	}
	for _, s := range []struct {
		name   string
		status healthpb.HealthCheckResponse_ServingStatus
	}{{"foo", notServing}, {"bar", serving}, {"", notServing}, {"foo", healthpb.HealthCheckResponse_UNKNOWN}} {
		if err := c.SetGRPCHealth(s.name, s.status); err != nil {
			t.Fatalf("SetGRPCHealth(%q, %v): %v", s.name, s.status, err)
		}
	}
	want := map[string]string{"": "NOT_SERVING", "foo": "UNKNOWN", "bar": "SERVING"}
	if got := c.GRPCServices(); !maps.Equal(got, want) {
		t.Errorf("GRPCServices() = %v, want %v", got, want)
	}
	for name, want := range map[string]string{"bar": "SERVING", "": "NOT_SERVING", "never.Set": "SERVICE_UNKNOWN"} {
		if got := c.GRPCStatus(name); got != want {
			t.Errorf("GRPCStatus(%q) = %q, want %q", name, got, want)
		}
	}

	// Rejected settings change nothing.
	for _, tc := range []struct {
		name   string
		status healthpb.HealthCheckResponse_ServingStatus
		want   []string
	}{
		{"baz", 9, []string{"status 9", "SERVING, NOT_SERVING"}},
		{strings.Repeat("s", control.MaxGRPCServiceNameLen+1), serving, []string{"1025 bytes", "at most 1024 bytes"}},
	} {
		err := c.SetGRPCHealth(tc.name, tc.status)
		for _, w := range tc.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("SetGRPCHealth(%.10q, %v): %v, want an error naming %q", tc.name, tc.status, err, w)
			}
		}
	}
	if got := c.GRPCServices(); !maps.Equal(got, want) {
		t.Errorf("after rejected settings: GRPCServices() = %v, want %v", got, want)
	}
}

func TestGRPCServicesBounded(t *testing.T) {
	c := control.New()
	for i := range control.MaxGRPCServices - 1 { // "" is the first
		if err := c.SetGRPCHealth(fmt.Sprint("svc-", i), serving); err != nil {
			t.Fatalf("service %d: %v", i, err)
		}
	}
	err := c.SetGRPCHealth("one-too-many", serving)
	if err == nil || !strings.Contains(err.Error(), "one-too-many") || !strings.Contains(err.Error(), "at most 1024") {
		t.Errorf("service %d: %v, want an error naming it and the limit", control.MaxGRPCServices+1, err)
	}
	// A service already set may still change.
	if err := c.SetGRPCHealth("svc-7", notServing); err != nil {
		t.Errorf("changing a known service at the limit: %v", err)
	}
	got := c.GRPCServices()
	if len(got) != control.MaxGRPCServices || got["svc-7"] != "NOT_SERVING" || got["one-too-many"] != "" {
		t.Errorf("GRPCServices() has %d names, svc-7 %q, one-too-many %q; want %d, NOT_SERVING, absent",
			len(got), got["svc-7"], got["one-too-many"], control.MaxGRPCServices)
	}
}

// Setting and listing at once is safe, and a listed name always has its
// status.
func TestGRPCServicesConcurrent(t *testing.T) {
	c := control.New()
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 50 {
				if err := c.SetGRPCHealth(fmt.Sprintf("w%d-%d", w, i), serving); err != nil {
					t.Error(err)
					return
				}
			}
		})
		wg.Go(func() {
			for range 50 {
				for name, st := range c.GRPCServices() {
					if st != "SERVING" {
						t.Errorf("service %q listed as %s", name, st)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	if n := len(c.GRPCServices()); n != 1+4*50 {
		t.Errorf("%d services listed, want %d", n, 1+4*50)
	}
}

func TestHTTPHealth(t *testing.T) {
	c := control.New()
	if got := c.HTTPHealth(); got != 200 {
		t.Errorf("new controls: HTTPHealth() = %d, want 200", got)
	}
	if err := c.SetHTTPHealth(503); err != nil || c.HTTPHealth() != 503 {
		t.Errorf("SetHTTPHealth(503): %v, now %d", err, c.HTTPHealth())
	}
	for _, code := range []int{99, 103, 199, 600} {
		if err := c.SetHTTPHealth(code); err == nil || !strings.Contains(err.Error(), "200 to 599") {
			t.Errorf("SetHTTPHealth(%d): %v, want an error naming 200 to 599", code, err)
		}
	}
	if got := c.HTTPHealth(); got != 503 {
		t.Errorf("after rejected settings: HTTPHealth() = %d, want 503", got)
	}
}

// TestRefusingResetsTheNextConnections: with RefuseConnections(1), the
// first connection is reset as it is accepted, the second is
// accepted; out-of-bounds counts are refused with the accepted form.
func TestRefusingResetsTheNextConnections(t *testing.T) {
	c := control.New()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln = c.Refusing(ln)
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		conn, err := ln.Accept()
		if err == nil {
			accepted <- conn
		}
	}()
	if err := c.RefuseConnections(1); err != nil {
		t.Fatal(err)
	}
	// The reset may come before the dialer has seen the handshake end
	// (the dial fails) or after (the first read fails).
	first, err := net.Dial("tcp", ln.Addr().String())
	if err == nil {
		defer first.Close()
		_ = first.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, err = first.Read(make([]byte, 1))
	}
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("the refused connection: %v; want a reset", err)
	}
	second, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	select {
	case conn := <-accepted:
		conn.Close()
	case <-time.After(10 * time.Second):
		t.Fatal("the second connection was not accepted")
	}
	if pending, refused := c.Refusals(); pending != 0 || refused != 1 {
		t.Errorf("Refusals() = %d, %d; want 0 pending, 1 refused", pending, refused)
	}
	for _, n := range []int{-1, control.MaxRefusals + 1} {
		if err := c.RefuseConnections(n); err == nil || !strings.Contains(err.Error(), "accepted: a count from 0 to") {
			t.Errorf("RefuseConnections(%d) = %v; want an error with the accepted form", n, err)
		}
	}
}
