package tcpecho_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/onsi/gomega"
	"sigs.k8s.io/gateway-api/conformance/utils/config"
	upstreamutil "sigs.k8s.io/gateway-api/conformance/utils/tcp"

	"github.com/gatewitness/gatewitness/echo-backend/control"
	"github.com/gatewitness/gatewitness/echo-backend/podinfo"
	"github.com/gatewitness/gatewitness/echo-backend/tcpecho"
	"github.com/gatewitness/gatewitness/internal/testcert"
)

var _ control.Switch = (*tcpecho.Server)(nil)

// echoBasicAssertions is the JSON that echo-basic's TCP server answers to
// TEST, written here from its wire form (not from tcpecho's types), so the
// tests decode our answers as an echo-basic client would.
type echoBasicAssertions struct {
	Context struct {
		Namespace string `json:"namespace"`
		Ingress   string `json:"ingress"`
		Service   string `json:"service"`
		Pod       string `json:"pod"`
		TCPPort   string `json:"tcpport"`
		TLSPort   string `json:"tlsport"`
	} `json:"-"`
	IsTLS bool `json:"isTLS"`
	TLS   *struct {
		Version            string `json:"version"`
		ServerName         string `json:"serverName"`
		NegotiatedProtocol string `json:"negotiatedProtocol"`
		Curves             string `json:"curves"`
		CipherSuite        string `json:"cipherSuite"`
	} `json:"tls"`
}

// decodeEchoBasic decodes a TEST answer: the context fields sit at the top
// level of the object, as echo-basic inlines them.
func decodeEchoBasic(line string) (echoBasicAssertions, error) {
	var a echoBasicAssertions
	if err := json.Unmarshal([]byte(line), &a); err != nil {
		return a, err
	}
	err := json.Unmarshal([]byte(line), &a.Context)
	return a, err
}

var pod = podinfo.Info{Namespace: "ns1", Ingress: "ing1", Service: "svc1", Pod: "backend-abc"}

