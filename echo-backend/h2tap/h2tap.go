// Package h2tap wraps server-side HTTP/2 connections so that a handler can
// act on its own stream at the frame level: reset it with a chosen
// RST_STREAM error code, or send GOAWAY, which net/http and grpc-go do not
// let a handler do. It also tells each handler its connection and stream id.
//
// The tap decodes each request header block and re-encodes it with one extra
// header, StreamHeader, whose value is "<connID>/<streamID>"; a handler looks
// its Conn up with Lookup(connID). A connection that does not start with the
// HTTP/2 client preface (HTTP/1.1, h2c upgrade) passes through untouched.
//
// # How the tap works
//
// A Conn sits between the socket (or the TLS connection, after the
// handshake) and an unmodified HTTP/2 server. In both directions it splits
// the byte stream into frames and passes them on unchanged, except:
//
//   - Header blocks (HEADERS or PUSH_PROMISE plus CONTINUATION frames) are
//     decoded with a decoder that follows the sender's HPACK context and
//     re-encoded by the tap's own encoder, which never uses the dynamic
//     table. The receiver's decoder therefore follows the tap, so the tap is
//     free to add headers (client to server) or to drop whole header blocks
//     (server to client). Padding is dropped; END_STREAM and priority are
//     kept. Every request header block is tagged, trailers included:
//     StreamHeader is set, and when the block carries grpc-timeout,
//     GRPCTimeoutHeader is set to the same value. Client-sent copies of
//     either name are removed.
//   - After ResetStream, every frame the server writes for that stream is
//     dropped. For each dropped DATA frame the tap tells the server, as if
//     the client had, that the connection-level window is open again (a
//     WINDOW_UPDATE on stream 0), so resets never starve the connection.
//   - After GoAway(last, code), the streams up to last may complete: their
//     frames are forwarded as before. Every frame the server writes for a
//     stream above last is dropped (with the window given back, as after
//     ResetStream), and so is any GOAWAY of the server's own. Once every
//     stream up to last has ended, or after a grace period of 30 seconds,
//     the tap stops forwarding and closes the connection.
//   - ResetStream and GoAway wait until the server's first SETTINGS frame
//     was forwarded: a client must see it first.
//
// Client-to-server DATA is forwarded as it arrives; other frames are
// forwarded once complete. Server-to-client frames are forwarded once
// complete, so the frames the tap writes itself always land between frames.
//
// # Wiring
//
// h2c with prior knowledge and HTTP/1.1 on one port, with net/http:
//
//	var protos http.Protocols
//	protos.SetHTTP1(true)
//	protos.SetUnencryptedHTTP2(true)
//	srv := &http.Server{Handler: h, Protocols: &protos}
//	srv.Serve(h2tap.Listener(ln))
//
// TLS: net/http's built-in HTTP/2 server only accepts a *tls.Conn, so serve
// "h2" with golang.org/x/net/http2 on a tapped connection instead. WrapTLS
// keeps the TLS state, so r.TLS is set. HTTP/1.1 over TLS is not tapped
// (there is nothing to tap).
//
//	srv := &http.Server{
//		Handler:   h,
//		TLSConfig: &tls.Config{Certificates: certs},
//		TLSNextProto: map[string]func(*http.Server, *tls.Conn, http.Handler){
//			"h2": func(s *http.Server, c *tls.Conn, h http.Handler) {
//				h2s := &http2.Server{}
//				h2s.ServeConn(h2tap.WrapTLS(c), &http2.ServeConnOpts{BaseConfig: s, Handler: h})
//			},
//		},
//	}
//	srv.ServeTLS(ln, "", "")
//
// gRPC, plaintext or TLS:
//
//	grpc.NewServer(grpc.Creds(h2tap.Credentials(insecure.NewCredentials())))
//	grpc.NewServer(grpc.Creds(h2tap.Credentials(credentials.NewTLS(cfg))))
//
// A handler then does:
//
//	connID, streamID, ok := h2tap.ParseStreamHeader(r.Header.Get(h2tap.StreamHeader))
//	if c, found := h2tap.Lookup(connID); ok && found {
//		c.ResetStream(streamID, 0x8) // CANCEL
//	}
//
// After ResetStream the server still believes the stream is open; the
// handler should return (net/http: or panic with http.ErrAbortHandler) so
// the server finishes the stream, whose frames the tap then drops.
//
// # Resetting after the headers or part of the body
//
// An HTTP/2 server does not write a handler's frames at once: net/http and
// x/net/http2 buffer them until the connection's writer runs, and grpc-go's
// SendHeader and Send only queue them for its writer goroutine. When Flush
// or Send returns, the frames may not have reached the tap yet, and a
// ResetStream issued then overtakes them, so the tap drops them too. The
// tap therefore counts, per stream, what it has forwarded to the client:
// whether the response headers went, how many DATA payload bytes, and
// whether the stream ended. WaitWritten waits for that:
//
//	w.WriteHeader(200)
//	io.WriteString(w, "partial")
//	w.(http.Flusher).Flush()
//	err := c.WaitWritten(r.Context(), streamID, true, 7)
//	if err == nil || errors.Is(err, h2tap.ErrStreamEnded) {
//		c.ResetStream(streamID, 0x2) // INTERNAL_ERROR, after "partial"
//	}
//
// The counts live from the client's HEADERS until 64 more streams of the
// connection have ended, and at most 16384 streams are counted at once.
package h2tap

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc/credentials"
)

