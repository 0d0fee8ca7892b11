package dataplane

// What the gateway follows of a client connection's raw bytes, below
// net/http: on HTTP/1.1, each request head's framing
// (internal/h1framing), so that only a request whose framing was in doubt
// closes its connection.

import (
	"bytes"
	"context"
	"crypto/tls"
	"net"
	"net/http"

	"golang.org/x/net/http2"

	"github.com/gatewitness/gatewitness/gateway/dataplane/internal/h1framing"
)

// guardedConn is a client connection whose bytes are followed as net/http
// reads them. Until its first bytes tell, it is neither HTTP/1.1 nor
// HTTP/2 (whose connections open with the client preface).
type guardedConn struct {
	net.Conn
	tls    *tls.Conn // the TLS layer under Conn on an HTTPS socket, else nil
	mode   connMode
	opened []byte // the first bytes, while they may still be the preface
	h1     h1framing.Follower
}

type connMode int

const (
	modeUnknown connMode = iota
	modeHTTP1
	modeHTTP2
)

func (c *guardedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.follow(p[:n])
	}
	return n, err
}

// follow passes bytes read to what follows the connection's protocol.
func (c *guardedConn) follow(p []byte) {
	switch c.mode {
	case modeHTTP1:
		c.h1.Feed(p)
		return
	case modeHTTP2:
		return
	}
	c.opened = append(c.opened, p...)
	preface := []byte(http2.ClientPreface)
	k := min(len(c.opened), len(preface))
	switch {
	case !bytes.Equal(c.opened[:k], preface[:k]):
		c.mode = modeHTTP1
		c.h1.Feed(c.opened)
	case k == len(preface):
		c.mode = modeHTTP2
	default:
		return // not yet known
	}
	c.opened = nil
}

// CloseWrite shuts down the writing side (tunnels half-close through it).
func (c *guardedConn) CloseWrite() error {
	if hc, ok := c.Conn.(halfCloser); ok {
		return hc.CloseWrite()
	}
	return &net.OpError{Op: "close", Net: "tcp", Err: errNoHalfClose}
}

// tlsListener accepts TLS connections, decrypted below net/http: the TLS
// handshake runs on the first read, which net/http bounds by its header
// timeout, and the request learns the connection's TLS state from
// tlsState.
type tlsListener struct {
	net.Listener
	config *tls.Config
}

func (l tlsListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	tc := tls.Server(c, l.config)
	return &guardedConn{Conn: tc, tls: tc}, nil
}

// tlsState returns the TLS state of r's connection when the gateway
// decrypted it, else nil.
func tlsState(r *http.Request) *tls.ConnectionState {
	gc, _ := r.Context().Value(guardedConnKey{}).(*guardedConn)
	if gc == nil || gc.tls == nil {
		return nil
	}
	st := gc.tls.ConnectionState()
	return &st
}

// guardedConnKey is the context key of a request's guardedConn.
type guardedConnKey struct{}

// withGuardedConn is an http.Server's ConnContext: a request's context
// carries its connection when the gateway follows it.
func withGuardedConn(ctx context.Context, c net.Conn) context.Context {
	if gc, ok := c.(*guardedConn); ok {
		return context.WithValue(ctx, guardedConnKey{}, gc)
	}
	return ctx
}

// framingInDoubt reports whether an HTTP/1.1 request's framing was in
// doubt (RFC 9112 section 6.1: Content-Length with Transfer-Encoding, a
// repeated or folded Transfer-Encoding, any folded line), so its
// connection must close after the response. On a connection the gateway
// does not follow, every chunked request is taken for one in doubt. It must be asked once for every HTTP/1.1
// request, in order.
func framingInDoubt(r *http.Request) bool {
	gc, _ := r.Context().Value(guardedConnKey{}).(*guardedConn)
	if gc == nil {
		return len(r.TransferEncoding) > 0
	}
	return gc.h1.Next(r.Method, r.RequestURI).Doubtful
}
