package httpecho

import (
	"context"
	"crypto/tls"
	"log"
	"net/http"
	"time"

	"golang.org/x/net/http2"

	"github.com/gatewitness/gatewitness/echo-backend/fault"
	"github.com/gatewitness/gatewitness/echo-backend/h2tap"
)

// ReadHeaderTimeout is the default time a client has to send request
// headers (Timeouts.ReadHeader).
const ReadHeaderTimeout = 10 * time.Second

// Defaults of the other Timeouts.
const (
	DefaultReadTimeout = time.Minute
	DefaultIdleTimeout = 5 * time.Minute
	// DefaultWriteSlack is what the default write timeout adds to
	// Limits.MaxDelay, which bounds the whole time of an attempt.
	DefaultWriteSlack = time.Minute
)

// Timeouts bound how long a client may hold a connection or a request,
// so that a slow or silent client cannot keep a backend's connections and
// goroutines for ever. Zero fields take their defaults. The defaults
// disturb no fault: the write timeout outlasts the longest attempt a fault
// may ask for, and the others bound only what the client sends.
type Timeouts struct {
	// ReadHeader bounds the request line and headers, and the silence of a
	// new connection before its first request (net/http's
	// ReadHeaderTimeout). Default 10s.
	ReadHeader time.Duration
	// Read bounds the request body: all of it must have arrived this long
	// after the request did, or the attempt is answered 408. It is not
	// net/http's ReadTimeout, which would also cancel the handler of a
	// delayed answer when it expires. Default 1m.
	Read time.Duration
	// Write bounds the answer: it must have been written this long after
	// the request headers were read (net/http's WriteTimeout; on HTTP/2 the
	// stream is then reset). Default Limits.MaxDelay plus 1m.
	Write time.Duration
	// Idle bounds the wait for the next request on a kept-alive HTTP/1.1
	// connection, and the life of an HTTP/2 connection without streams.
	// Default 5m: longer than the idle timeouts proxies keep their own
	// upstream connections for by default (90s for Go's transport), so that
	// a proxy does not reuse a connection the backend is closing.
	Idle time.Duration
}

// WithDefaults returns t with its zero fields set to their defaults for
// the fault limits lim.
func (t Timeouts) WithDefaults(lim fault.Limits) Timeouts {
	if t.ReadHeader <= 0 {
		t.ReadHeader = ReadHeaderTimeout
	}
	if t.Read <= 0 {
		t.Read = DefaultReadTimeout
	}
	if t.Write <= 0 {
		maxDelay := lim.MaxDelay
		if maxDelay <= 0 {
			maxDelay = fault.DefaultLimits.MaxDelay
		}
		t.Write = maxDelay + DefaultWriteSlack
	}
	if t.Idle <= 0 {
		t.Idle = DefaultIdleTimeout
	}
	return t
}

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
//
// The server's timeouts are opts.Timeouts (with their defaults), and its
// error log (a line per broken connection, such as a client that does not
// speak HTTP/2 on the h2c port) goes to opts.ErrorLog.
func NewServer(opts Options) *http.Server {
	opts.Timeouts = opts.Timeouts.WithDefaults(opts.Limits)
	srv := &http.Server{
		Handler:           NewHandler(opts),
		ConnContext:       ConnContext,
		ReadHeaderTimeout: opts.Timeouts.ReadHeader,
		WriteTimeout:      opts.Timeouts.Write,
		IdleTimeout:       opts.Timeouts.Idle,
	}
	if opts.ErrorLog != nil {
		srv.ErrorLog = log.New(opts.ErrorLog, "", log.LstdFlags)
	}
	switch opts.Listener {
	case "h2c":
		var p http.Protocols
		p.SetHTTP1(true)
		p.SetUnencryptedHTTP2(true)
		srv.Protocols = &p
	case "https":
		h2 := &http2.Server{IdleTimeout: opts.Timeouts.Idle}
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
