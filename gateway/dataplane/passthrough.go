package dataplane

// TLS passthrough listeners (protocol TLS, mode Passthrough): the gateway
// reads the client's ClientHello (clienthello.go) to learn the SNI, picks a
// TLSRoute by it, dials one of the route's backends, replays the
// ClientHello to it and then carries the still-encrypted bytes both ways
// (tunnel.go). TLS is never terminated.
//
// The ClientHello must arrive within the Gateway's TLSInspectDelay,
// counted from the accept: HAProxy's "tcp-request inspect-delay", the
// longest wait for the content a routing decision needs. A client that
// sends none (or only part of one) in time is closed, and no backend is
// dialed. With TLSInspectDelay zero the wait is bounded by the Client
// timeout, and with both zero by defaultInspectLimit.

import (
	"cmp"
	"context"
	"errors"
	"net"
	"sync"
	"time"

	"github.com/gatewitness/gatewitness/gateway/ir"
)

// defaultInspectLimit bounds the wait for a ClientHello when neither
// TLSInspectDelay nor Client is set, as an HTTP listener's wait for request
// headers is bounded by default.
const defaultInspectLimit = 30 * time.Second

// passthroughDialTimeout bounds the TCP connect to a backend.
const passthroughDialTimeout = 5 * time.Second

// inspectLimit is how long a passthrough listener waits for a ClientHello.
func inspectLimit(t ir.ConnectionTimeouts) time.Duration {
	return cmpOr(t.TLSInspectDelay, cmpOr(t.Client, defaultInspectLimit))
}

// passthroughServer serves one TLS passthrough socket. Its connections,
// client and backend sides, are tracked so that close ends them all.
type passthroughServer struct {
	s   *Server
	key portKey
	ln  net.Listener
	t   ir.ConnectionTimeouts

	ctx    context.Context // ends backend dials when the socket closes
	cancel context.CancelFunc

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
}

func newPassthroughServer(s *Server, key portKey, ln net.Listener, t ir.ConnectionTimeouts) *passthroughServer {
	ctx, cancel := context.WithCancel(s.ctx)
	return &passthroughServer{s: s, key: key, ln: ln, t: t, ctx: ctx, cancel: cancel, conns: map[net.Conn]struct{}{}}
}

// serve accepts connections until the listener is closed, and handles each
// in a goroutine of the Server's wait group.
func (p *passthroughServer) serve() {
	var backoff time.Duration
	for {
		conn, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of file descriptors and the like: back off so that the
			// loop does not spin, as net/http does.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			t := time.NewTimer(backoff)
			select {
			case <-t.C:
			case <-p.ctx.Done():
				t.Stop()
				return
			}
			continue
		}
		backoff = 0
		if !p.track(conn) {
			conn.Close()
			continue
		}
		p.s.wg.Go(func() { p.handle(conn) })
	}
}

// track registers c so that close closes it; false once closed.
func (p *passthroughServer) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *passthroughServer) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

// close closes the socket and every connection through it, and stops
// dials in progress. The goroutines end on their own (Server.Close waits
// for them).
func (p *passthroughServer) close() error {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.cancel()
	return p.ln.Close()
}

// handle inspects one client connection and tunnels it to the backend its
// SNI selects, or closes it.
func (p *passthroughServer) handle(client net.Conn) {
	defer p.untrack(client)
	defer client.Close()
	log := p.s.log.WithValues("socket", p.key.String(), "client", client.RemoteAddr().String())

	accepted := time.Now()
	limit := inspectLimit(p.t)
	_ = client.SetReadDeadline(accepted.Add(limit))
	hello, serverName, err := readClientHello(client)
	if err != nil {
		log.V(1).Info("TLS passthrough: no ClientHello within the inspect delay; closing without a backend connection",
			"inspectDelay", limit, "after", time.Since(accepted).String(), "bytes", len(hello), "error", err.Error())
		return
	}
	_ = client.SetReadDeadline(time.Time{})

	pt := p.s.snap.Load().ports[p.key]
	var e *tlsEntry
	if pt != nil {
		e = pt.matchTLS(serverName)
	}
	if e == nil {
		log.V(1).Info("TLS passthrough: no TLSRoute for the SNI; closing", "sni", serverName)
		return
	}
	b := e.action.pick()
	endpoint := ""
	if b != nil && !b.invalid {
		endpoint = b.pickEndpoint()
	}
	if endpoint == "" {
		log.V(1).Info("TLS passthrough: the route has no usable backend endpoint; closing", "sni", serverName, "route", e.route)
		return
	}

	d := net.Dialer{Timeout: passthroughDialTimeout, KeepAlive: 30 * time.Second}
	backend, err := d.DialContext(p.ctx, "tcp", endpoint)
	if err != nil {
		log.V(1).Info("TLS passthrough: dialing the backend failed; closing", "sni", serverName, "route", e.route, "endpoint", endpoint, "error", err.Error())
		return
	}
	if !p.track(backend) {
		backend.Close()
		return
	}
	defer p.untrack(backend)
	if _, err := backend.Write(hello); err != nil {
		backend.Close()
		log.V(1).Info("TLS passthrough: replaying the ClientHello to the backend failed; closing", "endpoint", endpoint, "error", err.Error())
		return
	}
	why := tunnel(client, client, backend, backend, p.t, relay{}, noReload{}) // parts.go: a TLS tunnel is always relayed so
	log.V(1).Info("TLS passthrough: tunnel ended", "sni", serverName, "route", e.route, "endpoint", endpoint, "reason", cmp.Or(why, "both directions ended"))
}
