package dataplane_test

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/gatewitness/gatewitness/gateway/dataplane"
	"github.com/gatewitness/gatewitness/gateway/dataplane/dataplanetest"
	"github.com/gatewitness/gatewitness/gateway/ir"
)

// The test-only breakages (breakages.go) each make the data plane go wrong
// the way a real one does; these tests show each does what the conformance
// tests' negative checks rely on, next to the healthy behaviour.

// startBrokenGateway is startGateway with breakages.
func startBrokenGateway(t *testing.T, b dataplanetest.Hooks, cfg *ir.Config) *dataplane.Server {
	t.Helper()
	s := dataplanetest.NewServer(dataplane.Options{}, b)
	t.Cleanup(func() { _ = s.Close() })
	if err := s.Apply(cfg); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	return s
}

// TestBreakageTransportResends: a backend that drops the second request
// of each connection without answering. With no retry stanza the healthy
// gateway answers 502 after that one attempt; with TransportResends the
// transport sends the request again on a new connection by itself, as a
// plain reverse proxy over net/http does, and the client gets 200.
func TestBreakageTransportResends(t *testing.T) {
	var hits atomic.Int32
	var mu sync.Mutex
	perConn := map[string]int{} // requests per backend connection
	backend := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		mu.Lock()
		perConn[r.RemoteAddr]++
		n := perConn[r.RemoteAddr]
		mu.Unlock()
		if r.Header.Get("X-Drop") != "" && n > 1 {
			if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
				conn.Close()
			}
			return
		}
		_, _ = io.WriteString(w, "ok")
	}))
	ref := ir.Backend{Name: "default/b:80", Weight: 1, Endpoints: []string{backend}}
	cfg := oneListener(route("r", 0, nil, prefixRule("/", nil, ref)))
	for _, tc := range []struct {
		name   string
		b      dataplanetest.Hooks
		status int
		hits   int32
	}{
		{"healthy", dataplanetest.Hooks{}, http.StatusBadGateway, 2},
		{"resends", dataplanetest.Hooks{TransportResends: true}, http.StatusOK, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hits.Store(0)
			addr := mustAddr(t, startBrokenGateway(t, tc.b, cfg), 80)
			// The first request opens the connection the second reuses.
			if resp, body := get(t, addr, "h", "/warm"); resp.StatusCode != http.StatusOK {
				t.Fatalf("warm-up: %d %s", resp.StatusCode, body)
			}
			resp, body := get(t, addr, "h", "/drop", "X-Drop", "1")
			if resp.StatusCode != tc.status || hits.Load() != tc.hits {
				t.Errorf("status %d (%s) after %d backend requests; want %d after %d", resp.StatusCode, body, hits.Load(), tc.status, tc.hits)
			}
		})
	}
}

// TestBreakageInactivityTimeouts: a body that keeps flowing, a chunk every
// 30ms for 1.2s, on rules with a 600ms timeouts.request or
// timeouts.backendRequest. The healthy gateway cuts it at the deadline;
// with InactivityTimeouts each chunk restarts the timer and the whole body
// comes through, as through HAProxy's timeout server.
func TestBreakageInactivityTimeouts(t *testing.T) {
	backend := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		for range 40 {
			_, _ = io.WriteString(w, "chunk\n")
			http.NewResponseController(w).Flush()
			select {
			case <-time.After(30 * time.Millisecond):
			case <-r.Context().Done():
				return
			}
		}
	}))
	ref := ir.Backend{Name: "default/b:80", Weight: 1, Endpoints: []string{backend}}
	cfg := oneListener(route("r", 0, nil,
		withTimeouts(prefixRule("/request", nil, ref), "600ms", ""),
		withTimeouts(prefixRule("/backend", nil, ref), "", "600ms"),
	))
	for _, tc := range []struct {
		name     string
		b        dataplanetest.Hooks
		complete bool
	}{
		{"healthy", dataplanetest.Hooks{}, false},
		{"inactivity", dataplanetest.Hooks{InactivityTimeouts: true}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := mustAddr(t, startBrokenGateway(t, tc.b, cfg), 80)
			for _, path := range []string{"/request", "/backend"} {
				resp, err := http.Get("http://" + addr + path)
				if err != nil {
					t.Fatalf("%s: %v", path, err)
				}
				body, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				complete := err == nil && strings.Count(string(body), "chunk") == 40
				if complete != tc.complete {
					t.Errorf("%s: %d chunks, read error %v; want the whole body: %v", path, strings.Count(string(body), "chunk"), err, tc.complete)
				}
			}
		})
	}
}

