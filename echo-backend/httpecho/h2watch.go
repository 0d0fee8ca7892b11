package httpecho

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"net"
	"sync"
	"time"
)

// watchConn sits between an HTTP/2 server and the h2tap under it, and
// follows the frames the server writes. It exists because an HTTP/2 server
// buffers frames: when Flush returns in a handler, the response HEADERS may
// still sit in the server's buffer, and a RST_STREAM sent by the tap then
// would make the tap drop them too. A handler that resets "after headers"
// or "mid-body" first waits, through waitWritten, until its frames were
// handed to the tap, which forwards each frame as soon as it is complete.
//
// Only the frame headers are parsed (9 bytes each); payloads are skipped.
// Progress is kept per stream until the server ends the stream, so the
// state is bounded by the streams open at once.
type watchConn struct {
	net.Conn // the tapped connection

	mu      sync.Mutex
	decided bool // the first write chose between HTTP/2 and passthrough
	h2      bool
	hdr     [9]byte
	nhdr    int
	left    uint32 // payload bytes of the current frame still to come
	typ     byte
	flags   byte
	stream  uint32
	length  uint32
	streams map[uint32]*streamProgress
	ended   []uint32      // ended streams still in streams, oldest first
	changed chan struct{} // closed and replaced on every progress
}

// keepEnded is how many ended streams stay in watchConn.streams.
const keepEnded = 64

type streamProgress struct {
	headers bool  // the response HEADERS were written
	data    int64 // DATA payload bytes written
	ended   bool  // the server ended or reset the stream
}

// tlsWatchConn keeps the TLS state visible to the HTTP/2 server, so that
// it sets Request.TLS.
type tlsWatchConn struct {
	*watchConn
	state interface{ ConnectionState() tls.ConnectionState }
}

func (c tlsWatchConn) ConnectionState() tls.ConnectionState { return c.state.ConnectionState() }

func newWatchConn(c net.Conn) *watchConn {
	return &watchConn{Conn: c, streams: make(map[uint32]*streamProgress), changed: make(chan struct{})}
}

// NetConn returns the tapped connection.
func (w *watchConn) NetConn() net.Conn { return w.Conn }

// Write writes p through the tap, then accounts for the frames it
// completed.
func (w *watchConn) Write(p []byte) (int, error) {
	n, err := w.Conn.Write(p)
	w.account(p[:n])
	return n, err
}

const (
	frameData      = 0x0
	frameHeaders   = 0x1
	frameRSTStream = 0x3
	flagEndStream  = 0x1
	frameHeaderLen = 9
)

func (w *watchConn) account(p []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.decided {
		// The server writes only after reading the client's first bytes,
		// by which time the tap knows whether they were the HTTP/2 preface.
		w.decided = true
		if tc, ok := w.Conn.(interface{ IsHTTP2() bool }); ok {
			w.h2 = tc.IsHTTP2()
		}
	}
	if !w.h2 {
		return
	}
	progressed := false
	for len(p) > 0 {
		if w.nhdr < frameHeaderLen {
			k := copy(w.hdr[w.nhdr:], p)
			w.nhdr += k
			p = p[k:]
			if w.nhdr < frameHeaderLen {
				break
			}
			w.length = uint32(w.hdr[0])<<16 | uint32(w.hdr[1])<<8 | uint32(w.hdr[2])
			w.typ, w.flags = w.hdr[3], w.hdr[4]
			w.stream = binary.BigEndian.Uint32(w.hdr[5:9]) & (1<<31 - 1)
			w.left = w.length
		}
		k := min(uint32(len(p)), w.left)
		w.left -= k
		p = p[k:]
		if w.left > 0 {
			break
		}
		// A whole frame went through.
		w.nhdr = 0
		if w.frameDone() {
			progressed = true
		}
	}
	if progressed {
		close(w.changed)
		w.changed = make(chan struct{})
	}
}

// frameDone records the frame just completed; it reports whether a
// stream's progress changed.
func (w *watchConn) frameDone() bool {
	if w.stream == 0 {
		return false
	}
	if w.typ != frameHeaders && w.typ != frameData && w.typ != frameRSTStream {
		return false
	}
	sp := w.streams[w.stream]
	if sp == nil {
		sp = &streamProgress{}
		w.streams[w.stream] = sp
	}
	switch w.typ {
	case frameHeaders:
		sp.headers = true
	case frameData:
		sp.data += int64(w.length)
	}
	if (w.typ == frameRSTStream || w.flags&flagEndStream != 0) && !sp.ended {
		sp.ended = true
		w.ended = append(w.ended, w.stream)
		if len(w.ended) > keepEnded {
			delete(w.streams, w.ended[0])
			w.ended = w.ended[1:]
		}
	}
	return true
}

// waitWritten waits until stream's response HEADERS and at least data bytes
// of its body went through the tap, until ctx is done, or at most limit.
// It reports whether they did.
func (w *watchConn) waitWritten(ctx context.Context, stream uint32, data int64, limit time.Duration) bool {
	t := time.NewTimer(limit)
	defer t.Stop()
	for {
		w.mu.Lock()
		sp := w.streams[stream]
		done := sp != nil && (sp.ended || sp.headers && sp.data >= data)
		changed := w.changed
		w.mu.Unlock()
		if done {
			return true
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return false
		case <-t.C:
			return false
		}
	}
}

// watchListener wraps every connection accepted from a tapping listener.
type watchListener struct{ net.Listener }

func (l watchListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return watch(c, false), nil
}

// watch wraps a tapped connection, keeping its TLS state visible. When
// isH2 is set the connection is known to be HTTP/2 (negotiated by ALPN);
// otherwise the first write looks at what the tap detected.
func watch(c net.Conn, isH2 bool) net.Conn {
	w := newWatchConn(c)
	if isH2 {
		// The server may write its SETTINGS before the tap has read the
		// client preface, so do not ask the tap.
		w.decided, w.h2 = true, true
	}
	if cs, ok := c.(interface{ ConnectionState() tls.ConnectionState }); ok {
		return tlsWatchConn{watchConn: w, state: cs}
	}
	return w
}

// watcherOf returns the watchConn in c, if any.
func watcherOf(c net.Conn) *watchConn {
	switch x := c.(type) {
	case *watchConn:
		return x
	case tlsWatchConn:
		return x.watchConn
	}
	return nil
}