// StreamHeader is the request header the tap adds to every HTTP/2 request:
// "<connID>/<streamID>". Any copy sent by the client is removed.
const StreamHeader = "gatecheck-h2-stream"

// GRPCTimeoutHeader is the request header the tap adds, with the same value,
// to every HTTP/2 request that carries grpc-timeout: grpc-go turns
// grpc-timeout into a context deadline and does not show its text to the
// handler. Any copy sent by the client is removed.
const GRPCTimeoutHeader = "gatecheck-grpc-timeout"

const clientPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

// Connection modes.
const (
	modeDetecting int32 = iota
	modePassthrough
	modeHTTP2
)

const (
	// inboundBuffered is how many client bytes the tap reads ahead of the
	// server before it stops reading from the socket.
	inboundBuffered = 256 << 10
	// maxResetStreams bounds the streams one connection may have reset
	// while the server has not finished them yet.
	maxResetStreams = 1 << 14
	// goAwayLinger is how long the tap, once it has closed its side of a
	// connection after GoAway, waits for the client to close before it
	// closes the connection itself.
	goAwayLinger = 10 * time.Second
	// settingsWait bounds how long ResetStream and GoAway wait for the
	// server's first SETTINGS frame to go out before their own frame.
	settingsWait = 10 * time.Second
)

// goAwayGrace is how long after GoAway the streams up to its last stream
// id have to complete before the tap closes the connection anyway. It is a
// variable for the tests.
var goAwayGrace = 30 * time.Second

var (
	nextID   atomic.Uint64
	registry sync.Map // uint64 -> *Conn
)

// Conn is a tapped server-side connection.
type Conn struct {
	net.Conn // the inner connection

	id   uint64
	mode atomic.Int32

	// Owned by the goroutine that calls Read.
	detectBuf [len(clientPreface)]byte
	detect    []byte // bytes read while detecting
	pending   []byte // passthrough: detected bytes not yet returned

	in inbound

	// Owned by the pump goroutine (client to server).
	inParser frameParser
	inBlock  headerBlock
	inCodec  *transcoder
	fields   []hpack.HeaderField

	// Shared between the two directions.
	maxStream    atomic.Uint32 // highest stream id the client opened
	inTableSize  atomic.Uint32 // largest HEADER_TABLE_SIZE the server advertised
	outTableSize atomic.Uint32 // largest HEADER_TABLE_SIZE the client advertised

	wmu        sync.Mutex // guards the server-to-client direction
	outParser  frameParser
	outBlock   headerBlock
	outCodec   *transcoder
	reset      map[uint32]bool
	wout       []byte
	events     []progressEvent // frames of the Write being handled that count toward progress
	goneAway   bool            // GOAWAY was sent: streams above goAwayLast are cut off
	goAwayLast uint32          // GOAWAY's last stream id
	outShut    bool            // after GOAWAY, the tap stopped forwarding: writes are dropped
	werr       error           // sticky: the server wrote something that is not HTTP/2

	// settingsOut is closed once the server's first SETTINGS frame was
	// forwarded: a client treats any other first frame as a protocol error.
	settingsOut     chan struct{}
	settingsOutOnce sync.Once
	done            chan struct{} // closed by Close

	prog tracker // what was forwarded of each stream, for WaitWritten

	closed    atomic.Bool
	linger    atomic.Pointer[time.Timer]
	closeOnce sync.Once
	closeErr  error
}

