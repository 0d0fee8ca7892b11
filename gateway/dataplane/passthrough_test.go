package dataplane_test

import (
	"bufio"
	"crypto/tls"
	"encoding/json"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatewitness/gatewitness/echo-backend/podinfo"
	"github.com/gatewitness/gatewitness/echo-backend/tcpecho"
	"github.com/gatewitness/gatewitness/gateway/dataplane"
	"github.com/gatewitness/gatewitness/gateway/ir"
	"github.com/gatewitness/gatewitness/internal/testcert"
)

// tlsBackend is an echo-backend TLS line server (tcpecho) whose pod name
// is name, with a certificate for hosts.
type tlsBackend struct {
	name string
	cert testcert.Cert
	srv  *tcpecho.Server
}

func startTLSBackend(t *testing.T, name string, hosts ...string) *tlsBackend {
	t.Helper()
	cert := testcert.New(t, hosts...)
	srv := tcpecho.New(tcpecho.Options{Addr: "127.0.0.1:0", Pod: podinfo.Info{Pod: name}, TLSConfig: cert.ServerConfig()})
	if err := srv.Listen(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return &tlsBackend{name: name, cert: cert, srv: srv}
}

func (b *tlsBackend) ref() ir.Backend {
	return ir.Backend{Name: "default/" + b.name + ":8443", Weight: 1, Endpoints: []string{b.srv.Addr()}}
}

// tlsRoute builds a TLSRoute named name created at minute created.
func tlsRoute(name string, created int, hostnames []string, backends ...ir.Backend) ir.TLSRoute {
	return ir.TLSRoute{
		RouteMeta: ir.RouteMeta{
			Namespace: "default", Name: name,
			Created:   time.Date(2025, 1, 1, 0, created, 0, 0, time.UTC),
			Hostnames: hostnames,
		},
		Backends: backends,
	}
}

// passthroughGateway serves routes on a TLS passthrough listener on port
// 443 (hostname "" for any) with timeouts t, and returns its address.
func passthroughGateway(t *testing.T, tt ir.ConnectionTimeouts, hostname string, routes ...ir.TLSRoute) string {
	t.Helper()
	cfg := &ir.Config{Gateways: []ir.Gateway{{
		Namespace: "gw-ns", Name: "gw", Timeouts: tt,
		Listeners: []ir.Listener{{Name: "tls", Port: 443, Protocol: gwv1.TLSProtocolType, Hostname: hostname, TLSRoutes: routes}},
	}}}
	return mustAddr(t, startGateway(t, cfg), 443)
}

// tlsLines is a TLS line-protocol client of a tcpecho backend.
type tlsLines struct {
	t    *testing.T
	conn *tls.Conn
	r    *bufio.Reader
}

// dialTLS connects to addr with SNI serverName, trusting only cert, and
// reads the backend's welcome line.
func dialTLS(t *testing.T, addr, serverName string, cert testcert.Cert, maxVersion uint16) (*tlsLines, error) {
	t.Helper()
	raw := dialGateway(t, addr)
	_ = raw.SetDeadline(time.Now().Add(10 * time.Second))
	conn := tls.Client(raw, &tls.Config{ServerName: serverName, RootCAs: cert.Pool, MaxVersion: maxVersion})
	if err := conn.Handshake(); err != nil {
		return nil, err
	}
	c := &tlsLines{t: t, conn: conn, r: bufio.NewReader(conn)}
	if got := c.read(); got != tcpecho.WelcomeMessage {
		t.Fatalf("welcome through the gateway = %q, want %q", got, tcpecho.WelcomeMessage)
	}
	return c, nil
}

func (c *tlsLines) read() string {
	c.t.Helper()
	line, err := c.r.ReadString('\n')
	if err != nil {
		c.t.Fatalf("reading a line through the gateway: %v (got %q)", err, line)
	}
	return line
}

func (c *tlsLines) ask(line string) string {
	c.t.Helper()
	if _, err := io.WriteString(c.conn, line+"\n"); err != nil {
		c.t.Fatalf("writing %q through the gateway: %v", line, err)
	}
	return strings.TrimSuffix(c.read(), "\n")
}

// whoAnswers asks TEST and returns the backend's pod name and the SNI it saw.
func (c *tlsLines) whoAnswers() (pod, serverName string) {
	c.t.Helper()
	var a tcpecho.Assertions
	line := c.ask("TEST")
	if err := json.Unmarshal([]byte(line), &a); err != nil || a.TLS == nil {
		c.t.Fatalf("TEST through the gateway answered %q (%v); want the JSON with TLS details", line, err)
	}
	return a.Pod, a.TLS.ServerName
}

func (c *tlsLines) accepted() uint64 {
	c.t.Helper()
	s := c.ask("ACCEPTED")
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		c.t.Fatalf("ACCEPTED answered %q", s)
	}
	return n
}