func start(t *testing.T, opts tcpecho.Options) *tcpecho.Server {
	t.Helper()
	if opts.Addr == "" {
		opts.Addr = "127.0.0.1:0"
	}
	s := tcpecho.New(opts)
	if err := s.Listen(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// client is one line-protocol connection.
type client struct {
	t    *testing.T
	conn net.Conn
	r    *bufio.Reader
}

func dial(t *testing.T, addr string) *client {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	return newClient(t, c)
}

func newClient(t *testing.T, c net.Conn) *client {
	t.Helper()
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	cl := &client{t: t, conn: c, r: bufio.NewReader(c)}
	if got := cl.read(); got != tcpecho.WelcomeMessage {
		t.Fatalf("welcome = %q, want %q", got, tcpecho.WelcomeMessage)
	}
	return cl
}

func (c *client) read() string {
	c.t.Helper()
	line, err := c.r.ReadString('\n')
	if err != nil {
		c.t.Fatalf("read: %v (got %q)", err, line)
	}
	return line
}

func (c *client) ask(line string) string {
	c.t.Helper()
	if _, err := io.WriteString(c.conn, line+"\n"); err != nil {
		c.t.Fatalf("write %q: %v", line, err)
	}
	return c.read()
}

func TestCommands(t *testing.T) {
	s := start(t, tcpecho.Options{Pod: pod, TCPPort: "3000", TLSPort: "8443"})
	c := dial(t, s.Addr())

	if got := c.ask("PING"); got != "PONG\n" {
		t.Errorf("PING -> %q, want PONG", got)
	}
	if got := c.ask("IS_TLS"); got != "false\n" {
		t.Errorf("IS_TLS -> %q, want false", got)
	}
	if got := c.ask("hello world\r"); got != "hello world\n" {
		t.Errorf("echo -> %q, want %q", got, "hello world\n")
	}
	if got := c.ask(""); got != "\n" {
		t.Errorf("empty line -> %q, want an empty line", got)
	}

	// TEST answers echo-basic's JSON.
	line := c.ask("TEST")
	a, err := decodeEchoBasic(line)
	if err != nil {
		t.Fatalf("TEST -> %q: %v", line, err)
	}
	var want echoBasicAssertions
	want.Context.Namespace, want.Context.Ingress, want.Context.Service, want.Context.Pod = "ns1", "ing1", "svc1", "backend-abc"
	want.Context.TCPPort, want.Context.TLSPort = "3000", "8443"
	if a.Context != want.Context || a.IsTLS || a.TLS != nil {
		t.Errorf("TEST -> %q, want %+v", line, want)
	}
}

// TestAccepted checks that ACCEPTED and Accepted count every accepted
// connection: plain ones, the asking one, and TLS ones that never finish
// their handshake.
func TestAccepted(t *testing.T) {
	cert := testcert.New(t, "echo.example.com")
	plain := start(t, tcpecho.Options{Pod: pod})
	if n := plain.Accepted(); n != 0 {
		t.Fatalf("Accepted() = %d before any connection, want 0", n)
	}
	a := dial(t, plain.Addr())
	if got := a.ask("ACCEPTED"); got != "1\n" {
		t.Errorf("first connection: ACCEPTED -> %q, want 1", got)
	}
	dial(t, plain.Addr()) // the welcome line shows it was accepted
	if got := a.ask("ACCEPTED"); got != "2\n" {
		t.Errorf("after a second connection: ACCEPTED -> %q, want 2", got)
	}

	tlsSrv := start(t, tcpecho.Options{Pod: pod, HandshakeTimeout: 10 * time.Second,
		TLSConfig: cert.ServerConfig()})
	silent, err := net.Dial("tcp", tlsSrv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	// The silent connection counts once the server has accepted it; the
	// kernel may complete the dial before that, so poll.
	gomega.NewWithT(t).Eventually(tlsSrv.Accepted).WithTimeout(10*time.Second).
		Should(gomega.BeEquivalentTo(1), "Accepted() after a silent TLS connection")
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", tlsSrv.Addr(),
		&tls.Config{RootCAs: cert.Pool, ServerName: "echo.example.com", MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatal(err)
	}
	if got := newClient(t, conn).ask("ACCEPTED"); got != "2\n" {
		t.Errorf("TLS listener after a silent and a TLS connection: ACCEPTED -> %q, want 2", got)
	}
	if n := plain.Accepted(); n != 2 {
		t.Errorf("the plain listener's count moved to %d with the other listener's connections, want 2", n)
	}
}

func TestUpstreamHelper(t *testing.T) {
	s := start(t, tcpecho.Options{Pod: pod, TCPPort: "3000"})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got, err := upstreamutil.EchoSendOnce(ctx, s.Addr(), 5*time.Second)
	if err != nil {
		t.Fatalf("upstream EchoSendOnce: %v", err)
	}
	if got != pod.Pod {
		t.Errorf("upstream EchoSendOnce pod = %q, want %q", got, pod.Pod)
	}
}

// TestUpstreamValidResponse runs upstream's TCPRoute check, which decodes
// TEST with echo-basic's own type, over plaintext and TLS.
func TestUpstreamValidResponse(t *testing.T) {
	cert := testcert.New(t, "echo.example.com")
	plain := start(t, tcpecho.Options{Pod: pod, TCPPort: "3000"})
	secure := start(t, tcpecho.Options{Pod: pod, TCPPort: "3000", TLSPort: "8443",
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert.TLS}, NextProtos: []string{"echo"}}})
	timeouts := config.DefaultTimeoutConfig()
	timeouts.MaxTimeToConsistency = 10 * time.Second
	backend := strings.TrimSuffix(pod.Pod, "-abc")
	upstreamutil.MakeTCPRequestAndExpectEventuallyValidResponse(t, timeouts, plain.Addr(), nil, "", false,
		upstreamutil.ExpectedResponse{Backend: backend, Namespace: pod.Namespace})
	upstreamutil.MakeTCPRequestAndExpectEventuallyValidResponse(t, timeouts, secure.Addr(), cert.CertPEM, "echo.example.com", true,
		upstreamutil.ExpectedResponse{BackendIsTLS: true, Backend: backend, Namespace: pod.Namespace, Hostname: "echo.example.com"})
}

func TestLongLineClosesConnection(t *testing.T) {
	s := start(t, tcpecho.Options{MaxLineBytes: 16})
	c := dial(t, s.Addr())
	if got := c.ask(strings.Repeat("x", 16)); got != strings.Repeat("x", 16)+"\n" {
		t.Errorf("16-byte line -> %q, want it echoed", got)
	}
	if got := c.ask(strings.Repeat("y", 5000)); got != "ERROR line longer than 16 bytes\n" {
		t.Errorf("long line -> %q, want the error line", got)
	}
	if _, err := c.r.ReadString('\n'); err == nil {
		t.Error("connection still open after a long line")
	}
}

func TestIdleTimeout(t *testing.T) {
	s := start(t, tcpecho.Options{IdleTimeout: 200 * time.Millisecond})
	c := dial(t, s.Addr())
	begin := time.Now()
	_, err := c.r.ReadString('\n') // the server closes the idle connection
	if err == nil {
		t.Fatal("idle connection got a line, want it closed")
	}
	if el := time.Since(begin); el < 150*time.Millisecond || el > 5*time.Second {
		t.Errorf("idle connection closed after %v, want about 200ms", el)
	}
}

// waitRefused dials addr until the connection is refused or the deadline
// passes.
func waitRefused(t *testing.T, addr string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if errors.Is(err, syscall.ECONNREFUSED) {
			return
		}
		if err == nil {
			c.Close()
		}
		if time.Now().After(deadline) {
			t.Fatalf("dial %s: %v, want connection refused", addr, err)
		}
		<-time.After(10 * time.Millisecond) // poll interval
	}
}