// inbound is the queue between the pump goroutine, which reads and rewrites
// the client's bytes, and the server's Read calls.
type inbound struct {
	mu       sync.Mutex
	ready    chan struct{} // poked when buf, err, deadline or closed change
	space    chan struct{} // poked when Read drains buf
	buf      []byte
	off      int // buf[off:] is unread
	err      error
	deadline time.Time
	pumping  bool
	boundary bool   // buf ends between frames
	inject   []byte // frames waiting for a boundary
	closed   bool
}

func poke(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// Wrap taps c. It never blocks: the preface is detected on first Read.
func Wrap(c net.Conn) *Conn {
	tc := &Conn{
		Conn:     c,
		id:       nextID.Add(1),
		inParser: frameParser{streamData: true, maxPayload: maxInboundFrame},
		inCodec:  newTranscoder(),
		outParser: frameParser{
			maxPayload: maxOutboundFrame,
		},
		outCodec:    newTranscoder(),
		reset:       make(map[uint32]bool),
		settingsOut: make(chan struct{}),
		done:        make(chan struct{}),
	}
	tc.in.ready = make(chan struct{}, 1)
	tc.in.space = make(chan struct{}, 1)
	tc.inTableSize.Store(defaultTableSize)
	tc.outTableSize.Store(defaultTableSize)
	registry.Store(tc.id, tc)
	return tc
}

// TLSConn is a tapped connection that keeps the ConnectionState method of
// the connection it wraps, so that an HTTP/2 server (golang.org/x/net/http2
// ServeConn) checks the TLS version and sets Request.TLS.
type TLSConn struct {
	*Conn
	state connectionStater
}

type connectionStater interface {
	ConnectionState() tls.ConnectionState
}

// WrapTLS taps a TLS connection whose handshake is done (as in an
// http.Server TLSNextProto function) and keeps its ConnectionState.
func WrapTLS(c *tls.Conn) *TLSConn { return &TLSConn{Conn: Wrap(c), state: c} }

// ConnectionState returns the inner connection's TLS state.
func (c *TLSConn) ConnectionState() tls.ConnectionState { return c.state.ConnectionState() }

// Listener taps every connection accepted from l. A connection with a
// ConnectionState method is returned as a *TLSConn, any other as a *Conn.
func Listener(l net.Listener) net.Listener { return listener{l} }

type listener struct{ net.Listener }

func (l listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	if cs, ok := c.(connectionStater); ok {
		return &TLSConn{Conn: Wrap(c), state: cs}, nil
	}
	return Wrap(c), nil
}

// Credentials wraps gRPC transport credentials so that the connection grpc-go
// serves (after any TLS handshake) is tapped. AuthInfo is passed through.
func Credentials(inner credentials.TransportCredentials) credentials.TransportCredentials {
	return tapCreds{inner}
}

type tapCreds struct {
	inner credentials.TransportCredentials
}

func (t tapCreds) ClientHandshake(ctx context.Context, authority string, c net.Conn) (net.Conn, credentials.AuthInfo, error) {
	return t.inner.ClientHandshake(ctx, authority, c)
}

func (t tapCreds) ServerHandshake(c net.Conn) (net.Conn, credentials.AuthInfo, error) {
	conn, info, err := t.inner.ServerHandshake(c)
	if err != nil {
		return nil, nil, err
	}
	return Wrap(conn), info, nil
}

func (t tapCreds) Info() credentials.ProtocolInfo { return t.inner.Info() }

func (t tapCreds) Clone() credentials.TransportCredentials { return tapCreds{t.inner.Clone()} }

func (t tapCreds) OverrideServerName(name string) error {
	return t.inner.OverrideServerName(name)
}

// Lookup returns the live connection with the given id.
func Lookup(connID uint64) (*Conn, bool) {
	v, ok := registry.Load(connID)
	if !ok {
		return nil, false
	}
	return v.(*Conn), true
}

// ParseStreamHeader splits a StreamHeader value. ok is false unless v is
// "<connID>/<streamID>" with decimal ids, a connection id above zero and a
// stream id between 1 and 2^31-1.
func ParseStreamHeader(v string) (connID uint64, streamID uint32, ok bool) {
	a, b, found := strings.Cut(v, "/")
	if !found {
		return 0, 0, false
	}
	conn, err := strconv.ParseUint(a, 10, 64)
	if err != nil || conn == 0 {
		return 0, 0, false
	}
	stream, err := strconv.ParseUint(b, 10, 31)
	if err != nil || stream == 0 {
		return 0, 0, false
	}
	return conn, uint32(stream), true
}

// ID is the connection's process-unique id.
func (c *Conn) ID() uint64 { return c.id }

// NetConn returns the connection the tap wraps.
func (c *Conn) NetConn() net.Conn { return c.Conn }

// IsHTTP2 reports whether the connection started with the HTTP/2 preface.
// It is only meaningful after the first request was read.
func (c *Conn) IsHTTP2() bool { return c.mode.Load() == modeHTTP2 }

// Read reads what the client sent, with request header blocks rewritten.
func (c *Conn) Read(p []byte) (int, error) {
	switch c.mode.Load() {
	case modeHTTP2:
		return c.readHTTP2(p)
	case modePassthrough:
		if len(c.pending) > 0 {
			n := copy(p, c.pending)
			c.pending = c.pending[n:]
			return n, nil
		}
		return c.Conn.Read(p)
	}
	return c.readDetect(p)
}

// readDetect reads until the bytes either differ from the client preface or
// are all of it, then switches mode.
func (c *Conn) readDetect(p []byte) (int, error) {
	for {
		k := len(c.detect)
		if string(c.detect) != clientPreface[:k] {
			c.pending = c.detect
			c.mode.Store(modePassthrough)
			return c.Read(p)
		}
		if k == len(clientPreface) {
			c.startHTTP2()
			return c.readHTTP2(p)
		}
		n, err := c.Conn.Read(c.detectBuf[k:])
		c.detect = c.detectBuf[:k+n]
		if err != nil && string(c.detect) == clientPreface[:len(c.detect)] {
			var ne net.Error
			if len(c.detect) == 0 || (errors.As(err, &ne) && ne.Timeout()) {
				return 0, err // undecided; the caller may retry
			}
			// The connection ended inside the preface: not HTTP/2.
			c.pending = c.detect
			c.mode.Store(modePassthrough)
			return c.Read(p)
		}
	}
}

// startHTTP2 hands the client's side of the connection to the pump.
func (c *Conn) startHTTP2() {
	c.in.mu.Lock()
	c.mode.Store(modeHTTP2)
	c.in.pumping = true
	// From now on the tap enforces read deadlines itself: the pump's reads
	// from the socket must not time out.
	c.Conn.SetReadDeadline(time.Time{})
	c.in.buf = append(c.in.buf, clientPreface...)
	c.in.boundary = true
	c.in.buf = append(c.in.buf, c.in.inject...)
	c.in.inject = nil
	c.in.mu.Unlock()
	go c.pump()
}

func (c *Conn) readHTTP2(p []byte) (int, error) {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		c.in.mu.Lock()
		if c.in.closed {
			c.in.mu.Unlock()
			return 0, net.ErrClosed
		}
		if c.in.off < len(c.in.buf) {
			n := copy(p, c.in.buf[c.in.off:])
			c.in.off += n
			if c.in.off == len(c.in.buf) {
				c.in.buf, c.in.off = c.in.buf[:0], 0
			}
			c.in.mu.Unlock()
			poke(c.in.space)
			return n, nil
		}
		if err := c.in.err; err != nil {
			c.in.mu.Unlock()
			return 0, err
		}
		dl := c.in.deadline
		c.in.mu.Unlock()

		var expired <-chan time.Time
		if !dl.IsZero() {
			d := time.Until(dl)
			if d <= 0 {
				return 0, os.ErrDeadlineExceeded
			}
			if timer == nil {
				timer = time.NewTimer(d)
			} else {
				timer.Reset(d)
			}
			expired = timer.C
		}
		select {
		case <-c.in.ready:
		case <-expired:
		}
	}
}

