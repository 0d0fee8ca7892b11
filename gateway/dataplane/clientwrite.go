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
	"time"
)

// clientWriter is the response writer of a request on its way to a
// backend. Before each write it moves the write deadline to at least
// timeout from now, and it starts a timer that releases slot if the write
// has not returned within stall. It is used by the handler's goroutine
// only.
type clientWriter struct {
	http.ResponseWriter
	rc      *http.ResponseController // of the writer it wraps
	timeout time.Duration            // 0: writes are not bounded
	movedAt time.Time                // when the deadline was last moved
	stall   time.Duration            // 0: a stalled write keeps its slot
	slot    *backendSlot
	park    *time.Timer // releases slot; nil until the first write
}

// guardWrites returns w bounded as clientWriter says; holdsSlot gives it
// the request's slot once it has one.
func (s *Server) guardWrites(w http.ResponseWriter) *clientWriter {
	return &clientWriter{
		ResponseWriter: w,
		rc:             http.NewResponseController(w),
		timeout:        s.limits.ResponseWriteTimeout,
		stall:          s.limits.WriteStallFreesSlot,
	}
}

// holdsSlot tells w, when it is a clientWriter, that its request holds
// slot: a write that stalls releases it.
func holdsSlot(w http.ResponseWriter, slot *backendSlot) {
	if cw, ok := w.(*clientWriter); ok {
		cw.slot = slot
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
	err := w.rc.Flush()
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
	if w.timeout > 0 {
		if now := time.Now(); now.Sub(w.movedAt) >= w.timeout/16 {
			w.movedAt = now
			_ = w.rc.SetWriteDeadline(now.Add(w.timeout + w.timeout/16))
		}
	}
	if w.stall <= 0 || w.slot == nil || w.slot.count == nil || w.slot.freed.Load() {
		return
	}
	if w.park == nil {
		w.park = time.AfterFunc(w.stall, w.slot.release)
		return
	}
	w.park.Reset(w.stall)
}

// end is called when a write has returned.
func (w *clientWriter) end() {
	if w.park != nil {
		w.park.Stop()
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