func TestCloseAndReopen(t *testing.T) {
	s := start(t, tcpecho.Options{})
	addr := s.Addr()
	survivor := dial(t, addr)
	if !s.IsOpen() {
		t.Fatal("IsOpen = false after Listen")
	}

	if err := s.SetOpen(false); err != nil {
		t.Fatal(err)
	}
	if s.IsOpen() {
		t.Error("IsOpen = true after SetOpen(false)")
	}
	waitRefused(t, addr)
	if err := s.SetOpen(false); err != nil {
		t.Errorf("closing twice: %v", err)
	}
	// An established connection survives the listener's close.
	if got := survivor.ask("PING"); got != "PONG\n" {
		t.Errorf("PING on surviving connection -> %q", got)
	}

	if err := s.SetOpen(true); err != nil {
		t.Fatal(err)
	}
	if s.Addr() != addr {
		t.Errorf("reopened on %s, want %s", s.Addr(), addr)
	}
	c := dial(t, addr)
	if got := c.ask("again"); got != "again\n" {
		t.Errorf("echo after reopen -> %q", got)
	}
}

func TestDropConnsOnClose(t *testing.T) {
	s := start(t, tcpecho.Options{DropConnsOnClose: true})
	c := dial(t, s.Addr())
	if err := s.SetOpen(false); err != nil {
		t.Fatal(err)
	}
	if _, err := c.r.ReadString('\n'); err == nil {
		t.Error("connection still open after SetOpen(false) with DropConnsOnClose")
	}
}

func TestControlsSwitch(t *testing.T) {
	s := start(t, tcpecho.Options{})
	ctl := control.New()
	ctl.SetTCPSwitch(s)
	if err := ctl.SetTCPOpen(false); err != nil {
		t.Fatal(err)
	}
	if open, present := ctl.TCPOpen(); open || !present {
		t.Errorf("TCPOpen = %v, %v; want false, true", open, present)
	}
	waitRefused(t, s.Addr())
	if err := ctl.SetTCPOpen(true); err != nil {
		t.Fatal(err)
	}
	dial(t, s.Addr())
}

func TestClosedServerCannotReopen(t *testing.T) {
	s := tcpecho.New(tcpecho.Options{Addr: "127.0.0.1:0"})
	if err := s.Listen(); err != nil {
		t.Fatal(err)
	}
	c := dial(t, s.Addr())
	s.Close()
	if _, err := c.r.ReadString('\n'); err == nil {
		t.Error("connection open after Close")
	}
	if err := s.SetOpen(true); !errors.Is(err, tcpecho.ErrServerClosed) {
		t.Errorf("SetOpen(true) after Close = %v, want ErrServerClosed", err)
	}
}