// pump reads the client's bytes, rewrites header blocks and queues the
// result for Read. It stops when the socket fails or the Conn is closed.
func (c *Conn) pump() {
	buf := make([]byte, 32<<10)
	var out []byte
	for {
		n, err := c.Conn.Read(buf)
		if n > 0 {
			var perr error
			out, perr = c.inParser.feed(out[:0], buf[:n], c.inboundFrame)
			if !c.push(out, c.inParser.atBoundary()) {
				return
			}
			if perr != nil {
				c.fail(fmt.Errorf("h2tap: connection %d: from client: %w", c.id, perr))
				return
			}
		}
		if err != nil {
			c.fail(err)
			return
		}
	}
}

// push queues b for Read, waiting while too much is queued. It reports
// false once the Conn is closed.
func (c *Conn) push(b []byte, boundary bool) bool {
	c.in.mu.Lock()
	for len(c.in.buf)-c.in.off > inboundBuffered && !c.in.closed {
		c.in.mu.Unlock()
		<-c.in.space
		c.in.mu.Lock()
	}
	if c.in.closed {
		c.in.mu.Unlock()
		return false
	}
	if c.in.off > 0 && c.in.off >= cap(c.in.buf)/2 {
		n := copy(c.in.buf, c.in.buf[c.in.off:])
		c.in.buf, c.in.off = c.in.buf[:n], 0
	}
	c.in.buf = append(c.in.buf, b...)
	c.in.boundary = boundary
	if boundary && len(c.in.inject) > 0 {
		c.in.buf = append(c.in.buf, c.in.inject...)
		c.in.inject = c.in.inject[:0]
	}
	c.in.mu.Unlock()
	poke(c.in.ready)
	return true
}

