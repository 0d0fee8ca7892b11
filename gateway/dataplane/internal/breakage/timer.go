package breakage

// Timer broken: inactivity timers in place of deadlines
// (Set.InactivityTimeouts).

import (
	"context"
	"io"
	"slices"
	"time"

	"github.com/gatewitness/gatewitness/gateway/dataplane/internal/idletimer"
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
	it := idletimer.New(d, func() { cancel(cause) })
	timers, _ := ctx.Value(inactivityKey{}).([]*idletimer.Timer)
	ctx = context.WithValue(ctx, inactivityKey{}, append(slices.Clone(timers), it))
	return ctx, func() { it.Stop(); cancel(context.Canceled) }
}

// Watch returns body wrapped so that every read that returns bytes
// restarts each inactivity timer of ctx; without timers, body.
func (inactivity) Watch(ctx context.Context, body io.ReadCloser) io.ReadCloser {
	timers, _ := ctx.Value(inactivityKey{}).([]*idletimer.Timer)
	for _, it := range timers {
		body = it.Watch(body)
	}
	return body
}

// Passed is false: only the timer, which a flowing response keeps
// restarting, ends a bound.
func (inactivity) Passed(time.Time) bool { return false }
