package reconcile

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// The tests run in a synctest bubble: its clock moves only when every
// goroutine of the bubble is blocked, so the times a pass starts at are
// exact and a test can say "exactly 50ms later" without a flake.

// passes records when each pass started, relative to the test's start, and
// answers each pass with the next of a script of results.
type passes struct {
	start  time.Time
	mu     sync.Mutex
	at     []time.Duration
	script []error // the result of pass i; past the end: nil
	again  []bool  // "again" of pass i; past the end: false
	took   time.Duration
	failed []time.Duration // the delays Failed was called with
}

func newPasses() *passes { return &passes{start: time.Now()} }

func (p *passes) pass(ctx context.Context) (bool, error) {
	p.mu.Lock()
	i := len(p.at)
	p.at = append(p.at, time.Since(p.start))
	var err error
	if i < len(p.script) {
		err = p.script[i]
	}
	again := i < len(p.again) && p.again[i]
	took := p.took
	p.mu.Unlock()
	time.Sleep(took) // the pass's own work, on the bubble's clock
	return again, err
}

func (p *passes) onFailed(err error, delay time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.failed = append(p.failed, delay)
}

func (p *passes) times() []time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.at)
}

// run starts Run with opts in the bubble and returns its trigger and a
// stop that cancels it and waits for it to return.
func run(t *testing.T, opts Options) (Trigger, func()) {
	ctx, cancel := context.WithCancel(t.Context())
	tr := NewTrigger()
	done := make(chan struct{})
	go func() {
		defer close(done)
		Run(ctx, tr, opts)
	}()
	return tr, func() { cancel(); <-done }
}

func ms(v ...int) []time.Duration {
	d := make([]time.Duration, len(v))
	for i, x := range v {
		d[i] = time.Duration(x) * time.Millisecond
	}
	return d
}

func wantTimes(t *testing.T, what string, got, want []time.Duration) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s: passes started at %v, want %v", what, got, want)
	}
}

var errWrite = errors.New("status write failed")

func TestFirstPassAtOnceThenOnlyOnPull(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPasses()
		tr, stop := run(t, Options{Pass: p.pass})
		defer stop()
		time.Sleep(time.Hour)
		wantTimes(t, "no pull", p.times(), ms(0))
		tr.Pull()
		synctest.Wait()
		wantTimes(t, "one pull an hour in", p.times(), []time.Duration{0, time.Hour})
	})
}

func TestPullsDuringAPassCoalesce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPasses()
		p.took = 100 * time.Millisecond
		tr, stop := run(t, Options{Pass: p.pass})
		defer stop()
		synctest.Wait() // the first pass is under way
		for range 50 {
			tr.Pull()
		}
		time.Sleep(time.Hour)
		wantTimes(t, "50 pulls during the first pass", p.times(), ms(0, 100))
	})
}

func TestRetryDelayDoublesUpToMaxAndResets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPasses()
		p.script = []error{errWrite, errWrite, errWrite, errWrite, errWrite, nil, errWrite}
		tr, stop := run(t, Options{Pass: p.pass, Failed: p.onFailed, MinDelay: 50 * time.Millisecond, MaxDelay: 300 * time.Millisecond})
		defer stop()
		time.Sleep(time.Hour)
		// Five failures: retries after 50, 100, 200, 300 (capped), 300; the
		// sixth pass succeeds and nothing else runs.
		wantTimes(t, "five failures then success", p.times(), ms(0, 50, 150, 350, 650, 950))
		if want := ms(50, 100, 200, 300, 300); !slices.Equal(p.failed, want) {
			t.Errorf("Failed saw delays %v, want %v", p.failed, want)
		}
		// A success resets the delay: the next failure retries after 50ms.
		tr.Pull()
		time.Sleep(time.Hour)
		got := p.times()
		if len(got) != 8 || got[7]-got[6] != 50*time.Millisecond {
			t.Errorf("after a success, a failure at %v was retried at %v; want one retry 50ms later", got[6:7], got[7:])
		}
	})
}

func TestAgainRetriesWithoutAnError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPasses()
		p.again = []bool{true, true}
		_, stop := run(t, Options{Pass: p.pass, Failed: p.onFailed, MinDelay: 50 * time.Millisecond})
		defer stop()
		time.Sleep(time.Hour)
		wantTimes(t, "again twice", p.times(), ms(0, 50, 150))
		if len(p.failed) != 0 {
			t.Errorf("Failed called %d times for passes that returned no error", len(p.failed))
		}
	})
}

func TestPullDuringRetryDelayRunsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPasses()
		p.script = []error{errWrite}
		tr, stop := run(t, Options{Pass: p.pass, MinDelay: time.Second})
		defer stop()
		time.Sleep(10 * time.Millisecond)
		tr.Pull()
		time.Sleep(time.Hour)
		// The pull ran the second pass at 10ms, which succeeded, so the
		// retry due at 1s was called off.
		wantTimes(t, "pull 10ms into a 1s retry delay", p.times(), ms(0, 10))
	})
}

func TestHoldRetriesWaitsOutTheDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPasses()
		p.script = []error{errWrite}
		tr, stop := run(t, Options{Pass: p.pass, MinDelay: time.Second, HoldRetries: true})
		defer stop()
		time.Sleep(10 * time.Millisecond)
		tr.Pull()
		tr.Pull()
		time.Sleep(time.Hour)
		// The pulls coalesced into the retry at 1s.
		wantTimes(t, "pulls 10ms into a held 1s retry delay", p.times(), ms(0, 1000))
	})
}

func TestMaxPausePacesSuccessfulPasses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPasses()
		p.took = 300 * time.Millisecond
		tr, stop := run(t, Options{Pass: p.pass, MaxPause: time.Second})
		defer stop()
		synctest.Wait()
		tr.Pull() // during the first pass: due when it ends, at 300ms
		time.Sleep(time.Hour)
		// The second pass waits as long as the first took: 300+300.
		wantTimes(t, "a 300ms pass, pulled during it", p.times(), ms(0, 600))

		p.mu.Lock()
		p.took = 3 * time.Second
		p.mu.Unlock()
		tr.Pull()
		synctest.Wait()
		tr.Pull()
		time.Sleep(time.Hour)
		got := p.times()
		// A 3s pass: the pause is capped at MaxPause, 1s.
		if len(got) != 4 || got[3]-got[2] != 4*time.Second {
			t.Errorf("a 3s pass pulled during it: passes at %v; want the next 3s+1s after it started", got)
		}
	})
}

func TestNoPauseWithoutMaxPause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPasses()
		p.took = 300 * time.Millisecond
		tr, stop := run(t, Options{Pass: p.pass})
		defer stop()
		synctest.Wait()
		tr.Pull()
		time.Sleep(time.Hour)
		wantTimes(t, "a 300ms pass, pulled during it", p.times(), ms(0, 300))
	})
}

func TestCancelStopsRunWithoutRetryOrFailed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		p := newPasses()
		tr := NewTrigger()
		done := make(chan struct{})
		go func() {
			defer close(done)
			Run(ctx, tr, Options{
				Pass: func(ctx context.Context) (bool, error) {
					p.pass(ctx)
					cancel() // the context ends during the pass
					return false, ctx.Err()
				},
				Failed: p.onFailed,
			})
		}()
		<-done
		tr.Pull()
		time.Sleep(time.Hour)
		wantTimes(t, "cancelled during the first pass", p.times(), ms(0))
		if len(p.failed) != 0 {
			t.Errorf("Failed called for a pass that ended with its context: %v", p.failed)
		}
	})
}

// pullEvery pulls tr every interval, from one interval from now until
// until (relative to p's start), as a stream of writes does.
func pullEvery(tr Trigger, p *passes, interval, until time.Duration) {
	for time.Since(p.start)+interval <= until {
		time.Sleep(interval)
		tr.Pull()
	}
}

// runQuiet runs passes that each take took, paced with MaxPause 1s and
// Quiet 10ms, until the test ends.
func runQuiet(t *testing.T, took time.Duration) (*passes, Trigger) {
	p := newPasses()
	p.took = took
	tr, stop := run(t, Options{Pass: p.pass, MaxPause: time.Second, Quiet: 10 * time.Millisecond})
	t.Cleanup(stop)
	return p, tr
}

func TestQuietEndsThePauseWhenChangesStoppedDuringThePass(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, tr := runQuiet(t, 3*time.Second)
		synctest.Wait()
		tr.Pull() // the last change, during the first pass
		time.Sleep(time.Hour)
		// Nothing came after the pass: the next one runs 10ms after it,
		// not after a 1s pause.
		wantTimes(t, "one pull during a 3s pass", p.times(), ms(0, 3010))
	})
}

func TestQuietEndsThePauseWhenChangesStopDuringIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, tr := runQuiet(t, 3*time.Second)
		synctest.Wait()
		// A pull every 4ms from 4ms to 3.5s: through the first pass and
		// half of the pause after it.
		pullEvery(tr, p, 4*time.Millisecond, 3500*time.Millisecond)
		time.Sleep(time.Hour)
		// The last pull at 3.5s; 10ms of quiet later the next pass runs.
		wantTimes(t, "pulls every 4ms until 3.5s", p.times(), ms(0, 3510))
	})
}

func TestQuietKeepsPacingAStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, tr := runQuiet(t, 300*time.Millisecond)
		synctest.Wait()
		// A pull every 4ms for 1.1s: no 10ms of quiet until the end, so
		// the first pause is as long as the pass before it (300ms); the
		// second pause ends 10ms after the last pull, at 1.1s.
		pullEvery(tr, p, 4*time.Millisecond, 1100*time.Millisecond)
		time.Sleep(time.Hour)
		wantTimes(t, "pulls every 4ms for 1.1s", p.times(), ms(0, 600, 1110))
	})
}

func TestQuietWithoutAPullWaitsForOne(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, tr := runQuiet(t, 300*time.Millisecond)
		time.Sleep(time.Hour)
		wantTimes(t, "no pull", p.times(), ms(0))
		tr.Pull()
		time.Sleep(time.Hour)
		wantTimes(t, "one pull an hour in", p.times(), []time.Duration{0, time.Hour})
	})
}
