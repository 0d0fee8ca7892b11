package httpecho_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/gatewitness/gatewitness/echo-backend/control"
	"github.com/gatewitness/gatewitness/echo-backend/h2tap"
	"github.com/gatewitness/gatewitness/echo-backend/httpecho"
	"github.com/gatewitness/gatewitness/echo-backend/ledger"
	"github.com/gatewitness/gatewitness/echo-backend/podinfo"
	"github.com/gatewitness/gatewitness/internal/testcert"
)

const serverName = "echo.test"

var testPod = podinfo.Info{Namespace: "gatewitness", Ingress: "ing", Service: "echo", Pod: "echo-7d9f-abc"}

// env is the three ports of one backend, sharing a ledger and controls.
type env struct {
	ledger   *ledger.Ledger
	controls *control.Controls
	certPEM  []byte
	pool     *x509.CertPool

	httpURL, h2cURL, httpsURL string
}

func newEnv(t testing.TB) *env { t.Helper(); return newEnvWith(t, nil) }

// newEnvWith is newEnv with every port's options changed by mod.
func newEnvWith(t testing.TB, mod func(*httpecho.Options)) *env {
	t.Helper()
	e := &env{ledger: ledger.New(ledger.Options{}), controls: control.New()}
	t.Cleanup(e.ledger.Close)

	tc := testcert.New(t, serverName, "127.0.0.1")
	e.certPEM, e.pool = tc.CertPEM, tc.Pool
	cert := tc.TLS

	opts := func(listener string) httpecho.Options {
		return httpecho.Options{Pod: testPod, HTTPPort: "3000", Ledger: e.ledger, Controls: e.controls, Listener: listener}
	}
	serve := func(listener string, wrap func(net.Listener) net.Listener, run func(*http.Server, net.Listener) error) string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		o := opts(listener)
		o.RequireH2C = listener == "h2c"
		if mod != nil {
			mod(&o)
		}
		srv := httpecho.NewServer(o)
		if listener == "https" {
			srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}}
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			run(srv, wrap(ln))
		}()
		t.Cleanup(func() {
			srv.Close()
			<-done
		})
		return ln.Addr().String()
	}
	same := func(ln net.Listener) net.Listener { return ln }
	plain := func(s *http.Server, ln net.Listener) error { return s.Serve(ln) }
	e.httpURL = "http://" + serve("http", same, plain)
	e.h2cURL = "http://" + serve("h2c", h2tap.Listener, plain)
	e.httpsURL = "https://" + serve("https", same, func(s *http.Server, ln net.Listener) error { return s.ServeTLS(ln, "", "") })
	return e
}

// transport is one way of reaching the backend.
type transport struct {
	name     string
	listener string // ledger name of the port
	proto    string // r.Proto the backend sees
	base     func(*env) string
	client   func(*env) *http.Client
}

func (tr transport) h2() bool { return tr.proto == "HTTP/2.0" }

var (
	viaHTTP = transport{"http1", "http", "HTTP/1.1", func(e *env) string { return e.httpURL }, func(e *env) *http.Client {
		return &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	}}
	viaH2C = transport{"h2c", "h2c", "HTTP/2.0", func(e *env) string { return e.h2cURL }, func(e *env) *http.Client {
		return &http.Client{Transport: &http2.Transport{AllowHTTP: true,
			DialTLSContext: func(ctx context.Context, network, addr string, _ *tls.Config) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, network, addr)
			}}}
	}}
	viaTLSH1 = transport{"tls-http1", "https", "HTTP/1.1", func(e *env) string { return e.httpsURL }, func(e *env) *http.Client {
		return &http.Client{Transport: &http.Transport{DisableKeepAlives: true,
			TLSClientConfig: &tls.Config{RootCAs: e.pool, ServerName: serverName}}}
	}}
	viaTLSH2 = transport{"tls-h2", "https", "HTTP/2.0", func(e *env) string { return e.httpsURL }, func(e *env) *http.Client {
		return &http.Client{Transport: &http2.Transport{TLSClientConfig: &tls.Config{RootCAs: e.pool, ServerName: serverName}}}
	}}
	allTransports = []transport{viaHTTP, viaH2C, viaTLSH1, viaTLSH2}
	h2Transports  = []transport{viaH2C, viaTLSH2}
	h1Transports  = []transport{viaHTTP, viaTLSH1}
)

// do sends a request with the given fault spec and id (either may be
// empty) and returns the response with its body read.
func do(t *testing.T, c *http.Client, method, url, id, spec string, body io.Reader) (*http.Response, []byte, error) {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	if id != "" {
		req.Header.Set("X-Gatewitness-Id", id)
	}
	if spec != "" {
		req.Header.Set("X-Gatewitness-Fault", spec)
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, b, err
}

// mustDo is do for requests that must succeed.
func mustDo(t *testing.T, c *http.Client, method, url, id, spec string) (*http.Response, []byte) {
	t.Helper()
	resp, b, err := do(t, c, method, url, id, spec, nil)
	if err != nil {
		t.Fatalf("%s %s (fault %q): %v", method, url, spec, err)
	}
	return resp, b
}

// echoOf decodes an echo body.
func echoOf(t *testing.T, b []byte) httpecho.Echo {
	t.Helper()
	var e httpecho.Echo
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatalf("decoding echo %q: %v", b, err)
	}
	return e
}

// waitEntry polls the ledger until id has n ended attempts.
func waitEntry(t *testing.T, l *ledger.Ledger, id string, n int) ledger.Entry {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		e, ok := l.Get(id)
		ended := 0
		for _, a := range e.Attempts {
			if a.Ended != nil {
				ended++
			}
		}
		if ok && ended >= n {
			return e
		}
		if time.Now().After(deadline) {
			t.Fatalf("ledger %q: want %d ended attempts, have %+v", id, n, e)
		}
		<-time.After(5 * time.Millisecond) // poll interval
	}
}

// waitArrived polls the ledger until id has n attempts that arrived, ended
// or not.
func waitArrived(t *testing.T, l *ledger.Ledger, id string, n int) ledger.Entry {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		e, ok := l.Get(id)
		if ok && len(e.Attempts) >= n {
			return e
		}
		if time.Now().After(deadline) {
			t.Fatalf("ledger %q: want %d attempts, have %+v", id, n, e)
		}
		<-time.After(5 * time.Millisecond) // poll interval
	}
}

var idSeq atomic.Int64

// newID returns a request id unique within the test binary.
func newID(t *testing.T) string {
	return strings.ReplaceAll(t.Name(), "/", "-") + "-" + strconv.FormatInt(idSeq.Add(1), 10)
}

// isReset reports whether err is a TCP reset seen by the client.
func isReset(err error) bool {
	return err != nil && (errors.Is(err, syscall.ECONNRESET) || strings.Contains(err.Error(), "connection reset by peer"))
}
