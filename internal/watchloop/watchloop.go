// Package watchloop keeps a watch open on one kind of object through a
// controller-runtime client, re-opening it whenever it ends, so that a
// component which recomputes from a full list on every change (the
// reference gateway's controller, the in-process pod runner) hears of
// every change without writing its own retry loop.
package watchloop

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gatewitness/gatewitness/internal/ctxsleep"
	"github.com/gatewitness/gatewitness/internal/retrydelay"
)

// Default retry delays, used when Options leaves them zero.
const (
	DefaultMinDelay = retrydelay.DefaultMin
	DefaultMaxDelay = retrydelay.DefaultMax
)

// Options configures Run.
type Options struct {
	// Notify is called for every event of the watch, and once each time a
	// watch is (re)established: events may have been missed while none was
	// open, so the caller should re-list. It must not block for long.
	// Required.
	Notify func()

	// Failed, if set, is called when a watch cannot be opened, with the
	// client's error as it is (so that checks such as meta.IsNoMatchError
	// work on it) and the delay Run is about to wait; Run waits the delay it
	// returns instead (capped at MaxDelay). It is the place to log, or to
	// wait longer for an error that will not go away soon.
	Failed func(err error, delay time.Duration) time.Duration

	// MinDelay and MaxDelay bound the wait after a failed attempt to open a
	// watch: it starts at MinDelay, doubles after every failure up to
	// MaxDelay, and goes back to MinDelay once a watch opens. Zero means
	// DefaultMinDelay and DefaultMaxDelay.
	MinDelay, MaxDelay time.Duration
}

// Run keeps a watch open on the kind that newList makes until ctx is done.
// A watch that closes its channel or sends an error event is stopped and
// opened again at once; one that cannot be opened is retried after a
// doubling delay. Run returns only when ctx is done.
func Run(ctx context.Context, c client.WithWatch, newList func() client.ObjectList, opts Options) {
	if opts.Notify == nil {
		panic("watchloop: Options.Notify is nil")
	}
	minDelay, maxDelay := retrydelay.Bounds(opts.MinDelay, opts.MaxDelay)

	delay := minDelay
	for {
		w, err := c.Watch(ctx, newList())
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if opts.Failed != nil {
				delay = min(opts.Failed(err, delay), maxDelay)
			}
			if !ctxsleep.Sleep(ctx, delay) {
				return
			}
			delay = min(2*delay, maxDelay)
			continue
		}
		delay = minDelay
		opts.Notify()
		drain(ctx, w, opts.Notify)
		w.Stop()
		if ctx.Err() != nil {
			return
		}
	}
}

// drain calls notify for every event of w until w's channel closes, w
// sends an error event, or ctx is done.
func drain(ctx context.Context, w watch.Interface, notify func()) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.ResultChan():
			if !ok {
				return
			}
			notify()
			if ev.Type == watch.Error {
				return
			}
		}
	}
}
