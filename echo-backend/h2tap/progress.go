package h2tap

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
)

const (
	// keepEnded is how many ended streams a connection still remembers, so
	// that a WaitWritten that comes a little late finds its stream ended.
	keepEnded = 64
	// maxTracked bounds the streams whose progress one connection keeps.
	// Beyond it the stream with the lowest id is forgotten, which counts
	// as ended.
	maxTracked = 1 << 14
)

// streamProgress is what the tap has forwarded to the client on one stream.
type streamProgress struct {
	headers bool          // a final (non-1xx) header block or trailers
	data    int64         // DATA payload bytes, padding excluded
	ended   bool          // END_STREAM or RST_STREAM, from either side or the tap
	wake    chan struct{} // closed at the next change, when someone waits
}

// reached reports whether p satisfies a WaitWritten condition.
func (p *streamProgress) reached(headers bool, dataBytes int64) bool {
	return (p.headers || !headers) && p.data >= dataBytes
}

// changed wakes the waiters of p.
func (p *streamProgress) changed() {
	if p.wake != nil {
		close(p.wake)
		p.wake = nil
	}
}

// progressEvent is one server frame that counts toward a stream's progress.
type progressEvent struct {
	stream  uint32
	headers bool
	data    int64
	end     bool
}

// apply returns p after e.
func (e progressEvent) apply(p streamProgress) streamProgress {
	p.headers = p.headers || e.headers
	p.data += e.data
	p.ended = p.ended || e.end
	return p
}

// tracker keeps the per-stream progress of one connection. Streams are
// added when the client opens them and dropped keepEnded streams after they
// end, so its size is bounded by the streams open at once (and maxTracked).
type tracker struct {
	mu       sync.Mutex
	streams  map[uint32]*streamProgress
	ended    []uint32        // ended streams still in streams, oldest first
	inFlight []progressEvent // frames the current Write is handing to the socket
	err      error           // set once no frame can be forwarded any more

	// After GoAway: streams above goAwayLast are cut off; drained is
	// closed (and isDrained set) once none of the streams at or below it,
	// counted by lowerOpen, is open.
	goingAway  bool
	goAwayLast uint32
	lowerOpen  int
	drained    chan struct{}
	isDrained  bool
}

// open starts tracking a stream the client opened.
func (t *tracker) open(stream uint32) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.streams == nil {
		t.streams = make(map[uint32]*streamProgress)
	}
	if _, ok := t.streams[stream]; ok {
		return
	}
	if len(t.streams) >= maxTracked {
		// Only a client that keeps thousands of streams open gets here.
		lowest := stream
		for id := range t.streams {
			lowest = min(lowest, id)
		}
		t.forget(lowest)
	}
	t.streams[stream] = &streamProgress{}
	if t.goingAway && !t.isDrained && stream <= t.goAwayLast {
		t.lowerOpen++
	}
}

// forget drops a stream; its waiters then see it as ended.
func (t *tracker) forget(stream uint32) {
	if p := t.streams[stream]; p != nil {
		if !p.ended {
			t.lowerEnded(stream)
		}
		p.changed()
		delete(t.streams, stream)
	}
}

// lowerEnded counts down the open streams GOAWAY let complete when stream
// is one of them; t.mu is held.
func (t *tracker) lowerEnded(stream uint32) {
	if !t.goingAway || t.isDrained || stream > t.goAwayLast {
		return
	}
	t.lowerOpen--
	t.checkDrained()
}

// checkDrained closes drained when no stream GOAWAY let complete is open;
// t.mu is held.
func (t *tracker) checkDrained() {
	if t.lowerOpen == 0 && !t.isDrained {
		t.isDrained = true
		close(t.drained)
	}
}

// goAway records that GOAWAY(last) was sent: waiters on the streams above
// last are woken and fail from now on. The channel it returns is closed
// once every stream at or below last that is open now or opens later has
// ended. goAway is called at most once.
func (t *tracker) goAway(last uint32) <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.goingAway = true
	t.goAwayLast = last
	t.drained = make(chan struct{})
	for id, p := range t.streams {
		switch {
		case id > last:
			p.changed()
		case !p.ended:
			t.lowerOpen++
		}
	}
	t.checkDrained()
	return t.drained
}

// markEnded records that a stream ended; t.mu is held.
func (t *tracker) markEnded(p *streamProgress, stream uint32) {
	if p.ended {
		return
	}
	p.ended = true
	t.lowerEnded(stream)
	t.ended = append(t.ended, stream)
	if len(t.ended) > keepEnded {
		t.forget(t.ended[0])
		n := copy(t.ended, t.ended[1:])
		t.ended = t.ended[:n]
	}
}