// fail ends the client-to-server direction with err, after what is queued.
func (c *Conn) fail(err error) {
	c.in.mu.Lock()
	if c.in.err == nil {
		c.in.err = err
	}
	c.in.mu.Unlock()
	poke(c.in.ready)
}

// injectToServer queues a frame for the server as if the client had sent
// it, at the next frame boundary of the client's stream.
func (c *Conn) injectToServer(frame []byte) {
	c.in.mu.Lock()
	if c.in.boundary {
		c.in.buf = append(c.in.buf, frame...)
	} else {
		c.in.inject = append(c.in.inject, frame...)
	}
	c.in.mu.Unlock()
	poke(c.in.ready)
}

// inboundFrame handles one complete client frame (DATA is streamed by the
// parser and never comes here).
func (c *Conn) inboundFrame(out []byte, h frameHeader, payload []byte) ([]byte, error) {
	if c.inBlock.active && h.typ != frameContinuation {
		return out, fmt.Errorf("frame of type %d inside the header block of stream %d", h.typ, c.inBlock.stream)
	}
	var done bool
	var err error
	switch h.typ {
	case frameHeaders:
		if h.stream > c.maxStream.Load() {
			// Track the stream before WaitWritten may accept its id.
			c.prog.open(h.stream)
			c.maxStream.Store(h.stream)
		}
		done, err = c.inBlock.start(h, payload)
	case frameContinuation:
		done, err = c.inBlock.add(h, payload)
	case framePushPromise:
		return out, errors.New("client sent PUSH_PROMISE")
	case frameSettings:
		if h.flags&flagAck == 0 {
			// The server's encoder may use any size the client allows.
			if sizes, err := headerTableSizes(payload); err == nil {
				for _, s := range sizes {
					atomicMax(&c.outTableSize, s)
				}
			}
		}
		return appendFrame(out, h, payload), nil
	case frameRSTStream:
		c.prog.end(h.stream)
		return appendFrame(out, h, payload), nil
	default:
		return appendFrame(out, h, payload), nil
	}
	if err != nil || !done {
		return out, err
	}
	c.inCodec.allow(c.inTableSize.Load())
	fields, err := c.inCodec.decode(c.inBlock.finish())
	if err != nil {
		return out, fmt.Errorf("stream %d: %w", c.inBlock.stream, err)
	}
	c.fields = tagFields(c.fields[:0], fields, c.id, c.inBlock.stream)
	return c.inBlock.appendFrames(out, c.inCodec.encode(c.fields)), nil
}

