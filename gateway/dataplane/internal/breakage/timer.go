package breakage

// Timer broken: inactivity timers in place of deadlines
// (Set.InactivityTimeouts).

import (
	"context"
	"io"
	"slices"
	"sync"
	"time"
)

// inactivity keeps every bound as an inactivity timer that each byte of
// the response restarts, as HAProxy's "timeout server" is.
type inactivity struct{}

// inactivityKey is the context key of the inactivity timers that bound a
// request.
type inactivityKey struct{}

// Bound returns ctx bounded by an inactivity timer of d that cancels it
// with cause; the timer is restarted by every response read that Watch
// wraps under the returned context. start is not needed: the timer
// restarts anyway.
func (inactivity) Bound(ctx context.Context, _ time.Time, d time.Duration, cause error) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	it := &idleTimer{d: d, t: time.AfterFunc(d, func() { cancel(cause) })}
	timers, _ := ctx.Value(inactivityKey{}).([]*idleTimer)
	ctx = context.WithValue(ctx, inactivityKey{}, append(slices.Clone(timers), it))
	return ctx, func() { it.stop(); cancel(context.Canceled) }
}

// Watch returns body wrapped so that every read that returns bytes
// restarts each inactivity timer of ctx; without timers, body.
func (inactivity) Watch(ctx context.Context, body io.ReadCloser) io.ReadCloser {
	timers, _ := ctx.Value(inactivityKey{}).([]*idleTimer)
	for _, it := range timers {
		body = it.watch(body)
	}
	return body
}

// Passed is false: only the timer, which a flowing response keeps
// restarting, ends a bound.
func (inactivity) Passed(time.Time) bool { return false }

// idleTimer is one inactivity timer: it fires d after the last restart.
type idleTimer struct {
	d       time.Duration
	mu      sync.Mutex
	t       *time.Timer
	stopped bool
}

// restart gives the timer its whole d again, unless it was stopped.
func (it *idleTimer) restart() {
	it.mu.Lock()
	defer it.mu.Unlock()
	if !it.stopped {
		it.t.Reset(it.d)
	}
}

func (it *idleTimer) stop() {
	it.mu.Lock()
	defer it.mu.Unlock()
	it.stopped = true
	it.t.Stop()
}

// watch returns body wrapped so that every read that returns bytes
// restarts the timer.
func (it *idleTimer) watch(body io.ReadCloser) io.ReadCloser {
	return &restartingBody{ReadCloser: body, it: it}
}

type restartingBody struct {
	io.ReadCloser
	it *idleTimer
}

func (b *restartingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.it.restart()
	}
	return n, err
}
