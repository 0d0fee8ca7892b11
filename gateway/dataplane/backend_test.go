package dataplane_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatewitness/gatewitness/gateway/dataplane"
	"github.com/gatewitness/gatewitness/gateway/ir"
	"github.com/gatewitness/gatewitness/internal/testcert"
)

func TestErrorAnswers(t *testing.T) {
	b := startBackend(t, "b")
	invalid := ir.Backend{Name: "default/missing:80", Weight: 1, Invalid: true}
	zero := b.ref()
	zero.Weight = 0
	empty := ir.Backend{Name: "default/empty:80", Weight: 1}
	// A socket that was open and is closed again refuses connections.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := ir.Backend{Name: "default/refused:80", Weight: 1, Endpoints: []string{ln.Addr().String()}}
	ln.Close()

	addr := mustAddr(t, startGateway(t, oneListener(route("r", 0, nil,
		prefixRule("/none", nil),
		prefixRule("/invalid", nil, invalid),
		prefixRule("/zero", nil, zero),
		prefixRule("/no-endpoints", nil, empty),
		prefixRule("/refused", nil, refused),
		prefixRule("/half", nil, invalid, b.ref()),
	))), 80)
	tests := []struct {
		path   string
		status int
	}{
		{"/none", 500},
		{"/invalid", 500},
		{"/zero", 500},
		{"/no-endpoints", 503},
		{"/refused", 502},
		{"/unrouted", 404},
	}
	for _, tc := range tests {
		if resp, body := get(t, addr, "gw.test", tc.path); resp.StatusCode != tc.status {
			t.Errorf("%s: status %d, want %d (body %q)", tc.path, resp.StatusCode, tc.status, body)
		}
	}
	// Requests routed to an invalid backend get 500, the others go
	// through: with weights 1:1, 200 requests show both.
	counts := map[int]int{}
	for range 200 {
		resp, _ := get(t, addr, "gw.test", "/half")
		counts[resp.StatusCode]++
	}
	if counts[500] == 0 || counts[200] == 0 || counts[500]+counts[200] != 200 {
		t.Errorf("/half: statuses %v, want both 200 and 500 and nothing else", counts)
	}
}

func TestWeightsAndRoundRobin(t *testing.T) {
	b1, b2, b3 := startBackend(t, "b1"), startBackend(t, "b2"), startBackend(t, "b3")
	w1, w3 := b1.ref(), b2.ref()
	w3.Weight = 3
	never := b3.ref()
	never.Weight = 0
	// One backend with three endpoints: three servers named e0..e2.
	var eps []string
	for i := range 3 {
		eps = append(eps, startBackend(t, fmt.Sprintf("e%d", i)).addr)
	}
	multi := ir.Backend{Name: "default/multi:80", Weight: 1, Endpoints: eps}
	addr := mustAddr(t, startGateway(t, oneListener(route("r", 0, nil,
		prefixRule("/weighted", nil, w1, w3, never),
		prefixRule("/rr", nil, multi),
	))), 80)

	// Weights 1:3:0 over n requests: the share of b2 is 0.75 with a
	// standard deviation of sqrt(0.75*0.25/n) ~ 0.0097 for n=2000; the
	// window is five deviations wide on each side.
	const n = 2000
	counts := map[string]int{}
	for range n {
		resp, body := get(t, addr, "gw.test", "/weighted")
		counts[decode(t, resp, body).Backend]++
	}
	if share := float64(counts["b2"]) / n; share < 0.70 || share > 0.80 || counts["b3"] != 0 || counts["b1"]+counts["b2"] != n {
		t.Errorf("weights 1:3:0 gave %v over %d requests; want b2 share in [0.70, 0.80] and no b3", counts, n)
	}

	// Sequential requests cycle through the endpoints.
	seen := map[string]int{}
	for range 30 {
		resp, body := get(t, addr, "gw.test", "/rr")
		seen[decode(t, resp, body).Backend]++
	}
	if seen["e0"] != 10 || seen["e1"] != 10 || seen["e2"] != 10 {
		t.Errorf("30 requests over 3 endpoints: %v, want 10 each", seen)
	}
}

