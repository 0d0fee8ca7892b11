package dataplane

// Tunnels: an upgraded HTTP connection (WebSocket) and a TLS passthrough
// connection are byte pipes between a client and a backend, bounded by the
// Gateway's Tunnel, ClientFin and ServerFin timeouts (conntimeouts.go).

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gatewitness/gatewitness/gateway/dataplane/internal/part"
	"github.com/gatewitness/gatewitness/gateway/ir"
)

// halfCloser is a connection whose write side can be shut on its own
// (*net.TCPConn, *tls.Conn).
type halfCloser interface {
	CloseWrite() error
}

// tunnelSide is one end of a tunnel: the connection, what reads from it
// (which may hold bytes already buffered), and the time of its last
// activity.
type tunnelSide struct {
	conn net.Conn
	r    io.Reader
	// last is the time of the last byte read from or written to the side,
	// or of the gateway shutting its writes to it, in nanoseconds since
	// the tunnel's start.
	last atomic.Int64
	// shut is set once the gateway has shut its writes to this side
	// because the other side half-closed.
	shut atomic.Bool
	// idle is the side's inactivity limit while both directions are open,
	// and fin the limit once shut is set; zero means none.
	idle, fin time.Duration
}

// tunnel carries bytes both ways between client and backend until both
// directions have ended, or until a side stays inactive beyond its limit:
// Tunnel on either side (or Client and Server where Tunnel is zero); once
// one side half-closes, the gateway shuts its writes to the other side,
// whose limit becomes ClientFin (the client side) or ServerFin (the
// backend side). When a limit expires both connections are closed. tunnel
// closes both connections before it returns and reports which limit ended
// it ("" when both directions ended normally). relay passes a half-close
// on (part.Relay.HalfClose), and reload is told of the tunnel's limits so
// that it can restart them (part.Reload.Tunnel).
func tunnel(client net.Conn, clientR io.Reader, backend net.Conn, backendR io.Reader, t ir.ConnectionTimeouts,
	relay part.Relay, reload part.Reload) string {
	start := time.Now()
	now := func() int64 { return int64(time.Since(start)) }
	cs := &tunnelSide{conn: client, r: clientR, idle: cmpOr(t.Tunnel, t.Client), fin: cmpOr(t.ClientFin, cmpOr(t.Tunnel, t.Client))}
	bs := &tunnelSide{conn: backend, r: backendR, idle: cmpOr(t.Tunnel, t.Server), fin: cmpOr(t.ServerFin, cmpOr(t.Tunnel, t.Server))}
	// Deadlines an HTTP server or dialer left on the connections would
	// end the tunnel early; its limits are kept by the watchdog below.
	_ = client.SetDeadline(time.Time{})
	_ = backend.SetDeadline(time.Time{})
	defer reload.Tunnel(func() {
		cs.last.Store(now())
		bs.last.Store(now())
	})()

	changed := make(chan struct{}, 1) // a side was shut: its limit changed
	var wg sync.WaitGroup
	pipe := func(from, to *tunnelSide) {
		defer wg.Done()
		bp := bufPool.Get().(*[]byte)
		defer bufPool.Put(bp)
		buf := *bp
		for {
			n, err := from.r.Read(buf)
			if n > 0 {
				from.last.Store(now())
				if _, werr := to.conn.Write(buf[:n]); werr != nil {
					// The receiving side is gone: nothing more can be
					// delivered either way.
					client.Close()
					backend.Close()
					return
				}
				to.last.Store(now())
			}
			if err != nil {
				if !errors.Is(err, io.EOF) {
					client.Close()
					backend.Close()
					return
				}
				// A half-close: pass it on, and give the receiving side
				// its -fin limit.
				if relay.HalfClose(to.conn, from == bs) {
					to.last.Store(now())
					to.shut.Store(true)
					select {
					case changed <- struct{}{}:
					default:
					}
					return
				}
				client.Close()
				backend.Close()
				return
			}
		}
	}
	wg.Add(2)
	go pipe(cs, bs)
	go pipe(bs, cs)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()

	expired := watchTunnel(done, changed, now, cs, bs)
	client.Close()
	backend.Close()
	<-done
	switch expired {
	case cs:
		if cs.shut.Load() {
			return "client-fin timeout"
		}
		return "client side idle timeout"
	case bs:
		if bs.shut.Load() {
			return "server-fin timeout"
		}
		return "server side idle timeout"
	}
	return ""
}

// watchTunnel waits until done is closed (it returns nil) or until a side
// has been inactive beyond its current limit (it returns that side).
func watchTunnel(done, changed <-chan struct{}, now func() int64, sides ...*tunnelSide) *tunnelSide {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		var first *tunnelSide
		var at int64
		for _, s := range sides {
			limit := s.idle
			if s.shut.Load() {
				limit = s.fin
			}
			if limit <= 0 {
				continue
			}
			d := s.last.Load() + int64(limit)
			if first == nil || d < at {
				first, at = s, d
			}
		}
		if first != nil && now() >= at {
			return first
		}
		var wake <-chan time.Time
		if first != nil {
			timer.Reset(time.Duration(at - now()))
			wake = timer.C
		}
		select {
		case <-done:
			return nil
		case <-changed:
		case <-wake:
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
	}
}

// cmpOr returns a unless it is zero, else b.
func cmpOr(a, b time.Duration) time.Duration {
	if a != 0 {
		return a
	}
	return b
}

// upgradedConn is the backend end of a switched-protocol exchange: the
// connection and the reader that already holds the bytes read past the
// 101 response.
type upgradedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *upgradedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// closingBody closes the connection when the response body is closed.
type closingBody struct {
	io.ReadCloser
	conn net.Conn
	stop func() bool
}

func (b *closingBody) Close() error {
	b.stop()
	err := b.ReadCloser.Close()
	b.conn.Close()
	return err
}

// forwardUpgrade sends a request that asks for a protocol upgrade over a
// connection of its own, rather than through the shared transport, so that
// after a 101 the tunnel holds the backend's real connection and can
// half-close it. Any other response is returned as usual, its body closing
// the connection. ctx bounds everything until the response headers (and,
// without an upgrade, the body).
func (s *Server) forwardUpgrade(ctx context.Context, req *http.Request, endpoint string) (*http.Response, error) {
	d := net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
	conn, err := d.DialContext(ctx, "tcp", endpoint)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", endpoint, err)
	}
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	fail := func(err error) (*http.Response, error) {
		stop()
		conn.Close()
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		return nil, err
	}
	if req.ContentLength == 0 {
		// An upgrade request carries no body (forbidTransportResend may
		// have given it an empty one, which Write would frame as chunked).
		bodiless := *req
		bodiless.Body = nil
		req = &bodiless
	}
	if err := req.Write(conn); err != nil {
		return fail(fmt.Errorf("writing the upgrade request to %s: %w", endpoint, err))
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		return fail(fmt.Errorf("reading the upgrade response from %s: %w", endpoint, err))
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		resp.Body = &closingBody{ReadCloser: resp.Body, conn: conn, stop: stop}
		return resp, nil
	}
	if !stop() {
		// ctx ended as the response arrived; the connection is closed.
		return fail(errors.New("the exchange ended as the upgrade completed"))
	}
	resp.Body = &upgradedConn{Conn: conn, r: br}
	return resp, nil
}
