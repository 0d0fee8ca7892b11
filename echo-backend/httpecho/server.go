package httpecho

import (
	"context"
	"crypto/tls"
	"net/http"
	"time"

	"golang.org/x/net/http2"

	"github.com/gatecheck/gatecheck/echo-backend/h2tap"
)

// ReadHeaderTimeout is the time a client has to send request headers.
const ReadHeaderTimeout = 10 * time.Second

// NewServer returns the server of one port, serving NewHandler(opts) with
// ConnContext. How to serve it depends on opts.Listener:
//
//	"http":  srv.Serve(ln)                  HTTP/1.1
//	"h2c":   srv.Serve(h2tap.Listener(ln))  HTTP/1.1 and HTTP/2 with prior knowledge
//	"https": srv.ServeTLS(ln, cert, key)    TLS with ALPN h2 and http/1.1
//
// The h2c listener must be tapped so that handlers can reset their HTTP/2
// stream or send GOAWAY. For "https", srv.TLSConfig may be set instead of
// the files (then pass empty names), for instance to ask for client
// certificates. HTTP/2 over TLS is served by golang.org/x/net/http2 on the
// tapped connection (net/http's own HTTP/2 server only takes a *tls.Conn);
// HTTP/1.1 over TLS is not tapped.
func NewServer(opts Options) *http.Server {
	srv := &http.Server{
		Handler:           NewHandler(opts),
		ConnContext:       ConnContext,
		ReadHeaderTimeout: ReadHeaderTimeout,
	}
	switch opts.Listener {
	case "h2c":
		var p http.Protocols
		p.SetHTTP1(true)
		p.SetUnencryptedHTTP2(true)
		srv.Protocols = &p
	case "https":
		h2 := &http2.Server{}
		srv.TLSNextProto = map[string]func(*http.Server, *tls.Conn, http.Handler){
			"h2": func(hs *http.Server, c *tls.Conn, h http.Handler) { serveTappedH2(h2, hs, c, h) },
		}
	}
	return srv
}

// serveTappedH2 serves one TLS connection that negotiated "h2" through the
// tap. net/http already called ConnContext for c; the handler it passes
// carries that context.
func serveTappedH2(h2 *http2.Server, hs *http.Server, c *tls.Conn, h http.Handler) {
	conn := h2tap.WrapTLS(c)
	ctx := context.Background()
	if bc, ok := h.(interface{ BaseContext() context.Context }); ok {
		ctx = bc.BaseContext()
	}
	if connFrom(ctx) == nil {
		ctx = ConnContext(ctx, conn)
	}
	h2.ServeConn(conn, &http2.ServeConnOpts{Context: ctx, BaseConfig: hs, Handler: h})
}