// TestBreakageNoNonIdempotentRetries: a POST answered 503 once is retried
// by the healthy gateway, and not with NoNonIdempotentRetries (nginx's
// default); a GET is retried either way.
func TestBreakageNoNonIdempotentRetries(t *testing.T) {
	var hits atomic.Int32
	backend := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hits.Add(1)%2 == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, "ok")
	}))
	ref := ir.Backend{Name: "default/b:80", Weight: 1, Endpoints: []string{backend}}
	cfg := oneListener(route("r", 0, nil, retryRule("/", []int{503}, 1, "1ms", ref)))
	for _, tc := range []struct {
		name      string
		b         dataplanetest.Hooks
		method    string
		wantRetry bool
	}{
		{"healthy POST", dataplanetest.Hooks{}, http.MethodPost, true},
		{"broken POST", dataplanetest.Hooks{NoNonIdempotentRetries: true}, http.MethodPost, false},
		{"broken GET", dataplanetest.Hooks{NoNonIdempotentRetries: true}, http.MethodGet, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hits.Store(0)
			addr := mustAddr(t, startBrokenGateway(t, tc.b, cfg), 80)
			req, err := http.NewRequest(tc.method, "http://"+addr+"/", strings.NewReader("body"))
			if err != nil {
				t.Fatal(err)
			}
			resp, _ := do(t, req)
			if got := resp.StatusCode == http.StatusOK && hits.Load() == 2; got != tc.wantRetry {
				t.Errorf("status %d after %d attempts; want a retry: %v", resp.StatusCode, hits.Load(), tc.wantRetry)
			}
		})
	}
}

// TestBreakageLateApply: through dataplanetest.LateApply, Apply returns at
// once and the listener is served only later, as by a data plane fed
// asynchronously.
func TestBreakageLateApply(t *testing.T) {
	const late = 300 * time.Millisecond
	b := startBackend(t, "b")
	s := dataplane.New(dataplane.Options{})
	t.Cleanup(func() { _ = s.Close() })
	apply := dataplanetest.LateApply(s.Apply, late, logr.Discard())
	start := time.Now()
	if err := apply(oneListener(route("r", 0, nil, prefixRule("/", nil, b.ref())))); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if _, ok := s.Addr("gw-ns", "gw", 80); ok && time.Since(start) < late {
		t.Fatal("the listener was served as Apply returned; want it served later")
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if addr, ok := s.Addr("gw-ns", "gw", 80); ok {
			if served := time.Since(start); served < late {
				t.Errorf("served %v after Apply, want no sooner than %v", served, late)
			}
			resp, body := get(t, addr, "h", "/")
			decode(t, resp, body)
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the late snapshot was never served")
		}
		time.Sleep(10 * time.Millisecond) // polling interval, not synchronisation
	}
}

// TestBreakageCloseTunnelOnBackendFIN: a WebSocket whose backend
// half-closes right after the 101. The healthy gateway passes the FIN on
// and keeps the tunnel's client side open until the client-fin timeout, so
// the backend sees its peer close no sooner than that; with
// CloseTunnelOnBackendFIN both sides are closed at once, as HAProxy does in
// HTTP mode, and the backend sees the close well before it.
func TestBreakageCloseTunnelOnBackendFIN(t *testing.T) {
	tt := ir.ConnectionTimeouts{
		Client:    5 * time.Second,
		Server:    5 * time.Second,
		Tunnel:    8 * time.Second,
		ClientFin: 1500 * time.Millisecond,
		ServerFin: 1500 * time.Millisecond,
	}
	for _, tc := range []struct {
		name     string
		b        dataplanetest.Hooks
		heldOpen bool
	}{
		{"healthy", dataplanetest.Hooks{}, true},
		{"closed at once", dataplanetest.Hooks{CloseTunnelOnBackendFIN: true}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := startUpgradeBackend(t)
			cfg := oneListener(route("r", 0, nil, prefixRule("/", nil, ir.Backend{Name: "default/b:80", Weight: 1, Endpoints: []string{b.addr}})))
			cfg.Gateways[0].Timeouts = tt
			addr := mustAddr(t, startBrokenGateway(t, tc.b, cfg), 80)
			conn, br, _ := upgrade(t, addr, "/halfclose")
			_ = conn.SetReadDeadline(time.Now().Add(tolerance))
			if _, err := br.ReadByte(); !errors.Is(err, io.EOF) {
				t.Fatalf("after the backend half-closed: read %v, want EOF", err)
			}
			var d time.Duration
			select {
			case d = <-b.halfClosed:
			case <-time.After(tt.ClientFin + tolerance + 5*time.Second):
				t.Fatal("the gateway never closed the backend connection after the backend half-closed")
			}
			if tc.heldOpen {
				within(t, "client side closed after the backend's half-close", d, tt.ClientFin)
			} else if d >= tt.ClientFin {
				t.Errorf("the backend saw its peer close %v after its half-close; want it at once, before the client-fin timeout %v", d, tt.ClientFin)
			}
		})
	}
}