func TestTLSPassthroughRoutesBySNI(t *testing.T) {
	exact := startTLSBackend(t, "exact", "a.example.com")
	wild := startTLSBackend(t, "wild", "*.example.com")
	addr := passthroughGateway(t, ir.ConnectionTimeouts{}, "",
		// The wildcard route is older: the exact hostname still wins
		// for a.example.com, as it is more specific.
		tlsRoute("wild", 0, []string{"*.example.com"}, wild.ref()),
		tlsRoute("exact", 1, []string{"a.example.com"}, exact.ref()),
	)
	cases := []struct {
		sni, pod string
		cert     testcert.Cert
		version  uint16
	}{
		{"a.example.com", "exact", exact.cert, 0},
		{"a.example.com", "exact", exact.cert, tls.VersionTLS12},
		{"b.example.com", "wild", wild.cert, 0},
		{"B.Example.COM", "wild", wild.cert, 0},
	}
	for _, tc := range cases {
		c, err := dialTLS(t, addr, tc.sni, tc.cert, tc.version)
		if err != nil {
			t.Fatalf("SNI %s (max version %x): handshake with the backend through the gateway: %v", tc.sni, tc.version, err)
		}
		pod, seen := c.whoAnswers()
		if pod != tc.pod || !strings.EqualFold(seen, tc.sni) {
			t.Errorf("SNI %s: answered by %q which saw SNI %q, want %q: the gateway must pass the ClientHello on unchanged", tc.sni, pod, seen, tc.pod)
		}
	}

	// No route for the SNI: closed, and no backend is dialed.
	before := exact.srv.Accepted() + wild.srv.Accepted()
	if _, err := dialTLS(t, addr, "other.test", exact.cert, 0); err == nil {
		t.Error("SNI other.test has no TLSRoute, but the handshake completed")
	}
	if after := exact.srv.Accepted() + wild.srv.Accepted(); after != before {
		t.Errorf("SNI without a route: the backends accepted %d connections, want none", after-before)
	}
}

// TestTLSPassthroughListenerHostname checks that the listener's hostname
// bounds the SNIs it serves, and that a connection without SNI gets no
// route when every route names hostnames.
func TestTLSPassthroughListenerHostname(t *testing.T) {
	b := startTLSBackend(t, "b", "a.example.com", "a.other.test", "127.0.0.1")
	addr := passthroughGateway(t, ir.ConnectionTimeouts{}, "*.example.com",
		tlsRoute("r", 0, []string{"a.example.com", "a.other.test"}, b.ref()))
	if c, err := dialTLS(t, addr, "a.example.com", b.cert, 0); err != nil {
		t.Fatalf("SNI a.example.com: %v", err)
	} else if pod, _ := c.whoAnswers(); pod != "b" {
		t.Errorf("SNI a.example.com answered by %q", pod)
	}
	if _, err := dialTLS(t, addr, "a.other.test", b.cert, 0); err == nil {
		t.Error("SNI a.other.test is outside the listener's *.example.com, but the handshake completed")
	}
	// An IP literal sends no SNI.
	if _, err := dialTLS(t, addr, "127.0.0.1", b.cert, 0); err == nil {
		t.Error("a ClientHello without SNI matched a route that names hostnames")
	}
	if n := b.srv.Accepted(); n != 1 {
		t.Errorf("the backend accepted %d connections, want 1 (only a.example.com has a route)", n)
	}
}