// end records that a stream ended without a frame from the server: the
// client or the tap reset it.
func (t *tracker) end(stream uint32) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if p := t.streams[stream]; p != nil {
		t.markEnded(p, stream)
		p.changed()
	}
}

// sending records the frames a Write is about to hand to the socket.
func (t *tracker) sending(events []progressEvent) {
	t.mu.Lock()
	t.inFlight = events
	t.mu.Unlock()
}

// sent records that the frames given to sending were written (ok) or not.
func (t *tracker) sent(events []progressEvent, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.inFlight = nil
	if !ok {
		return
	}
	for _, e := range events {
		p := t.streams[e.stream]
		if p == nil {
			continue
		}
		p.headers = p.headers || e.headers
		p.data += e.data
		if e.end {
			t.markEnded(p, e.stream)
		}
		p.changed()
	}
}

// shut records that nothing more will be forwarded and wakes every waiter.
func (t *tracker) shut(err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.err != nil {
		return
	}
	t.err = err
	for _, p := range t.streams {
		p.changed()
	}
}

// ErrStreamEnded is returned (wrapped) by WaitWritten when the stream ended
// before what it waits for was forwarded: nothing more will be.
var ErrStreamEnded = errors.New("the stream ended first")

// WaitWritten waits until the tap has forwarded to the client, on the
// client-opened stream streamID, the response headers (if headers is set)
// and at least dataBytes bytes of DATA payload, and then returns nil. It
// returns an error wrapping ErrStreamEnded if the stream ends first,
// net.ErrClosed if the connection closes first or GoAway cuts the stream
// off (its id is above GOAWAY's last stream id), and the
// context's error if ctx is done first. Before it fails, frames that a
// Write is handing to the socket at that moment count as forwarded, since
// the client may already have them.
//
// The response headers are the first non-informational (not 1xx) header
// block, or trailers. A stream ends when the server sends END_STREAM or
// RST_STREAM, when the client sends RST_STREAM, and on ResetStream. The
// tap remembers the last 64 streams that ended; an older stream counts as
// ended, with ErrStreamEnded.
//
// An HTTP/2 server buffers and queues frames, so a handler that flushed its
// headers or wrote a message cannot know they left; calling WaitWritten
// before ResetStream makes sure the reset does not overtake them (the tap
// would drop them).
func (c *Conn) WaitWritten(ctx context.Context, streamID uint32, headers bool, dataBytes int64) error {
	if err := c.checkStream("WaitWritten", streamID); err != nil {
		return err
	}
	t := &c.prog
	for {
		t.mu.Lock()
		p := t.streams[streamID]
		if p != nil && p.reached(headers, dataBytes) {
			t.mu.Unlock()
			return nil
		}
		var stop error
		switch {
		case p == nil || p.ended:
			stop = ErrStreamEnded
		case t.err != nil:
			stop = t.err
		case t.goingAway && streamID > t.goAwayLast:
			stop = errGoneAway
		default:
			if p.wake == nil {
				p.wake = make(chan struct{})
			}
			wake := p.wake
			t.mu.Unlock()
			select {
			case <-wake:
				continue
			case <-ctx.Done():
				stop = ctx.Err()
			}
			t.mu.Lock()
		}
		// The wait failed; frames being handed to the socket right now
		// count, since the client may already have them (and may even
		// have reset the stream after reading them).
		reached := t.reachedInFlight(streamID, headers, dataBytes)
		t.mu.Unlock()
		if reached {
			return nil
		}
		return fmt.Errorf("h2tap: WaitWritten: stream %d: %w", streamID, stop)
	}
}

// reachedInFlight reports whether a stream's progress, with the frames in
// flight, satisfies a WaitWritten condition; t.mu is held.
func (t *tracker) reachedInFlight(stream uint32, headers bool, dataBytes int64) bool {
	p := t.streams[stream]
	if p == nil {
		return false
	}
	now := *p
	for _, e := range t.inFlight {
		if e.stream == stream {
			now = e.apply(now)
		}
	}
	return now.reached(headers, dataBytes)
}

// checkStream validates a stream id given to method: it must have been
// opened by the client on this HTTP/2 connection.
func (c *Conn) checkStream(method string, streamID uint32) error {
	if streamID == 0 || streamID > 1<<31-1 {
		return fmt.Errorf("h2tap: %s: stream id %d: want 1 to 2^31-1", method, streamID)
	}
	if !c.IsHTTP2() {
		return fmt.Errorf("h2tap: %s: connection %d is not HTTP/2", method, c.id)
	}
	if max := c.maxStream.Load(); streamID > max {
		return fmt.Errorf("h2tap: %s: stream %d was not opened by the client (highest is %d)", method, streamID, max)
	}
	return nil
}

// errGoneAway is the tracker's error after GoAway.
var errGoneAway = fmt.Errorf("GOAWAY sent: %w", net.ErrClosed)
