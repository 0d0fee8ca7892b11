// Package h2guard bounds the HTTP/2 frames a client may send that make
// the server work without asking for anything: SETTINGS, PING,
// WINDOW_UPDATE, PRIORITY, DATA and CONTINUATION frames without payload
// (DATA that ends its stream excepted), and RST_STREAM of a stream not yet
// answered. Go's server answers each of these (a SETTINGS or PING gets an
// acknowledgement) or processes it, and bounds none of them by rate.
//
// A Guard follows a connection's frames both ways from their 9-byte
// headers, as the bytes pass (payloads are skipped, not read). The frames
// above draw on a bucket of Limits.Burst, refilled at Limits.Rate a
// second and credited by what the server sends (each DATA frame a client
// may answer with window updates, each response HEADERS a client may
// cancel): a client that empties it is told to calm down.
//
// The writing side is followed so that the connection's GOAWAY can be put
// between two frames of the server's (Boundary).
package h2guard

import (
	"encoding/binary"
	"sync"
	"time"

	"golang.org/x/net/http2"
)

// Limits bound a connection's frames that do no work.
type Limits struct {
	// Burst is the most such frames a client may send at once, and the
	// bucket's size.
	Burst int
	// Rate is how many a second the bucket refills.
	Rate int
}

// Credits of the writing side: how many frames that do no work a frame
// the server sends may rightly draw. A DATA frame earns 2, and 1 more for
// each KiB it carries: a Go client sends a WINDOW_UPDATE for the stream
// and one for the connection each time it has read 4 KiB, so up to 8 for
// a 16 KiB frame read in pieces (Envoy allows 10 for each DATA frame
// sent). A reset costs costPerReset, and a response HEADERS earns as much:
// a client may cancel a stream it has an answer on, while resets of
// streams not yet answered, the rapid reset attack, each start a handler
// for nothing, and empty the bucket eight times faster than the other
// frames.
const (
	creditPerData    = 2
	creditPerDataKiB = 1
	costPerReset     = 8
	creditPerHeaders = costPerReset
)

// Guard follows one connection. Its methods are safe for concurrent use
// (the server reads and writes on different goroutines).
type Guard struct {
	limits Limits
	mu     sync.Mutex
	in     cursor
	out    cursor
	level  float64 // frames the client may still send
	filled time.Time
	calm   bool
	// lastStream is the highest stream the client opened, for the
	// GOAWAY.
	lastStream uint32
}

// New returns a Guard with the bucket full.
func New(l Limits, now time.Time) *Guard {
	return &Guard{limits: l, level: float64(l.Burst), filled: now}
}

// cursor walks a frame stream across reads or writes: it gathers each
// 9-byte frame header and skips the payload after it.
type cursor struct {
	hdr  [9]byte
	nhdr int
	left uint32 // payload bytes of the current frame not yet passed
}

// walk passes p and calls frame, when not nil, for every frame header
// completed in it. With first set it stops at the first frame that ends
// in p and returns the offset just past it; otherwise, or when no frame
// ends in p, it returns -1.
func (c *cursor) walk(p []byte, first bool, frame func(length uint32, typ, flags byte, stream uint32)) int {
	for i := 0; i < len(p); {
		if c.left > 0 {
			n := min(uint32(len(p)-i), c.left)
			c.left -= n
			i += int(n)
			if c.left == 0 && first {
				return i
			}
			continue
		}
		k := copy(c.hdr[c.nhdr:], p[i:])
		c.nhdr += k
		i += k
		if c.nhdr < len(c.hdr) {
			break
		}
		c.nhdr = 0
		length := uint32(c.hdr[0])<<16 | uint32(c.hdr[1])<<8 | uint32(c.hdr[2])
		if frame != nil {
			frame(length, c.hdr[3], c.hdr[4], binary.BigEndian.Uint32(c.hdr[5:])&(1<<31-1))
		}
		c.left = length
		if length == 0 && first {
			return i
		}
	}
	return -1
}

// atBoundary reports whether the cursor is between two frames.
func (c *cursor) atBoundary() bool { return c.nhdr == 0 && c.left == 0 }

// Read follows bytes the client sent, read at now, and reports whether
// the client has now sent more frames that do no work than its bucket
// holds. Once it has, it stays so.
func (g *Guard) Read(p []byte, now time.Time) (calm bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.calm {
		return true
	}
	g.refill(now)
	g.in.walk(p, false, func(length uint32, typ, flags byte, stream uint32) {
		switch http2.FrameType(typ) {
		case http2.FrameHeaders:
			g.lastStream = max(g.lastStream, stream)
		case http2.FrameData:
			if length == 0 && !http2.Flags(flags).Has(http2.FlagDataEndStream) {
				g.level--
			}
		case http2.FrameContinuation:
			if length == 0 {
				g.level--
			}
		case http2.FrameRSTStream:
			g.level -= costPerReset
		case http2.FrameSettings, http2.FramePing, http2.FrameWindowUpdate, http2.FramePriority:
			g.level--
		}
	})
	g.calm = g.level < 0
	return g.calm
}

// refill adds what the rate gives since the last refill, up to Burst.
func (g *Guard) refill(now time.Time) {
	if d := now.Sub(g.filled); d > 0 {
		if g.level < float64(g.limits.Burst) {
			g.level = min(float64(g.limits.Burst), g.level+d.Seconds()*float64(g.limits.Rate))
		}
		g.filled = now
	}
}

// credit adds n for a frame the server sent. Credits are not capped: a
// client's window updates come after the frames they answer, as many as
// a window's worth of DATA at once, and what a client may send for them
// stays in proportion to what the server sent it (as Envoy's limit of
// window updates per DATA frame sent does).
func (g *Guard) credit(n float64) { g.level += n }

// Write follows bytes the server sent and credits the client's bucket.
func (g *Guard) Write(p []byte) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.out.walk(p, false, func(length uint32, typ, _ byte, _ uint32) {
		switch http2.FrameType(typ) {
		case http2.FrameData:
			g.credit(creditPerData + float64(creditPerDataKiB*(length>>10)))
		case http2.FrameHeaders:
			g.credit(creditPerHeaders)
		}
	})
}

// FrameEnd returns how many bytes of p, were they sent next, would
// complete the server's frame in progress: 0 when the frames sent so far
// end with a whole one, -1 when the frame in progress does not end in p.
func (g *Guard) FrameEnd(p []byte) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.out.atBoundary() {
		return 0
	}
	c := g.out // a copy: p is not sent yet
	return c.walk(p, true, nil)
}

// AtBoundary reports whether the server's frames written so far end with
// a whole frame.
func (g *Guard) AtBoundary() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.out.atBoundary()
}

// GoAway returns the GOAWAY frame that ends the connection with
// ENHANCE_YOUR_CALM, naming the last stream the client opened.
func (g *Guard) GoAway() []byte {
	g.mu.Lock()
	defer g.mu.Unlock()
	const enhanceYourCalm = 0xb
	f := make([]byte, 9+8)
	f[2] = 8   // length
	f[3] = 0x7 // GOAWAY
	binary.BigEndian.PutUint32(f[9:], g.lastStream)
	binary.BigEndian.PutUint32(f[13:], enhanceYourCalm)
	return f
}
