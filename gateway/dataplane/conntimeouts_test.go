package dataplane_test

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gatewitness/gatewitness/gateway/ir"
)

// connGateway serves one route to backend on a listener with timeouts t
// and returns the listener's address.
func connGateway(t *testing.T, t0 ir.ConnectionTimeouts, backend string) string {
	t.Helper()
	cfg := oneListener(route("r", 0, nil, prefixRule("/", nil, ir.Backend{Name: "default/b:80", Weight: 1, Endpoints: []string{backend}})))
	cfg.Gateways[0].Timeouts = t0
	return mustAddr(t, startGateway(t, cfg), 80)
}

// untilEOF reads conn until it ends (EOF or an error such as a reset) or
// the test's give-up bound, and returns when that was and what was read.
func untilEOF(t *testing.T, conn net.Conn, start time.Time) (time.Duration, string) {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(tolerance + 10*time.Second))
	b, err := io.ReadAll(conn)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Errorf("the gateway never closed the connection (gave up after %v); read %q", time.Since(start).Round(time.Millisecond), b)
	}
	return time.Since(start), string(b)
}

func dialGateway(t testing.TB, addr string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func TestServerTimeout(t *testing.T) {
	// Well above the trickle's 150ms gaps: beside make test on two cores a
	// gap grew past a 400ms timeout.
	const server = time.Second
	backend := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/hang":
			<-r.Context().Done()
		case "/trickle":
			// Ten bytes 150ms apart: 1.5s in all, never silent for the
			// server timeout.
			rc := http.NewResponseController(w)
			for range 10 {
				_, _ = io.WriteString(w, "x")
				_ = rc.Flush()
				select {
				case <-time.After(150 * time.Millisecond):
				case <-r.Context().Done():
					return
				}
			}
		}
	}))
	addr := connGateway(t, ir.ConnectionTimeouts{Server: server}, backend)

	start := time.Now()
	resp, body := get(t, addr, "example.com", "/hang")
	if resp.StatusCode != http.StatusGatewayTimeout {
		t.Errorf("silent backend: status %d %q, want 504", resp.StatusCode, body)
	}
	within(t, "silent backend: 504", time.Since(start), server)

	resp, body = get(t, addr, "example.com", "/trickle")
	if resp.StatusCode != http.StatusOK || string(body) != strings.Repeat("x", 10) {
		t.Errorf("trickling backend: status %d body %q, want 200 and the whole body: the server timeout bounds silence, not the response", resp.StatusCode, body)
	}
}

func TestClientTimeout(t *testing.T) {
	const client = 400 * time.Millisecond
	b := startBackend(t, "b")
	addr := connGateway(t, ir.ConnectionTimeouts{Client: client, Server: 10 * time.Second}, b.addr)

	cases := []struct {
		name string
		send string // sent at once after connecting, then nothing
	}{
		{"idle connection", ""},
		{"mid-headers", "GET / HTTP/1.1\r\nHost: example.com\r\nX-Partial: "},
		{"mid-body", "POST / HTTP/1.1\r\nHost: example.com\r\nContent-Length: 100\r\n\r\nonly ten b"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			// The gateway's timer starts when it accepts the connection,
			// which may be before the dial returns here: start before it.
			start := time.Now()
			conn := dialGateway(t, addr)
			if _, err := io.WriteString(conn, c.send); err != nil {
				t.Fatal(err)
			}
			elapsed, got := untilEOF(t, conn, start)
			within(t, "connection closed", elapsed, client)
			if c.name == "mid-body" && got != "" && !strings.HasPrefix(got, "HTTP/1.1 ") {
				t.Errorf("read %q before the close, want nothing or an HTTP response", got)
			}
		})
	}
	t.Run("kept alive", func(t *testing.T) {
		t.Parallel()
		conn := dialGateway(t, addr)
		// The gateway's idle wait starts after it sent the response, so
		// after the request was sent; the response arrives a moment later.
		start := time.Now()
		if _, err := io.WriteString(conn, "GET / HTTP/1.1\r\nHost: example.com\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(conn)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = conn.SetReadDeadline(time.Now().Add(tolerance + 10*time.Second))
		_, err = br.ReadByte()
		if !errors.Is(err, io.EOF) {
			t.Errorf("idle kept-alive connection: read %v, want EOF", err)
		}
		within(t, "idle kept-alive connection closed", time.Since(start), client)
	})
}

// upgradeBackend is a backend that switches every request to a raw byte
// stream and then, by path: /echo echoes until EOF; /halfclose shuts its
// writes at once and reports on halfClosed how long its peer took to close;
// /hold reads until EOF, reports it on held, and keeps the connection open
// until the test ends.
type upgradeBackend struct {
	addr       string
	halfClosed chan time.Duration
	held       chan struct{}
}

