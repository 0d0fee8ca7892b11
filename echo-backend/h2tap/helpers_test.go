package h2tap_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/gatewitness/gatewitness/echo-backend/h2tap"
	"github.com/gatewitness/gatewitness/internal/testcert"
)

// testTimeout bounds every wait in these tests; it is generous because the
// machine is shared.
const testTimeout = 30 * time.Second

type connKey struct{}

// listen opens a loopback listener closed at the end of the test.
func listen(t testing.TB) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

// serveH2C serves h over HTTP/1.1 and h2c (prior knowledge) on a tapped
// listener, as the package documentation shows, and returns its address.
// The request context carries the tapped net.Conn under connKey{}.
func serveH2C(t testing.TB, h http.Handler) string {
	t.Helper()
	ln := listen(t)
	var protos http.Protocols
	protos.SetHTTP1(true)
	protos.SetUnencryptedHTTP2(true)
	srv := &http.Server{
		Handler:   h,
		Protocols: &protos,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, connKey{}, c)
		},
	}
	go srv.Serve(h2tap.Listener(ln))
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// serveTLS serves h over TLS, HTTP/2 through the tap with x/net/http2 as the
// package documentation shows, and returns its address.
func serveTLS(t testing.TB, h http.Handler, cert tls.Certificate) string {
	t.Helper()
	ln := listen(t)
	srv := &http.Server{
		Handler:   h,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}},
		TLSNextProto: map[string]func(*http.Server, *tls.Conn, http.Handler){
			"h2": func(s *http.Server, c *tls.Conn, h http.Handler) {
				h2s := &http2.Server{}
				h2s.ServeConn(h2tap.WrapTLS(c), &http2.ServeConnOpts{BaseConfig: s, Handler: h})
			},
		},
	}
	go srv.ServeTLS(ln, "", "")
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// dialH2C opens one h2c client connection to addr.
func dialH2C(t testing.TB, addr string) *http2.ClientConn {
	t.Helper()
	return dialH2CConfig(t, addr, nil)
}

// dialH2CConfig is dialH2C with HTTP/2 settings from conf, if not nil.
func dialH2CConfig(t testing.TB, addr string, conf *http.HTTP2Config) *http2.ClientConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	tr := &http2.Transport{AllowHTTP: true}
	if conf != nil {
		t1 := &http.Transport{HTTP2: conf}
		if tr, err = http2.ConfigureTransports(t1); err != nil {
			t.Fatalf("ConfigureTransports: %v", err)
		}
		tr.AllowHTTP = true
	}
	cc, err := tr.NewClientConn(c)
	if err != nil {
		t.Fatalf("NewClientConn: %v", err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

// dialTLS opens one HTTP/2 over TLS client connection to addr.
func dialTLS(t testing.TB, addr string, roots *x509.CertPool) *http2.ClientConn {
	t.Helper()
	c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: roots, ServerName: "localhost", NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	if p := c.ConnectionState().NegotiatedProtocol; p != "h2" {
		t.Fatalf("negotiated %q, want h2", p)
	}
	cc, err := (&http2.Transport{}).NewClientConn(c)
	if err != nil {
		t.Fatalf("NewClientConn: %v", err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

// testCert returns a server certificate for localhost, 127.0.0.1 and ::1,
// and a pool that trusts it.
func testCert(t testing.TB) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	c := testcert.New(t)
	return c.TLS, c.Pool
}

// streamCode returns the code of the HTTP/2 stream error in err.
func streamCode(t testing.TB, err error) http2.ErrCode {
	t.Helper()
	var se http2.StreamError
	if !errors.As(err, &se) {
		t.Fatalf("got error %v (%T), want an http2.StreamError", err, err)
	}
	return se.Code
}