// h2cClient speaks HTTP/2 with prior knowledge over cleartext.
func h2cClient() *http.Client {
	tr := &http.Transport{Protocols: new(http.Protocols)}
	tr.Protocols.SetUnencryptedHTTP2(true)
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

func TestProtocols(t *testing.T) {
	b := startBackend(t, "b")
	h2cRef := b.ref()
	h2cRef.AppProtocol = "kubernetes.io/h2c"
	addr := mustAddr(t, startGateway(t, oneListener(route("r", 0, nil,
		prefixRule("/h1", nil, b.ref()),
		prefixRule("/h2c", nil, h2cRef),
	))), 80)
	tests := []struct {
		name         string
		client       *http.Client
		path         string
		clientProto  string
		backendProto string
	}{
		{"h1 client, h1 backend", noRedirects, "/h1", "HTTP/1.1", "HTTP/1.1"},
		{"h1 client, h2c backend", noRedirects, "/h2c", "HTTP/1.1", "HTTP/2.0"},
		{"h2c client, h1 backend", h2cClient(), "/h1", "HTTP/2.0", "HTTP/1.1"},
		{"h2c client, h2c backend", h2cClient(), "/h2c", "HTTP/2.0", "HTTP/2.0"},
	}
	for _, tc := range tests {
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+tc.path, strings.NewReader("body"))
		req.Host = "gw.test"
		resp, err := tc.client.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		body := make([]byte, 4096)
		n, _ := resp.Body.Read(body)
		resp.Body.Close()
		e := decode(t, resp, body[:n])
		if resp.Proto != tc.clientProto || e.Proto != tc.backendProto || e.Body != "body" || e.Host != "gw.test" {
			t.Errorf("%s: client %s, backend %s body %q host %s; want %s, %s, \"body\", gw.test",
				tc.name, resp.Proto, e.Proto, e.Body, e.Host, tc.clientProto, tc.backendProto)
		}
	}
}

func TestApplyReportsListenersItCannotServe(t *testing.T) {
	b := startBackend(t, "b")
	cfg := &ir.Config{Gateways: []ir.Gateway{{
		Namespace: "gw-ns", Name: "gw",
		Listeners: []ir.Listener{
			{Name: "tcp", Port: 81, Protocol: gwv1.TCPProtocolType},
			{Name: "https-no-cert", Port: 443, Protocol: gwv1.HTTPSProtocolType},
			{Name: "good", Port: 80, Protocol: gwv1.HTTPProtocolType, HTTPRoutes: []ir.HTTPRoute{route("r", 0, nil, rule(nil, b.ref()))}},
			{Name: "mixed", Port: 80, Protocol: gwv1.HTTPSProtocolType, Hostname: "x.org", Certificates: []tls.Certificate{testcert.New(t, "x.org").TLS}},
		},
	}}}
	s := dataplane.New(dataplane.Options{})
	defer s.Close()
	err := s.Apply(cfg)
	if err == nil {
		t.Fatal("Apply: no error, want one naming the listeners it cannot serve")
	}
	for _, want := range []string{
		`gw-ns/gw listener "tcp" (port 81): protocol "TCP" is not served; accepted protocols are HTTP, HTTPS and TLS (passthrough)`,
		`listener "https-no-cert" (port 443): protocol HTTPS needs at least one certificate`,
		`listener "mixed" (port 80): protocol HTTPS conflicts with another listener`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Apply error %q does not contain %q", err, want)
		}
	}
	for _, port := range []int32{81, 443} {
		if addr, ok := s.Addr("gw-ns", "gw", port); ok {
			t.Errorf("Addr(port %d) = %s, want not served", port, addr)
		}
	}
	// The good listener is served all the same.
	resp, body := get(t, mustAddr(t, s, 80), "gw.test", "/")
	decode(t, resp, body)
}

// TestConfigSwapUnderTraffic swaps snapshots while clients send requests
// over kept-alive HTTP/1.1 and h2c connections: no request may fail, and
// after the last swap every request sees the last snapshot. Sockets of
// ports that come and go do not disturb the steady one.
func TestConfigSwapUnderTraffic(t *testing.T) {
	b1, b2 := startBackend(t, "b1"), startBackend(t, "b2")
	cfgFor := func(b *testBackend, extraPort bool) *ir.Config {
		cfg := oneListener(route("r", 0, nil, rule(nil, b.ref())))
		if extraPort {
			cfg.Gateways[0].Listeners = append(cfg.Gateways[0].Listeners, ir.Listener{
				Name: "extra", Port: 8080, Protocol: gwv1.HTTPProtocolType,
				HTTPRoutes: []ir.HTTPRoute{route("r", 0, nil, rule(nil, b.ref()))},
			})
		}
		return cfg
	}
	s := startGateway(t, cfgFor(b1, false))
	addr := mustAddr(t, s, 80)

	ctx, cancel := context.WithCancel(context.Background())
	var (
		wg       sync.WaitGroup
		requests atomic.Int64
		mu       sync.Mutex
		failures []string
		served   = map[string]int{}
		progress = make(chan struct{}, 64)
	)
	for i := range 4 {
		client := noRedirects
		if i%2 == 1 {
			client = h2cClient()
		}
		wg.Go(func() {
			for ctx.Err() == nil {
				req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/", nil)
				req.Host = "gw.test"
				resp, err := client.Do(req)
				var backend string
				if err == nil {
					body := make([]byte, 4096)
					n, _ := resp.Body.Read(body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						err = fmt.Errorf("status %d: %q", resp.StatusCode, body[:n])
					} else if backend = strings.Split(strings.Split(string(body[:n]), `"backend":"`)[1], `"`)[0]; backend == "" {
						err = fmt.Errorf("no backend in %q", body[:n])
					}
				}
				requests.Add(1)
				select {
				case progress <- struct{}{}:
				default:
				}
				mu.Lock()
				if err != nil {
					failures = append(failures, err.Error())
				} else {
					served[backend]++
				}
				mu.Unlock()
			}
		})
	}
	// 60 swaps, with at least 10 requests answered between two swaps.
	for i := range 60 {
		b := b1
		if i%2 == 1 {
			b = b2
		}
		if err := s.Apply(cfgFor(b, i%3 == 0)); err != nil {
			t.Fatalf("Apply %d: %v", i, err)
		}
		for range 10 {
			select {
			case <-progress:
			case <-time.After(30 * time.Second):
				t.Fatalf("swap %d: clients made no progress in 30s", i)
			}
		}
	}
	if err := s.Apply(cfgFor(b2, false)); err != nil {
		t.Fatal(err)
	}
	if got, ok := s.Addr("gw-ns", "gw", 80); !ok || got != addr {
		t.Errorf("port 80 moved from %s to %s (ok=%v); a steady port keeps its socket", addr, got, ok)
	}
	if _, ok := s.Addr("gw-ns", "gw", 8080); ok {
		t.Error("port 8080 still served after its listener was removed")
	}
	cancel()
	wg.Wait()

	if len(failures) > 0 {
		t.Fatalf("%d of %d requests failed during swaps; first: %s", len(failures), requests.Load(), failures[0])
	}
	if served["b1"] == 0 || served["b2"] == 0 {
		t.Errorf("served %v: want both snapshots to have served requests", served)
	}
	for range 10 {
		resp, body := get(t, addr, "gw.test", "/")
		if e := decode(t, resp, body); e.Backend != "b2" {
			t.Fatalf("after the last swap: served by %s, want b2", e.Backend)
		}
	}
}