func startUpgradeBackend(t testing.TB) *upgradeBackend {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { close(done); ln.Close() })
	b := &upgradeBackend{addr: ln.Addr().String(), halfClosed: make(chan time.Duration, 4), held: make(chan struct{}, 4)}
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go b.serve(conn, done)
		}
	}()
	return b
}

func (b *upgradeBackend) serve(conn net.Conn, done <-chan struct{}) {
	defer conn.Close()
	br := bufio.NewReader(conn)
	req, err := http.ReadRequest(br)
	if err != nil {
		return
	}
	if _, err := io.WriteString(conn, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n"); err != nil {
		return
	}
	switch req.URL.Path {
	case "/echo":
		_, _ = io.Copy(conn, br)
	case "/halfclose":
		start := time.Now()
		_ = conn.(*net.TCPConn).CloseWrite()
		_, _ = io.Copy(io.Discard, br)
		b.halfClosed <- time.Since(start)
	case "/hold":
		_, _ = io.Copy(io.Discard, br)
		b.held <- struct{}{}
		<-done
	}
}

// upgrade sends an upgrade request for path and reads the 101. sent is
// when the request was sent: the gateway's last activity on the tunnel is
// later than that, while the 101 arrives a moment after it.
func upgrade(t testing.TB, addr, path string) (conn net.Conn, br *bufio.Reader, sent time.Time) {
	t.Helper()
	conn = dialGateway(t, addr)
	sent = time.Now()
	if _, err := io.WriteString(conn, "GET "+path+" HTTP/1.1\r\nHost: example.com\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	br = bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: status %d, want 101", resp.StatusCode)
	}
	return conn, br, sent
}

func TestTunnelTimeouts(t *testing.T) {
	tt := ir.ConnectionTimeouts{
		Client:    300 * time.Millisecond,
		Server:    300 * time.Millisecond,
		Tunnel:    900 * time.Millisecond,
		ClientFin: 450 * time.Millisecond,
		ServerFin: 600 * time.Millisecond,
	}
	b := startUpgradeBackend(t)
	addr := connGateway(t, tt, b.addr)

	t.Run("idle", func(t *testing.T) {
		t.Parallel()
		conn, _, sent := upgrade(t, addr, "/echo")
		elapsed, _ := untilEOF(t, conn, sent)
		within(t, "idle tunnel closed", elapsed, tt.Tunnel)
	})
	t.Run("active", func(t *testing.T) {
		t.Parallel()
		conn, br, _ := upgrade(t, addr, "/echo")
		start := time.Now()
		tick := time.NewTicker(tt.Tunnel / 4)
		defer tick.Stop()
		for time.Since(start) < 3*tt.Tunnel {
			if _, err := io.WriteString(conn, "ping\n"); err != nil {
				t.Fatalf("after %v: %v", time.Since(start), err)
			}
			_ = conn.SetReadDeadline(time.Now().Add(tolerance))
			line, err := br.ReadString('\n')
			if err != nil || line != "ping\n" {
				t.Fatalf("active tunnel after %v: read %q, %v; want the echo", time.Since(start), line, err)
			}
			<-tick.C // pacing the traffic, not synchronising
		}
	})
	t.Run("client-fin", func(t *testing.T) {
		t.Parallel()
		conn, br, _ := upgrade(t, addr, "/halfclose")
		_ = conn.SetReadDeadline(time.Now().Add(tolerance))
		if _, err := br.ReadByte(); !errors.Is(err, io.EOF) {
			t.Fatalf("after the backend half-closed: read %v, want EOF (the FIN passed on)", err)
		}
		select {
		case d := <-b.halfClosed:
			within(t, "client side closed after the backend's half-close", d, tt.ClientFin)
		case <-time.After(tt.ClientFin + tolerance + 5*time.Second):
			t.Fatal("the gateway never closed the backend connection after the backend half-closed")
		}
	})
	t.Run("server-fin", func(t *testing.T) {
		t.Parallel()
		conn, _, _ := upgrade(t, addr, "/hold")
		start := time.Now()
		if err := conn.(*net.TCPConn).CloseWrite(); err != nil {
			t.Fatal(err)
		}
		elapsed, _ := untilEOF(t, conn, start)
		within(t, "tunnel closed after the client's half-close", elapsed, tt.ServerFin)
		select {
		case <-b.held:
		default:
			t.Error("the backend never saw the client's half-close")
		}
	})
}
