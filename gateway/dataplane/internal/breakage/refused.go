package breakage

// Relay broken (Relay.RefusesEarlyGRPCEnds): a gRPC call ended before any
// response header reaches an HTTP/2 client as RST_STREAM REFUSED_STREAM.
// net/http's HTTP/2 server resets a stream whose handler aborts with
// INTERNAL_ERROR and lets no handler choose the code, so the client
// connection is wrapped and the code of such a reset rewritten on the way
// out, frame by frame.

import (
	"encoding/binary"
	"errors"
	"net"
	"net/http"
	"sync"

	"github.com/gatewitness/gatewitness/gateway/dataplane/internal/part"
)

// refusesEarlyGRPCEnds resets a gRPC call ended before its response
// headers, over HTTP/2, and has every reset of a stream that got no HEADERS
// leave as REFUSED_STREAM.
type refusesEarlyGRPCEnds struct{ part.Relay }

func (r refusesEarlyGRPCEnds) GRPCEndedEarly(w http.ResponseWriter, code int, msg string) {
	if overHTTP1(w) {
		r.Relay.GRPCEndedEarly(w, code, msg)
		return
	}
	panic(http.ErrAbortHandler) // RST_STREAM INTERNAL_ERROR, no HEADERS
}

func (r refusesEarlyGRPCEnds) Conn(c net.Conn) net.Conn {
	return &refusingConn{Conn: r.Relay.Conn(c), answered: make(map[uint32]bool)}
}

// HTTP/2 framing (RFC 9113 section 4.1 and 6).
const (
	frameHeaderLen    = 9
	frameHeaders      = 0x1
	frameRSTStream    = 0x3
	frameSettings     = 0x4
	flagEndStream     = 0x1
	errCodeInternal   = 0x2
	errCodeRefused    = 0x7
	maxAnsweredStream = 1 << 14 // streams remembered as answered at once
)

// refusingConn follows the frames the server writes and rewrites
// RST_STREAM INTERNAL_ERROR of a stream it wrote no HEADERS for into
// REFUSED_STREAM. Bytes that are not HTTP/2 frames (HTTP/1.1; the TLS
// handshake below never passes here) go as they are: the first four bytes
// written decide, as an HTTP/2 server starts with SETTINGS.
type refusingConn struct {
	net.Conn
	mu       sync.Mutex
	decided  bool
	first    []byte // the first bytes, until they tell
	h2       bool
	head     []byte // a frame header being collected
	skip     int    // payload bytes of the current frame still to pass
	rst      []byte // an RST_STREAM frame being collected, whole
	answered map[uint32]bool
}

func (c *refusingConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	written := len(p)
	if !c.decided {
		// The first frame's type is its fourth byte.
		c.first = append(c.first, p...)
		if len(c.first) < 4 {
			return written, nil
		}
		c.decided, c.h2 = true, c.first[3] == frameSettings
		p, c.first = c.first, nil
	}
	if !c.h2 {
		if _, err := c.Conn.Write(p); err != nil {
			return 0, err
		}
		return written, nil
	}
	out := make([]byte, 0, len(p))
	for i := 0; i < len(p); {
		switch {
		case c.skip > 0:
			n := min(c.skip, len(p)-i)
			out = append(out, p[i:i+n]...)
			c.skip -= n
			i += n
		case c.rst != nil:
			n := min(frameHeaderLen+4-len(c.rst), len(p)-i)
			c.rst = append(c.rst, p[i:i+n]...)
			i += n
			if len(c.rst) == frameHeaderLen+4 {
				out = append(out, c.refuse(c.rst)...)
				c.rst = nil
			}
		default:
			n := min(frameHeaderLen-len(c.head), len(p)-i)
			c.head = append(c.head, p[i:i+n]...)
			i += n
			if len(c.head) < frameHeaderLen {
				continue
			}
			h := c.head
			c.head = nil
			length := int(h[0])<<16 | int(h[1])<<8 | int(h[2])
			stream := binary.BigEndian.Uint32(h[5:9]) & 0x7fffffff
			if h[3] == frameRSTStream && length == 4 {
				c.rst = append(make([]byte, 0, frameHeaderLen+4), h...)
				continue
			}
			c.follow(h[3], h[4], stream)
			out = append(out, h...)
			c.skip = length
		}
	}
	if _, err := c.Conn.Write(out); err != nil {
		return 0, err
	}
	return written, nil
}

// follow notes a stream answered by a HEADERS frame, and forgets it once
// it ends.
func (c *refusingConn) follow(typ, flags byte, stream uint32) {
	switch {
	case typ == frameHeaders && flags&flagEndStream != 0:
		delete(c.answered, stream)
	case typ == frameHeaders && len(c.answered) < maxAnsweredStream:
		c.answered[stream] = true
	}
}

// refuse returns the RST_STREAM frame f with REFUSED_STREAM for
// INTERNAL_ERROR when its stream got no HEADERS.
func (c *refusingConn) refuse(f []byte) []byte {
	stream := binary.BigEndian.Uint32(f[5:9]) & 0x7fffffff
	answered := c.answered[stream]
	delete(c.answered, stream)
	if !answered && binary.BigEndian.Uint32(f[frameHeaderLen:]) == errCodeInternal {
		binary.BigEndian.PutUint32(f[frameHeaderLen:], errCodeRefused)
	}
	return f
}

// CloseWrite shuts down the writing side, for tunnels' half-close.
func (c *refusingConn) CloseWrite() error {
	if hc, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return hc.CloseWrite()
	}
	return errors.New("breakage: the connection cannot half-close")
}