func TestTLS(t *testing.T) {
	cert := testcert.New(t, "echo.example.com")
	s := start(t, tcpecho.Options{Pod: pod, TCPPort: "3000", TLSPort: "8443",
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert.TLS}, NextProtos: []string{"echo"}}})
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", s.Addr(),
		&tls.Config{RootCAs: cert.Pool, ServerName: "echo.example.com", NextProtos: []string{"echo"}, MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, conn)
	if got := c.ask("IS_TLS"); got != "true\n" {
		t.Errorf("IS_TLS -> %q, want true", got)
	}
	line := c.ask("TEST")
	a, err := decodeEchoBasic(line)
	if err != nil {
		t.Fatalf("TEST -> %q: %v", line, err)
	}
	if !a.IsTLS || a.TLS == nil {
		t.Fatalf("TEST -> %q, want TLS details", line)
	}
	st := conn.ConnectionState()
	want := *a.TLS
	want.Version, want.ServerName, want.NegotiatedProtocol = tls.VersionName(st.Version), "echo.example.com", "echo"
	want.Curves, want.CipherSuite = st.CurveID.String(), tls.CipherSuiteName(st.CipherSuite)
	if *a.TLS != want {
		t.Errorf("TLS details = %+v, want %+v", *a.TLS, want)
	}
}

func TestTLSHandshakeTimeout(t *testing.T) {
	cert := testcert.New(t, "echo.example.com").TLS
	s := start(t, tcpecho.Options{HandshakeTimeout: 200 * time.Millisecond,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}})
	conn, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	// Send nothing: the server must give up on the handshake and close.
	if _, err := conn.Read(make([]byte, 1)); err == nil {
		t.Error("read a byte from a server waiting for a handshake")
	} else if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Error("server kept a silent connection open past its handshake timeout")
	}
}

func TestFromEnv(t *testing.T) {
	certFile, keyFile := testcert.New(t, "x").WriteFiles(t)
	dir := filepath.Dir(certFile)

	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

	plain, tlsOpts, err := tcpecho.FromEnv(env(nil), pod)
	if err != nil || plain.Addr != ":3000" || plain.TCPPort != "3000" || plain.TLSPort != "8443" || tlsOpts != nil {
		t.Errorf("defaults: %+v, %v, %v", plain, tlsOpts, err)
	}
	plain, tlsOpts, err = tcpecho.FromEnv(env(map[string]string{
		"TCP_PORT": "4000", "TLS_PORT": "4443", "TLS_SERVER_CERT": certFile, "TLS_SERVER_PRIV_KEY": keyFile,
	}), pod)
	if err != nil || plain.Addr != ":4000" || tlsOpts == nil || tlsOpts.Addr != ":4443" || tlsOpts.TLSConfig == nil || tlsOpts.Pod != pod {
		t.Errorf("with TLS: %+v, %+v, %v", plain, tlsOpts, err)
	}
	for _, bad := range []map[string]string{
		{"TCP_PORT": "http"},
		{"TLS_PORT": "70000"},
		{"TLS_SERVER_CERT": certFile},
		{"TLS_SERVER_CERT": certFile, "TLS_SERVER_PRIV_KEY": filepath.Join(dir, "missing")},
	} {
		if _, _, err := tcpecho.FromEnv(env(bad), pod); err == nil {
			t.Errorf("FromEnv(%v): no error", bad)
		} else {
			for k := range bad {
				if !strings.Contains(err.Error(), k) {
					t.Errorf("FromEnv(%v) error %q does not name %s", bad, err, k)
				}
			}
		}
	}
}

func ExampleServer() {
	s := tcpecho.New(tcpecho.Options{Addr: "127.0.0.1:0"})
	if err := s.Listen(); err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	s.SetOpen(false) // connects are refused now
	s.SetOpen(true)  // and accepted again, on the same address
	fmt.Println(s.IsOpen())
	// Output: true
}
