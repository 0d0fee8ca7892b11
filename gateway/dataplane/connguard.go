package dataplane

// What the gateway follows of a client connection's raw bytes, below
// net/http: on HTTP/1.1, each request head's framing
// (internal/h1framing), so that only a request whose framing was in doubt
// closes its connection; on HTTP/2, the frames that do no work
// (internal/h2guard), so that a client flooding them gets a GOAWAY with
// ENHANCE_YOUR_CALM and its connection ends. Net/http's HTTP/2 server has
// no hook for either: docs/semantics/request-limits.md says why the guard
// sits in front of it rather than replacing it.

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"

	"github.com/gatewitness/gatewitness/gateway/dataplane/internal/h1framing"
	"github.com/gatewitness/gatewitness/gateway/dataplane/internal/h2guard"
)

// guardedConn is a client connection whose bytes are followed as net/http
// reads them. Until its first bytes tell, it is neither HTTP/1.1 nor
// HTTP/2 (whose connections open with the client preface).
type guardedConn struct {
	net.Conn
	tls    *tls.Conn    // the TLS layer under Conn on an HTTPS socket, else nil
	mode   atomic.Int32 // a connMode, set once by the first reads
	opened []byte       // the first bytes, while they may still be the preface
	h1     h1framing.Follower

	h2limits h2guard.Limits
	h2       *h2guard.Guard // set with modeHTTP2
	// wmu serializes writes with the GOAWAY; calm is set once the client
	// has sent too many frames that do no work, goAway once the GOAWAY
	// has been written (nothing is written after it).
	wmu          sync.Mutex
	calm, goAway bool
	closeOnce    sync.Once
	closeErr     error
}

// errCalm is what reads and writes return on a connection ended for a
// flood of frames that do no work.
var errCalm = errors.New("the client sent more HTTP/2 frames that do no work than the gateway allows; the connection was ended with GOAWAY ENHANCE_YOUR_CALM")

type connMode int

const (
	modeUnknown connMode = iota
	modeHTTP1
	modeHTTP2     // HTTP/2, its frames guarded
	modeUnguarded // HTTP/2 with the frame guard off
)

func (c *guardedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 && c.follow(p[:n]) {
		c.endCalm()
		return 0, errCalm
	}
	return n, err
}

// follow passes bytes read to what follows the connection's protocol, and
// reports whether the connection must end for a flood.
func (c *guardedConn) follow(p []byte) bool {
	switch connMode(c.mode.Load()) {
	case modeHTTP1:
		c.h1.Feed(p)
		return false
	case modeHTTP2:
		return c.h2.Read(p, time.Now())
	case modeUnguarded:
		return false
	}
	c.opened = append(c.opened, p...)
	preface := []byte(http2.ClientPreface)
	k := min(len(c.opened), len(preface))
	calm := false
	switch {
	case !bytes.Equal(c.opened[:k], preface[:k]):
		c.h1.Feed(c.opened)
		c.mode.Store(int32(modeHTTP1))
	case k == len(preface):
		if c.h2limits.Burst <= 0 {
			c.mode.Store(int32(modeUnguarded))
			break
		}
		c.h2 = h2guard.New(c.h2limits, time.Now())
		calm = c.h2.Read(c.opened[k:], time.Now())
		c.mode.Store(int32(modeHTTP2))
	default:
		return false // not yet known
	}
	c.opened = nil
	return calm
}

func (c *guardedConn) Write(p []byte) (int, error) {
	if connMode(c.mode.Load()) != modeHTTP2 {
		return c.Conn.Write(p)
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	switch {
	case c.goAway:
		return 0, errCalm
	case c.calm:
		// The GOAWAY waits for the end of the frame in progress.
		k := c.h2.FrameEnd(p)
		if k < 0 {
			n, err := c.Conn.Write(p)
			c.h2.Write(p[:n])
			return n, err
		}
		if _, err := c.Conn.Write(p[:k]); err == nil {
			c.writeGoAway()
		}
		return 0, errCalm
	}
	n, err := c.Conn.Write(p)
	c.h2.Write(p[:n])
	return n, err
}

// goAwayTimeout bounds the write of the GOAWAY, and the wait for the end
// of a frame the server was writing when the flood was seen.
const goAwayTimeout = 100 * time.Millisecond

// endCalm ends the connection for a flood: the GOAWAY goes out now when
// the server's frames end with a whole one, else after the frame in
// progress (Write), and the connection closes goAwayTimeout later at the
// latest.
func (c *guardedConn) endCalm() {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.calm {
		return
	}
	c.calm = true
	if c.h2.AtBoundary() {
		c.writeGoAway()
		return
	}
	time.AfterFunc(goAwayTimeout, func() { c.Conn.Close() })
}

// writeGoAway writes the GOAWAY and shuts the writing side; wmu is held.
// The reading side stays open a moment (Close): a close with unread bytes
// would reset the connection, and the client might lose the GOAWAY.
func (c *guardedConn) writeGoAway() {
	c.goAway = true
	_ = c.Conn.SetWriteDeadline(time.Now().Add(goAwayTimeout))
	_, _ = c.Conn.Write(c.h2.GoAway())
	_ = c.CloseWrite()
}

// Close closes the connection; one ended for a flood is drained for a
// moment first, in the background, so that its GOAWAY is not lost to a
// reset.
func (c *guardedConn) Close() error {
	c.closeOnce.Do(func() {
		c.wmu.Lock()
		goAway := c.goAway
		c.wmu.Unlock()
		if !goAway {
			c.closeErr = c.Conn.Close()
			return
		}
		go func() {
			_ = c.Conn.SetReadDeadline(time.Now().Add(time.Second))
			_, _ = io.Copy(io.Discard, io.LimitReader(c.Conn, 1<<20))
			c.Conn.Close()
		}()
	})
	return c.closeErr
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
	h2     h2guard.Limits
	conn   func(net.Conn) net.Conn // the Relay part's Conn (parts.go)
}

func (l tlsListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	tc := tls.Server(c, l.config)
	return &guardedConn{Conn: l.conn(tc), tls: tc, h2limits: l.h2}, nil
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