// tagFields appends fields to dst without client copies of the tap's
// headers, then the tap's headers.
func tagFields(dst, fields []hpack.HeaderField, connID uint64, stream uint32) []hpack.HeaderField {
	timeout, hasTimeout := "", false
	for _, f := range fields {
		switch {
		case strings.EqualFold(f.Name, StreamHeader), strings.EqualFold(f.Name, GRPCTimeoutHeader):
			continue
		case f.Name == "grpc-timeout" && !hasTimeout:
			timeout, hasTimeout = f.Value, true
		}
		dst = append(dst, f)
	}
	v := strconv.FormatUint(connID, 10) + "/" + strconv.FormatUint(uint64(stream), 10)
	dst = append(dst, hpack.HeaderField{Name: StreamHeader, Value: v})
	if hasTimeout {
		dst = append(dst, hpack.HeaderField{Name: GRPCTimeoutHeader, Value: timeout})
	}
	return dst
}

func atomicMax(a *atomic.Uint32, v uint32) {
	for {
		old := a.Load()
		if v <= old || a.CompareAndSwap(old, v) {
			return
		}
	}
}

// Write writes what the server sends, minus frames of reset streams and,
// after GoAway, of the streams GOAWAY cut off.
func (c *Conn) Write(p []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.outShut {
		return len(p), nil
	}
	if c.werr != nil {
		return 0, c.werr
	}
	if c.mode.Load() == modePassthrough {
		// A server that wrote before the client's first bytes showed
		// the connection is not HTTP/2: hand over what was held back.
		if held := c.outParser.held(); len(held) > 0 {
			c.outParser = frameParser{}
			if _, err := c.Conn.Write(held); err != nil {
				return 0, err
			}
		}
		return c.Conn.Write(p)
	}
	c.events = c.events[:0]
	out, err := c.outParser.feed(c.wout[:0], p, c.outboundFrame)
	if err != nil {
		c.werr = fmt.Errorf("h2tap: connection %d: from server: %w", c.id, err)
		c.prog.shut(c.werr)
		return 0, c.werr
	}
	if cap(out) <= 1<<20 {
		c.wout = out[:0]
	}
	events := c.events
	if cap(c.events) > 1024 {
		c.events = nil // do not keep a rare huge Write's events alive
	}
	if len(out) > 0 {
		if len(events) > 0 {
			c.prog.sending(events)
		}
		_, err := c.Conn.Write(out)
		if len(events) > 0 {
			c.prog.sent(events, err == nil)
		}
		if err != nil {
			c.prog.shut(err)
			return 0, err
		}
	}
	return len(p), nil
}

