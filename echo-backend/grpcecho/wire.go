package grpcecho

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"sync"

	"google.golang.org/grpc/credentials"

	"github.com/gatecheck/gatecheck/echo-backend/h2tap"
)

// grpc-go writes a handler's headers and messages from its own writer
// goroutine: SendHeader and Send only queue them. A reset "after the
// headers" or "mid-body" must therefore wait until those frames have really
// been handed to the tap, or the tap's RST_STREAM could overtake them. A
// wireConn sits between grpc-go and the tap connection and tells handlers
// which frames of their stream went through.

// wireCreds wraps the tap's credentials so that each tapped connection is
// watched by a wireConn registered in conns under the tap's connection id.
type wireCreds struct {
	credentials.TransportCredentials
	conns *sync.Map // uint64 -> *wireConn
}

// ServerHandshake runs the tap's handshake and watches the connection.
func (w wireCreds) ServerHandshake(c net.Conn) (net.Conn, credentials.AuthInfo, error) {
	conn, info, err := w.TransportCredentials.ServerHandshake(c)
	if err != nil {
		return nil, nil, err
	}
	tc, ok := conn.(*h2tap.Conn)
	if !ok {
		return conn, info, nil
	}
	wc := &wireConn{Conn: tc, id: tc.ID(), conns: w.conns, streams: make(map[uint32]streamWire), changed: make(chan struct{})}
	w.conns.Store(wc.id, wc)
	return wc, info, nil
}

// Clone returns a copy sharing the registry.
func (w wireCreds) Clone() credentials.TransportCredentials {
	return wireCreds{TransportCredentials: w.TransportCredentials.Clone(), conns: w.conns}
}

// streamWire is what the server wrote on one stream so far.
type streamWire struct {
	headers   int   // HEADERS frames
	dataBytes int64 // DATA payload bytes
}

// wireConn counts the frames the server writes, per stream.
type wireConn struct {
	net.Conn
	id    uint64
	conns *sync.Map

	wmu  sync.Mutex // guards the frame parser state below
	hdr  [9]byte
	nhdr int
	left int // payload bytes of the current frame still to come

	mu      sync.Mutex
	streams map[uint32]streamWire // open streams only
	writing []frameEvent          // frames of the Write passing them on right now
	changed chan struct{}         // closed and replaced whenever streams changes
	closed  bool
}

// Frame types and flags used here (RFC 9113, section 6).
const (
	frameData      = 0x0
	frameHeaders   = 0x1
	frameRSTStream = 0x3
	flagEndStream  = 0x1
)

// frameEvent is one server frame that a Write completed.
type frameEvent struct {
	typ, flags uint8
	stream     uint32
	length     int
}

// with returns s after e.
func (s streamWire) with(e frameEvent) streamWire {
	switch e.typ {
	case frameHeaders:
		s.headers++
	case frameData:
		s.dataBytes += int64(e.length)
	}
	return s
}

// Write passes p on and then records the frames p completed.
func (w *wireConn) Write(p []byte) (int, error) {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	var events []frameEvent
	for rest := p; len(rest) > 0; {
		if w.left > 0 {
			n := min(w.left, len(rest))
			w.left -= n
			rest = rest[n:]
		} else {
			n := copy(w.hdr[w.nhdr:], rest)
			w.nhdr += n
			rest = rest[n:]
			if w.nhdr < len(w.hdr) {
				break
			}
			w.left = int(w.hdr[0])<<16 | int(w.hdr[1])<<8 | int(w.hdr[2])
		}
		if w.nhdr == len(w.hdr) && w.left == 0 {
			e := frameEvent{
				typ: w.hdr[3], flags: w.hdr[4],
				stream: binary.BigEndian.Uint32(w.hdr[5:9]) & (1<<31 - 1),
				length: int(w.hdr[0])<<16 | int(w.hdr[1])<<8 | int(w.hdr[2]),
			}
			if e.stream != 0 {
				events = append(events, e)
			}
			w.nhdr = 0
		}
	}
	if len(events) == 0 {
		return w.Conn.Write(p)
	}
	w.mu.Lock()
	w.writing = events
	w.mu.Unlock()

	n, err := w.Conn.Write(p)

	w.mu.Lock()
	defer w.mu.Unlock()
	w.writing = nil
	if err != nil {
		return n, err
	}
	for _, e := range events {
		if e.typ == frameRSTStream || e.flags&flagEndStream != 0 && (e.typ == frameHeaders || e.typ == frameData) {
			delete(w.streams, e.stream)
			continue
		}
		if e.typ == frameHeaders || e.typ == frameData {
			w.streams[e.stream] = w.streams[e.stream].with(e)
		}
	}
	if !w.closed {
		close(w.changed)
		w.changed = make(chan struct{})
	}
	return n, nil
}

// Close closes the connection and stops watching it.
func (w *wireConn) Close() error {
	w.conns.Delete(w.id)
	w.mu.Lock()
	if !w.closed {
		w.closed = true
		close(w.changed)
	}
	w.mu.Unlock()
	return w.Conn.Close()
}

// errConnClosed is returned by wait when the connection closed first.
var errConnClosed = errors.New("connection closed")

// wait blocks until ok accepts what was written on stream, the connection
// closes or ctx is done. Once ctx is done, frames that a Write is passing on
// at that moment count as written: the peer may already have them.
func (w *wireConn) wait(ctx context.Context, stream uint32, ok func(streamWire) bool) error {
	for {
		w.mu.Lock()
		s, ch, closed := w.streams[stream], w.changed, w.closed
		w.mu.Unlock()
		if ok(s) {
			return nil
		}
		if closed {
			return errConnClosed
		}
		select {
		case <-ch:
		case <-ctx.Done():
			w.mu.Lock()
			s := w.streams[stream]
			for _, e := range w.writing {
				if e.stream == stream {
					s = s.with(e)
				}
			}
			w.mu.Unlock()
			if ok(s) {
				return nil
			}
			return ctx.Err()
		}
	}
}