// TestTLSInspectDelay checks the inspect delay: a client that sends no
// ClientHello, or part of one, is closed within [delay, delay+tolerance]
// of its connect, and no backend connection is made; a client that sends
// its ClientHello in time is served.
func TestTLSInspectDelay(t *testing.T) {
	const delay = 600 * time.Millisecond
	b := startTLSBackend(t, "b", "a.example.com")
	// The client timeout is beyond the window: a gateway that waited for
	// it instead of the inspect delay fails.
	tt := ir.ConnectionTimeouts{TLSInspectDelay: delay, Client: delay + tolerance + 2*time.Second}
	addr := passthroughGateway(t, tt, "", tlsRoute("r", 0, []string{"a.example.com"}, b.ref()))

	hello := captureHello(t, "a.example.com")
	cases := []struct {
		name string
		send []byte
	}{
		{"silent", nil},
		{"half a ClientHello", hello[:len(hello)/2]},
		{"a record header", hello[:5]},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			conn := dialGateway(t, addr)
			if _, err := conn.Write(tc.send); err != nil {
				t.Fatal(err)
			}
			elapsed, got := untilEOF(t, conn, start)
			within(t, tc.name+": closed", elapsed, delay)
			if got != "" {
				t.Errorf("read %q before the close, want nothing", got)
			}
		})
	}
	if n := b.srv.Accepted(); n != 0 {
		t.Errorf("the backend accepted %d connections from clients without a ClientHello, want 0", n)
	}

	c, err := dialTLS(t, addr, "a.example.com", b.cert, 0)
	if err != nil {
		t.Fatalf("a client with a ClientHello: %v", err)
	}
	if n := c.accepted(); n != 1 {
		t.Errorf("ACCEPTED = %d after one complete client, want 1", n)
	}
}

// TestTLSInspectDelayFallsBackToClientTimeout checks that without an
// inspect delay the client timeout bounds the wait for the ClientHello.
func TestTLSInspectDelayFallsBackToClientTimeout(t *testing.T) {
	const client = 700 * time.Millisecond
	b := startTLSBackend(t, "b", "a.example.com")
	addr := passthroughGateway(t, ir.ConnectionTimeouts{Client: client}, "", tlsRoute("r", 0, []string{"a.example.com"}, b.ref()))
	start := time.Now()
	conn := dialGateway(t, addr)
	elapsed, _ := untilEOF(t, conn, start)
	within(t, "silent client without an inspect delay: closed", elapsed, client)
	if n := b.srv.Accepted(); n != 0 {
		t.Errorf("the backend accepted %d connections, want 0", n)
	}
}

// captureHello returns the ClientHello records of a crypto/tls client for
// sni.
func captureHello(t *testing.T, sni string) []byte {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			return
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		_ = tls.Client(c, &tls.Config{ServerName: sni}).Handshake()
	}()
	conn, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	hdr := make([]byte, 5)
	if _, err := io.ReadFull(conn, hdr); err != nil {
		t.Fatal(err)
	}
	rec := make([]byte, int(hdr[3])<<8|int(hdr[4]))
	if _, err := io.ReadFull(conn, rec); err != nil {
		t.Fatal(err)
	}
	return append(hdr, rec...)
}

// TestTLSPassthroughTunnelTimeout checks that a passed-through connection
// is a tunnel: idle, it is closed at the tunnel timeout.
func TestTLSPassthroughTunnelTimeout(t *testing.T) {
	const tunnel = 700 * time.Millisecond
	b := startTLSBackend(t, "b", "a.example.com")
	addr := passthroughGateway(t, ir.ConnectionTimeouts{Tunnel: tunnel, TLSInspectDelay: 5 * time.Second},
		"", tlsRoute("r", 0, []string{"a.example.com"}, b.ref()))
	c, err := dialTLS(t, addr, "a.example.com", b.cert, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.ask("PING"); got != "PONG" {
		t.Fatalf("PING through the tunnel answered %q", got)
	}
	start := time.Now() // the last byte through the tunnel was before this
	_ = c.conn.SetReadDeadline(time.Now().Add(tunnel + tolerance + 10*time.Second))
	_, err = c.r.ReadByte()
	elapsed := time.Since(start)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("the idle tunnel was not closed within %v", tunnel+tolerance+10*time.Second)
	}
	if elapsed > tunnel+tolerance {
		t.Errorf("idle tunnel closed after %v, want at most %v", elapsed, tunnel+tolerance)
	}
}