// outboundFrame handles one complete server frame; c.wmu is held.
func (c *Conn) outboundFrame(out []byte, h frameHeader, payload []byte) ([]byte, error) {
	if c.outBlock.active && h.typ != frameContinuation {
		return out, fmt.Errorf("frame of type %d inside the header block of stream %d", h.typ, c.outBlock.stream)
	}
	var done bool
	var err error
	switch h.typ {
	case frameHeaders, framePushPromise:
		done, err = c.outBlock.start(h, payload)
	case frameContinuation:
		done, err = c.outBlock.add(h, payload)
	case frameSettings:
		if h.flags&flagAck == 0 {
			// The client's encoder may use any size the server allows.
			if sizes, err := headerTableSizes(payload); err == nil {
				for _, s := range sizes {
					atomicMax(&c.inTableSize, s)
				}
			}
			// ResetStream and GoAway wait for c.wmu, so their frames
			// follow this one.
			c.settingsOutOnce.Do(func() { close(c.settingsOut) })
		}
		return appendFrame(out, h, payload), nil
	case frameGoAway:
		if c.goneAway {
			// The client already has the tap's GOAWAY, whose last stream
			// id the server's must not exceed.
			return out, nil
		}
		return appendFrame(out, h, payload), nil
	case frameData:
		if !c.dropped(h.stream) {
			c.events = append(c.events, progressEvent{
				stream: h.stream,
				data:   int64(dataLen(h, payload)),
				end:    h.flags&flagEndStream != 0,
			})
			return appendFrame(out, h, payload), nil
		}
		if h.flags&flagEndStream != 0 {
			delete(c.reset, h.stream)
		}
		if len(payload) > 0 {
			// The server spent connection window on a frame the client
			// never sees; give it back.
			c.injectToServer(appendWindowUpdate(nil, 0, uint32(len(payload))))
		}
		return out, nil
	case frameRSTStream:
		if c.dropped(h.stream) {
			delete(c.reset, h.stream)
			return out, nil
		}
		c.events = append(c.events, progressEvent{stream: h.stream, end: true})
		return appendFrame(out, h, payload), nil
	default:
		if h.stream != 0 && c.dropped(h.stream) {
			return out, nil
		}
		return appendFrame(out, h, payload), nil
	}
	if err != nil || !done {
		return out, err
	}
	c.outCodec.allow(c.outTableSize.Load())
	// Decode even blocks that are dropped: the server's encoder has
	// updated its dynamic table for them.
	fields, err := c.outCodec.decode(c.outBlock.finish())
	if err != nil {
		return out, fmt.Errorf("stream %d: %w", c.outBlock.stream, err)
	}
	if c.dropped(c.outBlock.stream) {
		if c.outBlock.endStream {
			delete(c.reset, c.outBlock.stream)
		}
		return out, nil
	}
	if c.outBlock.typ == frameHeaders {
		c.events = append(c.events, progressEvent{
			stream:  c.outBlock.stream,
			headers: !informational(fields),
			end:     c.outBlock.endStream,
		})
	}
	return c.outBlock.appendFrames(out, c.outCodec.encode(fields)), nil
}

// dropped reports whether the server's frames for stream are dropped: it was
// reset, or GOAWAY cut it off; c.wmu is held.
func (c *Conn) dropped(stream uint32) bool {
	return c.reset[stream] || c.goneAway && stream > c.goAwayLast
}

// ResetStream sends RST_STREAM(streamID, code) to the client at the next frame
// boundary and drops every later frame the server writes for that stream.
// The stream must have been opened by the client on this connection and,
// after GoAway, be one of the streams GOAWAY lets complete.
func (c *Conn) ResetStream(streamID uint32, code uint32) error {
	if err := c.checkStream("ResetStream", streamID); err != nil {
		return err
	}
	c.awaitServerSettings()
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.outShut || c.closed.Load() || c.goneAway && streamID > c.goAwayLast {
		return fmt.Errorf("h2tap: ResetStream: connection %d: %w", c.id, net.ErrClosed)
	}
	if c.reset[streamID] {
		return nil
	}
	if len(c.reset) >= maxResetStreams {
		return fmt.Errorf("h2tap: ResetStream: connection %d already has %d unfinished reset streams", c.id, len(c.reset))
	}
	if _, err := c.Conn.Write(appendRSTStream(nil, streamID, code)); err != nil {
		return fmt.Errorf("h2tap: ResetStream: writing RST_STREAM: %w", err)
	}
	c.reset[streamID] = true
	c.prog.end(streamID)
	return nil
}

