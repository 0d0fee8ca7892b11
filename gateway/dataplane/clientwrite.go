package dataplane

// Writes to a client that may not read: a proxied response's writes are
// bounded in time (Limits.ResponseWriteTimeout), and a write that waits
// on the client gives the request's backend slot back
// (Limits.WriteStallFreesSlot), so that a client that stops reading holds
// nothing another client needs. docs/semantics/request-limits.md has the
// defaults and their anchors.

import (
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// clientWriter is the response writer of a request on its way to a
// backend. Before each write it moves the write deadline to at least
// timeout from now, and it starts a timer that releases slot if the write
// has not returned within stall. It is used by the handler's goroutine
// only.
type clientWriter struct {
	http.ResponseWriter
	deadline writeDeadliner // the wrapped writer's; nil: writes are not bounded
	timeout  time.Duration  // 0: writes are not bounded
	movedAt  time.Time      // when the deadline was last moved
	stall    time.Duration  // 0: a stalled write keeps its slot
	slot     *backendSlot
	park     *parkTimer // releases slot; nil until the first write with a slot
}

// writeDeadliner is what net/http's HTTP/1.1 and HTTP/2 response writers
// implement for http.ResponseController.SetWriteDeadline.
type writeDeadliner interface{ SetWriteDeadline(time.Time) error }

// parkTimer is a stall timer, kept in a pool across requests: a timer
// for each request would be an allocation on every request.
type parkTimer struct {
	t    *time.Timer
	slot atomic.Pointer[backendSlot]
}

var parkTimers = sync.Pool{New: func() any {
	p := new(parkTimer)
	p.t = time.AfterFunc(time.Hour, p.fire)
	p.t.Stop()
	return p
}}

// fire releases the slot of the request the timer is armed for. A fire
// that was already under way when the timer went back to the pool may
// release the next request's slot early: that request then counts no
// longer, which the cap allows for (a stalled write does the same).
func (p *parkTimer) fire() {
	if s := p.slot.Load(); s != nil {
		s.release()
	}
}

// guardWrites returns w bounded as clientWriter says; holdsSlot gives it
// the request's slot once it has one.
func (s *Server) guardWrites(w http.ResponseWriter) *clientWriter {
	cw := &clientWriter{ResponseWriter: w, stall: s.limits.WriteStallFreesSlot}
	if d, ok := w.(writeDeadliner); ok && s.limits.ResponseWriteTimeout > 0 {
		cw.deadline, cw.timeout = d, s.limits.ResponseWriteTimeout
	}
	return cw
}

// holdsSlot tells w, when it is a clientWriter, that its request holds
// slot: a write that stalls releases it. The caller calls the function
// returned when the request is done.
func holdsSlot(w http.ResponseWriter, slot *backendSlot) (done func()) {
	cw, ok := w.(*clientWriter)
	if !ok {
		return func() {}
	}
	cw.slot = slot
	return cw.done
}

// done gives the stall timer back.
func (w *clientWriter) done() {
	w.slot = nil
	if p := w.park; p != nil {
		w.park = nil
		p.slot.Store(nil)
		p.t.Stop()
		parkTimers.Put(p)
	}
}

// unwrapped returns the writer net/http gave the handler, under any
// clientWriter.
func unwrapped(w http.ResponseWriter) http.ResponseWriter {
	for {
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return w
		}
		w = u.Unwrap()
	}
}

func (w *clientWriter) WriteHeader(code int) {
	w.start()
	w.ResponseWriter.WriteHeader(code)
	w.end()
}

func (w *clientWriter) Write(p []byte) (int, error) {
	w.start()
	n, err := w.ResponseWriter.Write(p)
	w.end()
	return n, err
}

// Flush is http.Flusher's; FlushError is what http.ResponseController
// calls.
func (w *clientWriter) Flush() { _ = w.FlushError() }

func (w *clientWriter) FlushError() error {
	w.start()
	err := http.NewResponseController(w.ResponseWriter).Flush()
	w.end()
	return err
}

// Unwrap lets http.ResponseController reach the writer's other methods
// (Hijack, SetReadDeadline).
func (w *clientWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// start prepares a write: the deadline, moved at most every sixteenth of
// the timeout and then to timeout and a sixteenth from now, so a write
// always has at least timeout; and the stall timer, while the slot is
// held.
func (w *clientWriter) start() {
	if w.deadline != nil {
		if now := time.Now(); now.Sub(w.movedAt) >= w.timeout/16 {
			w.movedAt = now
			_ = w.deadline.SetWriteDeadline(now.Add(w.timeout + w.timeout/16))
		}
	}
	if w.stall <= 0 || w.slot == nil || w.slot.count == nil || w.slot.freed.Load() {
		return
	}
	if w.park == nil {
		w.park = parkTimers.Get().(*parkTimer)
		w.park.slot.Store(w.slot)
	}
	w.park.t.Reset(w.stall)
}

// end is called when a write has returned.
func (w *clientWriter) end() {
	if w.park != nil {
		w.park.t.Stop()
	}
}

// clearWriteDeadline is an http.Server's ConnState hook: a connection
// going idle loses the write deadline its last response left, which
// would otherwise fail the first write of a later request (HTTP/1.1
// deadlines are the connection's). then, when not nil, is called too.
func clearWriteDeadline(then func(net.Conn, http.ConnState)) func(net.Conn, http.ConnState) {
	return func(c net.Conn, st http.ConnState) {
		if st == http.StateIdle {
			_ = c.SetWriteDeadline(time.Time{})
		}
		if then != nil {
			then(c, st)
		}
	}
}