// TestTLSPassthroughNotTLS checks that bytes that are not a ClientHello
// close the connection at once, without a backend connection.
func TestTLSPassthroughNotTLS(t *testing.T) {
	const delay = 5 * time.Second
	b := startTLSBackend(t, "b", "a.example.com")
	addr := passthroughGateway(t, ir.ConnectionTimeouts{TLSInspectDelay: delay}, "", tlsRoute("r", 0, []string{"a.example.com"}, b.ref()))
	start := time.Now()
	conn := dialGateway(t, addr)
	if _, err := io.WriteString(conn, "GET / HTTP/1.1\r\nHost: a.example.com\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	elapsed, got := untilEOF(t, conn, start)
	if elapsed >= delay {
		t.Errorf("an HTTP request on a TLS listener was closed after %v, want before the inspect delay %v", elapsed, delay)
	}
	if got != "" || b.srv.Accepted() != 0 {
		t.Errorf("read %q, backend accepted %d: want nothing and no backend connection", got, b.srv.Accepted())
	}
}

// TestTLSPassthroughClose checks that Close ends tunnels in progress.
func TestTLSPassthroughClose(t *testing.T) {
	b := startTLSBackend(t, "b", "a.example.com")
	cfg := &ir.Config{Gateways: []ir.Gateway{{
		Namespace: "gw-ns", Name: "gw",
		Listeners: []ir.Listener{{Name: "tls", Port: 443, Protocol: gwv1.TLSProtocolType,
			TLSRoutes: []ir.TLSRoute{tlsRoute("r", 0, []string{"a.example.com"}, b.ref())}}},
	}}}
	s := dataplane.New(dataplane.Options{})
	if err := s.Apply(cfg); err != nil {
		t.Fatal(err)
	}
	c, err := dialTLS(t, mustAddr(t, s, 443), "a.example.com", b.cert, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.ask("PING"); got != "PONG" {
		t.Fatalf("PING answered %q", got)
	}
	silent := dialGateway(t, mustAddr(t, s, 443))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	_ = c.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.r.ReadByte(); err == nil {
		t.Error("a tunnel outlived Close")
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Error("a tunnel stayed open after Close")
	}
	_ = silent.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := silent.Read(make([]byte, 1)); err == nil {
		t.Error("read from a connection under inspection after Close")
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Error("a connection under inspection stayed open after Close")
	}
}

// TestTLSListenerConfigErrors checks what Apply reports for routes on the
// wrong kind of listener and for TLS sharing a port with HTTP.
func TestTLSListenerConfigErrors(t *testing.T) {
	b := startTLSBackend(t, "b", "a.example.com")
	cfg := &ir.Config{Gateways: []ir.Gateway{{
		Namespace: "gw-ns", Name: "gw",
		Listeners: []ir.Listener{
			{Name: "tls", Port: 443, Protocol: gwv1.TLSProtocolType, Hostname: "a.example.com",
				TLSRoutes:  []ir.TLSRoute{tlsRoute("r", 0, []string{"a.example.com"}, b.ref())},
				HTTPRoutes: []ir.HTTPRoute{route("h", 0, nil)}},
			{Name: "http", Port: 443, Protocol: gwv1.HTTPProtocolType, Hostname: "b.example.com"},
			{Name: "http2", Port: 80, Protocol: gwv1.HTTPProtocolType,
				TLSRoutes: []ir.TLSRoute{tlsRoute("r", 0, nil, b.ref())}},
		},
	}}}
	s := dataplane.New(dataplane.Options{})
	defer s.Close()
	err := s.Apply(cfg)
	for _, want := range []string{
		"HTTPRoutes and GRPCRoutes are not served on a TLS passthrough listener",
		`listener "http" (port 443): protocol HTTP conflicts with another listener on the same port`,
		"TLSRoutes are not served on a HTTP listener; accepted: a TLS listener",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Apply error %v: want it to say %q", err, want)
		}
	}
	// The TLS listener is still served.
	if c, err := dialTLS(t, mustAddr(t, s, 443), "a.example.com", b.cert, 0); err != nil {
		t.Errorf("the TLS listener beside the errors: %v", err)
	} else if got := c.ask("PING"); got != "PONG" {
		t.Errorf("PING answered %q", got)
	}
}
