// Package reconcile runs the loop of a component that recomputes
// everything from a full read of its objects (the reference gateway's
// controller, the in-process pod runner): one pass after every burst of
// changes, a retry with a doubling delay after a pass that failed, and,
// when asked, a pause after each pass so that a stream of changes does
// not keep a core busy (ended early once the stream stops). Package
// watchloop is the other half: it keeps the watches open that pull the
// Trigger.
package reconcile

import (
	"context"
	"time"

	"github.com/gatewitness/gatewitness/internal/ctxsleep"
	"github.com/gatewitness/gatewitness/internal/retrydelay"
)

// Default retry delays, used when Options leaves them zero.
const (
	DefaultMinDelay = retrydelay.DefaultMin
	DefaultMaxDelay = retrydelay.DefaultMax
)

// Trigger asks for a pass. Pulls while a pass is pending coalesce into it,
// so a burst of changes costs one pass, which reads them all. Make one with
// NewTrigger; Pull is safe from any goroutine.
type Trigger chan struct{}

// NewTrigger returns a Trigger with no pass pending.
func NewTrigger() Trigger { return make(Trigger, 1) }

// Pull schedules a pass; it never blocks.
func (t Trigger) Pull() {
	select {
	case t <- struct{}{}:
	default:
	}
}

// Options configures Run.
type Options struct {
	// Pass recomputes everything once. An error, or again, asks for
	// another pass after the retry delay even if nothing triggers one:
	// again is for work that failed for a reason a later attempt may not
	// meet and that is not worth an error (a port in use). Required.
	Pass func(ctx context.Context) (again bool, err error)

	// Failed, if set, is called after a pass that returned an error, with
	// the error and the delay before the retry: the place to log it.
	Failed func(err error, delay time.Duration)

	// MinDelay and MaxDelay bound the retry delay: it starts at MinDelay,
	// doubles after every pass that asks for a retry, up to MaxDelay, and
	// goes back to MinDelay after a pass that does not. Zero means
	// DefaultMinDelay and DefaultMaxDelay.
	MinDelay, MaxDelay time.Duration

	// HoldRetries makes the retry wait out its whole delay, even when the
	// trigger is pulled meanwhile; the pulls coalesce into the retry.
	// Without it a pull runs the next pass at once, and the delay only
	// bounds how long a pass that asked for a retry waits for one.
	HoldRetries bool

	// MaxPause, if positive, paces passes that succeed: the next one waits
	// as long as the last one took, at most MaxPause, so that under a
	// stream of changes passes run at most about half the time (each takes
	// in every change made meanwhile) and the writers keep a core.
	MaxPause time.Duration

	// Quiet, if positive, ends such a pause early once the stream of
	// changes has stopped: when the trigger has been pulled during the
	// pause and then not again for Quiet, the next pass runs at once. The
	// pause is there to leave the writers a core while they write; once
	// they have stopped it would only delay the pass that takes in their
	// last changes (up to MaxPause after a long pass). A stream whose
	// pulls come less than Quiet apart is still paced as MaxPause says.
	Quiet time.Duration
}

// Run runs a pass at once, then one after every pull of t and every retry
// the passes ask for, until ctx is done. Passes never overlap. Run returns
// when ctx is done, without starting another pass.
func Run(ctx context.Context, t Trigger, opts Options) {
	if opts.Pass == nil {
		panic("reconcile: Options.Pass is nil")
	}
	minDelay, maxDelay := retrydelay.Bounds(opts.MinDelay, opts.MaxDelay)

	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	var retry <-chan time.Time // the timer's channel while a retry is due
	delay := minDelay
	t.Pull()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t:
		case <-retry:
		}
		start := time.Now()
		again, err := opts.Pass(ctx)
		if ctx.Err() != nil {
			return
		}
		if err == nil && !again {
			delay, retry = minDelay, nil
			timer.Stop()
			if opts.MaxPause > 0 && !pause(ctx, t, min(time.Since(start), opts.MaxPause), opts.Quiet) {
				return
			}
			continue
		}
		if err != nil && opts.Failed != nil {
			opts.Failed(err, delay)
		}
		if opts.HoldRetries {
			if !ctxsleep.Sleep(ctx, delay) {
				return
			}
			t.Pull()
		} else {
			timer.Reset(delay)
			retry = timer.C
		}
		delay = min(2*delay, maxDelay)
	}
}

// pause waits d after a pass, or, with quiet positive, until t has been
// pulled and then not again for quiet, whichever comes first; a pull it
// took is left pending so that the next pass runs at once. It reports
// whether ctx is still live.
func pause(ctx context.Context, t Trigger, d, quiet time.Duration) bool {
	if quiet <= 0 {
		return ctxsleep.Sleep(ctx, d)
	}
	end := time.NewTimer(d)
	defer end.Stop()
	calm := time.NewTimer(quiet)
	calm.Stop()
	defer calm.Stop()
	var calmed <-chan time.Time // calm's channel once a pull has come, nil before
	for {
		select {
		case <-ctx.Done():
			return false
		case <-t:
			calm.Reset(quiet)
			calmed = calm.C
			continue
		case <-end.C:
		case <-calmed:
		}
		if calmed != nil {
			t.Pull()
		}
		return true
	}
}
