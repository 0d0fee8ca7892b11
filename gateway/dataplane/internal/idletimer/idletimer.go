// Package idletimer is an inactivity timer: it fires when it has not been
// kicked for its duration, and a response body it watches kicks it with
// every read that returns bytes, so that it bounds the silence between
// reads rather than the whole body (HAProxy's "timeout server" is such a
// timer). The data plane's Server timeout is one; the breakage that turns
// every bound into one (breakage.Set.InactivityTimeouts) uses it too.
package idletimer

import (
	"io"
	"sync"
	"time"
)

// Timer calls its func d after the last Kick, once, unless stopped. A nil
// *Timer is a timer that is off: its methods do nothing.
type Timer struct {
	d       time.Duration
	mu      sync.Mutex
	t       *time.Timer
	stopped bool
}

// New starts a Timer that calls fire, in its own goroutine, when d passes
// with no Kick.
func New(d time.Duration, fire func()) *Timer {
	return &Timer{d: d, t: time.AfterFunc(d, fire)}
}

// Kick gives the timer its whole d again, unless it was stopped.
func (it *Timer) Kick() {
	if it == nil {
		return
	}
	it.mu.Lock()
	defer it.mu.Unlock()
	if !it.stopped {
		it.t.Reset(it.d)
	}
}

// Stop stops the timer for good: a later Kick does not start it again.
func (it *Timer) Stop() {
	if it == nil {
		return
	}
	it.mu.Lock()
	defer it.mu.Unlock()
	it.stopped = true
	it.t.Stop()
}

// Watch returns body wrapped so that every read that returns bytes kicks
// the timer; a nil Timer returns body itself.
func (it *Timer) Watch(body io.ReadCloser) io.ReadCloser {
	if it == nil {
		return body
	}
	return &kickingBody{ReadCloser: body, it: it}
}

type kickingBody struct {
	io.ReadCloser
	it *Timer
}

func (b *kickingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.it.Kick()
	}
	return n, err
}
