package dataplane

import (
	"bufio"
	"context"
	"errors"
	"net"
	"sync"

	"github.com/gatewitness/gatewitness/gateway/dataplane/internal/h2guard"
)

// readBufferSize is the read buffer of a cleartext client connection.
const readBufferSize = 8 << 10

// bufferedListener gives every connection it accepts a read buffer.
//
// net/http's HTTP/2 server reads frames straight from the connection: a
// 9-byte frame header, then the payload, two system calls per frame, so a
// unary gRPC call (HEADERS, DATA, then the client's WINDOW_UPDATE and
// PING) cost the gateway eight reads on that side alone. With the buffer,
// the frames that arrived together are read with one. HTTP/1.1 already
// buffers its reads (the extra copy is cheap), and TLS reads whole records
// into its own buffer, so only cleartext listeners are wrapped.
type bufferedListener struct {
	net.Listener
	h2   h2guard.Limits          // the frame guard's, for connections that turn out HTTP/2 (connguard.go)
	conn func(net.Conn) net.Conn // the Relay part's Conn (parts.go)
}

func (l bufferedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	// What net/http reads is followed (connguard.go).
	return &guardedConn{Conn: l.conn(&bufferedConn{Conn: c, r: bufio.NewReaderSize(c, readBufferSize)}), h2limits: l.h2}, nil
}

// bufferedConn is a connection whose reads go through a buffer. Everything
// else is the connection's own; CloseWrite is passed on for the tunnels'
// half-close (tunnel.go).
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// CloseWrite shuts down the writing side of the connection, if it has one
// (a *net.TCPConn does).
func (c *bufferedConn) CloseWrite() error {
	if hc, ok := c.Conn.(halfCloser); ok {
		return hc.CloseWrite()
	}
	return &net.OpError{Op: "close", Net: "tcp", Err: errNoHalfClose}
}

var errNoHalfClose = errors.New("the connection cannot shut its writing side alone")

// coalescingConn is an upstream HTTP/2 connection whose writes are made by
// a goroutine that writes everything pending at once.
//
// net/http's HTTP/2 client flushes every frame it writes: a unary gRPC call
// went to the backend as three writes (HEADERS, the DATA frame of the
// message, and an empty DATA frame that ends the stream), each a system
// call and a wake-up of the backend's reader. Here Write only appends to a
// buffer and starts the writer unless it is running; frames written while
// it writes leave together in its next write, so the three usually leave
// as one, and nothing waits for a timer. Write returns the error of an
// earlier write that failed, and blocks while maxPending bytes are
// waiting, so a backend that stops reading still stops the client.
// Close closes the connection at once: what is still pending is dropped,
// as it would be lost with the connection anyway.
type coalescingConn struct {
	net.Conn
	mu      sync.Mutex
	cond    sync.Cond // signals that pending shrank or the writer stopped
	pending []byte
	spare   []byte
	writing bool
	err     error
}

// maxPending bounds the bytes waiting to be written on one connection.
const maxPending = 256 << 10

func newCoalescingConn(c net.Conn) *coalescingConn {
	cc := &coalescingConn{Conn: c}
	cc.cond.L = &cc.mu
	return cc
}

func (c *coalescingConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.err == nil && len(c.pending) >= maxPending {
		c.cond.Wait()
	}
	if c.err != nil {
		return 0, c.err
	}
	c.pending = append(c.pending, p...)
	if !c.writing {
		c.writing = true
		go c.writeLoop()
	}
	return len(p), nil
}

// writeLoop writes what is pending until nothing is.
func (c *coalescingConn) writeLoop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(c.pending) > 0 && c.err == nil {
		buf := c.pending
		c.pending = c.spare[:0]
		c.mu.Unlock()
		_, err := c.Conn.Write(buf)
		c.mu.Lock()
		c.spare = buf
		if err != nil {
			c.err = err
		}
		c.cond.Broadcast()
	}
	c.writing = false
}

// coalescingDialer dials with d and returns coalescing connections.
func coalescingDialer(d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return newCoalescingConn(c), nil
	}
}
