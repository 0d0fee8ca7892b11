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
//     either name are removed. Under DeadlineCredentials grpc-timeout
//     itself is left out, so that the gRPC server keeps the deadline alone.
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
	"net"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2/hpack"
)

// StreamHeader is the request header the tap adds to every HTTP/2 request:
// "<connID>/<streamID>". Any copy sent by the client is removed.
const StreamHeader = "gatewitness-h2-stream"

// GRPCTimeoutHeader is the request header the tap adds, with the same value,
// to every HTTP/2 request that carries grpc-timeout: grpc-go turns
// grpc-timeout into a context deadline and does not show its text to the
// handler. Any copy sent by the client is removed.
const GRPCTimeoutHeader = "gatewitness-grpc-timeout"

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
	// hideTimeout leaves grpc-timeout out of request header blocks
	// (DeadlineCredentials); set before the connection is served.
	hideTimeout bool

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

// ID is the connection's process-unique id.
func (c *Conn) ID() uint64 { return c.id }

// NetConn returns the connection the tap wraps.
func (c *Conn) NetConn() net.Conn { return c.Conn }

// IsHTTP2 reports whether the connection started with the HTTP/2 preface.
// It is only meaningful after the first request was read.
func (c *Conn) IsHTTP2() bool { return c.mode.Load() == modeHTTP2 }

func atomicMax(a *atomic.Uint32, v uint32) {
	for {
		old := a.Load()
		if v <= old || a.CompareAndSwap(old, v) {
			return
		}
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
