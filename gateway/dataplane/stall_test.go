package dataplane_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatewitness/gatewitness/gateway/dataplane"
	"github.com/gatewitness/gatewitness/gateway/ir"
	"github.com/gatewitness/gatewitness/internal/h2test"
)

// stallGateway serves one catch-all route to a backend that answers /big
// with size bytes and anything else with "ok", with the given limits; it
// returns the gateway's address.
func stallGateway(t *testing.T, limits dataplane.Limits, size int) string {
	t.Helper()
	big := make([]byte, size)
	addr := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/big" {
			w.Header().Set("Content-Length", fmt.Sprint(len(big)))
			_, _ = w.Write(big)
			return
		}
		_, _ = io.WriteString(w, "ok")
	}))
	ref := ir.Backend{Name: "default/stalled:8080", Weight: 1, Endpoints: []string{addr}}
	s := dataplane.New(dataplane.Options{Limits: limits})
	t.Cleanup(func() { s.Close() })
	if err := s.Apply(oneListener(route("r", 0, nil, rule([]gwv1.HTTPRouteMatch{pathMatch(gwv1.PathMatchPathPrefix, "/")}, ref)))); err != nil {
		t.Fatal(err)
	}
	return mustAddr(t, s, 80)
}

// zeroWindowStreams opens n streams asking for /big on one HTTP/2
// connection whose client grants no flow-control window, and reads until
// want of them have response headers: those are stalled in the gateway's
// write of their body. It returns the connection and the stalled streams.
func zeroWindowStreams(t *testing.T, gw string, n, want int) (*h2test.Conn, []uint32) {
	t.Helper()
	c := h2test.Dial(t, gw)
	if err := c.Framer.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 0}); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		c.WriteHeaders(uint32(2*i+1), true, ":method", "GET", ":scheme", "http", ":authority", "gw.test", ":path", "/big")
	}
	var stalled []uint32
	for len(stalled) < want {
		f, err := c.Framer.ReadFrame()
		if err != nil {
			t.Fatalf("reading frames with %d of %d streams answered 200: %v", len(stalled), want, err)
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				_ = c.Framer.WriteSettingsAck()
			}
		case *http2.MetaHeadersFrame:
			if f.PseudoValue("status") == "200" {
				stalled = append(stalled, f.StreamID)
			}
		}
	}
	return c, stalled
}

// secondClientServed wants another client of the same backend answered
// 200: at the latest within a few seconds (the slots are freed
// WriteStallFreesSlot after the writes stalled), and then at every one of
// five checks in a row.
func secondClientServed(t *testing.T, gw string) {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second}
	status := func() int {
		resp, err := client.Get("http://" + gw + "/small")
		if err != nil {
			t.Fatalf("second client: %v", err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	deadline := time.Now().Add(10 * time.Second)
	for got := status(); got != http.StatusOK; got = status() {
		if time.Now().After(deadline) {
			t.Fatalf("second client: status %d for 10s while the stalled client held its requests; want 200", got)
		}
		time.Sleep(20 * time.Millisecond) // polling interval
	}
	for i := range 5 {
		if got := status(); got != http.StatusOK {
			t.Errorf("second client, check %d after the first 200: status %d, want 200", i+1, got)
		}
	}
}

// TestZeroWindowClientStarvesNoOne is the availability probe: a client
// that grants no HTTP/2 window holds as many requests as the backend's
// cap allows, each stalled in the write of its answer. Another client of
// the same backend must still be answered 200: a stalled write frees its
// slot. The same for HTTP/1.1 clients that never read a large answer.
func TestZeroWindowClientStarvesNoOne(t *testing.T) {
	const capacity = 4
	limits := dataplane.Limits{MaxBackendRequests: capacity, WriteStallFreesSlot: 50 * time.Millisecond, ResponseWriteTimeout: time.Minute}
	t.Run("HTTP/2 zero window", func(t *testing.T) {
		gw := stallGateway(t, limits, 64<<10)
		zeroWindowStreams(t, gw, 2*capacity, capacity)
		secondClientServed(t, gw)
	})
	t.Run("HTTP/1.1 slow readers", func(t *testing.T) {
		gw := stallGateway(t, limits, 16<<20)
		for range capacity {
			c := dialGateway(t, gw)
			if tc, ok := c.(*net.TCPConn); ok {
				_ = tc.SetReadBuffer(4 << 10)
			}
			fmt.Fprint(c, "GET /big HTTP/1.1\r\nHost: gw.test\r\n\r\n")
			c.SetReadDeadline(time.Now().Add(20 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReaderSize(c, 4<<10), nil)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("slow reader: status %d, want 200", resp.StatusCode)
			}
			// The body is never read.
		}
		secondClientServed(t, gw)
	})
}

// TestStalledWriteIsBounded: a stream the client grants no window is
// reset no earlier than ResponseWriteTimeout after its write stalled, and
// not much later.
func TestStalledWriteIsBounded(t *testing.T) {
	const timeout, tolerance = 400 * time.Millisecond, 3 * time.Second
	gw := stallGateway(t, dataplane.Limits{ResponseWriteTimeout: timeout}, 64<<10)
	start := time.Now()
	c, stalled := zeroWindowStreams(t, gw, 1, 1)
	for {
		f, err := c.Framer.ReadFrame()
		if err != nil {
			t.Fatalf("the stalled stream was never reset: %v after %v", err, time.Since(start))
		}
		if rst, ok := f.(*http2.RSTStreamFrame); ok && rst.StreamID == stalled[0] {
			break
		}
	}
	if elapsed := time.Since(start); elapsed < timeout || elapsed > timeout+tolerance {
		t.Errorf("the stalled stream was reset after %v; want between %v and %v", elapsed, timeout, timeout+tolerance)
	}
}

// TestTunnelsHoldNoRequestSlot: with a cap of one request per backend, an
// open WebSocket tunnel leaves the slot to the next request, and
// MaxTunnels bounds the tunnels themselves.
func TestTunnelsHoldNoRequestSlot(t *testing.T) {
	b := startUpgradeBackend(t)
	ref := ir.Backend{Name: "default/ws:8080", Weight: 1, Endpoints: []string{b.addr}}
	s := dataplane.New(dataplane.Options{Limits: dataplane.Limits{MaxBackendRequests: 1, MaxTunnels: 1}})
	t.Cleanup(func() { s.Close() })
	if err := s.Apply(oneListener(route("r", 0, nil, rule([]gwv1.HTTPRouteMatch{pathMatch(gwv1.PathMatchPathPrefix, "/")}, ref)))); err != nil {
		t.Fatal(err)
	}
	gw := mustAddr(t, s, 80)
	upgrade(t, gw, "/echo") // held open until the test ends

	conn := dialGateway(t, gw)
	fmt.Fprint(conn, "GET /echo HTTP/1.1\r\nHost: example.com\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n")
	conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	// Had the open tunnel kept its request slot, the cap of one request
	// would have answered (503 naming the requests in flight) before the
	// backend was asked.
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "tunnels open") {
		t.Errorf("a second tunnel over MaxTunnels 1: status %d %q, want 503 naming the tunnels open", resp.StatusCode, body)
	}
}