// TestProtocolUpgrade relays a protocol switch (as WebSocket does) and then
// bytes both ways over the hijacked connections.
func TestProtocolUpgrade(t *testing.T) {
	backendAddr := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "line-echo" {
			http.Error(w, "upgrade required", http.StatusUpgradeRequired)
			return
		}
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		_, _ = brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: line-echo\r\n\r\n")
		_ = brw.Flush()
		for {
			line, err := brw.ReadString('\n')
			if err != nil {
				return
			}
			_, _ = brw.WriteString("echo " + line)
			_ = brw.Flush()
		}
	}))
	addr := mustAddr(t, startGateway(t, oneListener(route("r", 0, nil, rule(nil, ir.Backend{
		Name: "default/upgrade:80", Weight: 1, Endpoints: []string{backendAddr},
	})))), 80)

	conn, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(conn, "GET /ws HTTP/1.1\r\nHost: gw.test\r\nConnection: Upgrade\r\nUpgrade: line-echo\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols || resp.Header.Get("Upgrade") != "line-echo" {
		t.Fatalf("got %s Upgrade %q, want 101 line-echo", resp.Status, resp.Header.Get("Upgrade"))
	}
	for _, msg := range []string{"one\n", "two\n"} {
		if _, err := io.WriteString(conn, msg); err != nil {
			t.Fatal(err)
		}
		got, err := br.ReadString('\n')
		if err != nil || got != "echo "+msg {
			t.Fatalf("after sending %q: got %q, %v", msg, got, err)
		}
	}
}

// TestHTTP1FullDuplex streams a chunked request body and the response at the
// same time over HTTP/1.1: each line comes back before the next is sent.
func TestHTTP1FullDuplex(t *testing.T) {
	backendAddr := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		_ = rc.EnableFullDuplex()
		w.WriteHeader(http.StatusOK)
		_ = rc.Flush()
		br := bufio.NewReader(r.Body)
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			_, _ = io.WriteString(w, "echo "+line)
			_ = rc.Flush()
		}
	}))
	addr := mustAddr(t, startGateway(t, oneListener(route("r", 0, nil, rule(nil, ir.Backend{
		Name: "default/duplex:80", Weight: 1, Endpoints: []string{backendAddr},
	})))), 80)

	// A proxy that cannot stream both ways stalls; the deadline turns
	// that into a failure.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	pr, pw := io.Pipe()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/duplex", pr)
	req.Host = "gw.test"
	resp, err := noRedirects.Do(req) // returns once the response headers arrive
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	for _, msg := range []string{"one\n", "two\n", "three\n"} {
		if _, err := io.WriteString(pw, msg); err != nil {
			t.Fatal(err)
		}
		got, err := br.ReadString('\n')
		if err != nil || got != "echo "+msg {
			t.Fatalf("after sending %q: got %q, %v", msg, got, err)
		}
	}
	pw.Close()
	if rest, err := io.ReadAll(br); err != nil || len(rest) != 0 {
		t.Errorf("after the request ended: %q, %v; want a clean end", rest, err)
	}
}