// GoAway sends GOAWAY(lastStreamID, code) at the next frame boundary and
// closes the connection once the streams it lets complete have ended.
//
// As RFC 9113 (section 6.8) asks, the streams with ids up to lastStreamID
// complete: the tap keeps forwarding their frames. It drops every frame the
// server writes for a higher stream (a client retries those on another
// connection), and any GOAWAY of the server's own. Once every stream up to
// lastStreamID has ended (END_STREAM or RST_STREAM, as WaitWritten counts
// them), or 30 seconds after GoAway if some have not, the tap stops
// forwarding and closes the connection.
//
// The close is graceful where the inner connection allows it (CloseWrite:
// TCP, *tls.Conn): the client reads end of stream after the last frame, and
// the socket is closed when the server, having read the client's end of
// stream, closes the Conn, or at the latest 10 seconds later. Otherwise the
// connection is closed at once. Anything the server writes afterwards is
// dropped.
func (c *Conn) GoAway(lastStreamID uint32, code uint32) error {
	if !c.IsHTTP2() {
		return fmt.Errorf("h2tap: GoAway: connection %d is not HTTP/2", c.id)
	}
	if lastStreamID > 1<<31-1 {
		return fmt.Errorf("h2tap: GoAway: last stream id %d: want 0 to 2^31-1", lastStreamID)
	}
	c.awaitServerSettings()
	c.wmu.Lock()
	if c.goneAway || c.closed.Load() {
		c.wmu.Unlock()
		return fmt.Errorf("h2tap: GoAway: connection %d: %w", c.id, net.ErrClosed)
	}
	_, err := c.Conn.Write(appendGoAway(nil, lastStreamID, code))
	c.goneAway = true
	c.goAwayLast = lastStreamID
	c.wmu.Unlock()
	if err != nil {
		c.prog.shut(errGoneAway)
		c.Close()
		return fmt.Errorf("h2tap: GoAway: writing GOAWAY: %w", err)
	}
	drained := c.prog.goAway(lastStreamID)
	go c.closeAfterGoAway(drained, goAwayGrace)
	return nil
}

// closeAfterGoAway waits until the streams GOAWAY lets complete have ended
// (drained is closed) or grace passes, then stops forwarding and closes
// the connection, gracefully where it can.
func (c *Conn) closeAfterGoAway(drained <-chan struct{}, grace time.Duration) {
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-drained:
	case <-t.C:
	case <-c.done:
		return
	}
	// Under c.wmu, so that no frame is cut in two.
	c.wmu.Lock()
	c.outShut = true
	c.wmu.Unlock()
	c.prog.shut(errGoneAway)
	cw, ok := c.Conn.(interface{ CloseWrite() error })
	if !ok || cw.CloseWrite() != nil {
		c.Close()
		return
	}
	lt := time.AfterFunc(goAwayLinger, func() { c.Close() })
	c.linger.Store(lt)
	if c.closed.Load() {
		lt.Stop()
	}
}

// awaitServerSettings waits until the server's first SETTINGS frame was
// forwarded, the connection closes, or settingsWait passes. An HTTP/2 server
// may run a handler before its SETTINGS frame is written (x/net writes it
// from another goroutine), and a client treats a RST_STREAM or GOAWAY that
// comes first as a connection error.
func (c *Conn) awaitServerSettings() {
	select {
	case <-c.settingsOut:
		return
	default:
	}
	t := time.NewTimer(settingsWait)
	defer t.Stop()
	select {
	case <-c.settingsOut:
	case <-c.done:
	case <-t.C:
	}
}

// SetDeadline sets the read and write deadlines.
func (c *Conn) SetDeadline(t time.Time) error {
	if err := c.SetReadDeadline(t); err != nil {
		return err
	}
	return c.Conn.SetWriteDeadline(t)
}

// SetReadDeadline sets the deadline for Read.
func (c *Conn) SetReadDeadline(t time.Time) error {
	c.in.mu.Lock()
	defer c.in.mu.Unlock()
	c.in.deadline = t
	poke(c.in.ready)
	if c.in.pumping {
		return nil
	}
	return c.Conn.SetReadDeadline(t)
}

// Close closes the connection and forgets its id. Later calls return the
// first call's result.
func (c *Conn) Close() error {
	c.closeOnce.Do(func() {
		c.closed.Store(true)
		close(c.done)
		registry.Delete(c.id)
		c.prog.shut(net.ErrClosed)
		if t := c.linger.Load(); t != nil {
			t.Stop()
		}
		c.in.mu.Lock()
		c.in.closed = true
		c.in.buf, c.in.inject = nil, nil
		c.in.mu.Unlock()
		poke(c.in.ready)
		poke(c.in.space)
		c.closeErr = c.Conn.Close()
	})
	return c.closeErr
}

// held returns the bytes the parser holds back (a partial frame).
func (p *frameParser) held() []byte {
	if p.inFrame {
		return append(bytes.Clone(p.hdr[:]), p.payload...)
	}
	return bytes.Clone(p.hdr[:p.nhdr])
}
