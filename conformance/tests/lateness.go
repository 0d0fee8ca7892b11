package tests

// The suite's own lateness: while timing tests run, a control timer fires
// every latenessTick, and each firing records how late it was, counted
// when it has passed through as many goroutines as an observation does
// (controlHops). A timing
// assertion that misses its window's end asks how late the suite's own
// timers were while the event was due (from the window's start to the
// observation): a miss by no more than that is the suite's lateness, not
// necessarily the implementation's, and with a runner that reruns such
// tests (SetLateMissHandler) it is not reported as the implementation's
// failure.

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

// latenessTick is the period of the control timer. Each firing is a timer
// due latenessTick after the previous one fired, so a starved process shows
// as one late firing, however long it was starved.
const latenessTick = 5 * time.Millisecond

// controlHops is how many goroutines the control timer's firing passes
// through after the timer's own before its lateness is read: as many as an
// attempt's path from the gateway's timer to the backend's ledger (the
// gateway's handler, its connection's writer, the backend's acceptor,
// its connection's reader, its handler).
const controlHops = 5

// latenessKept bounds the firings kept: a minute of them.
const latenessKept = int(time.Minute / latenessTick)

// lateSample is one firing of the control timer.
type lateSample struct {
	due  time.Time
	late time.Duration
}

// latenessMeter runs the control timer while at least one test holds it.
type latenessMeter struct {
	mu      sync.Mutex
	holders int
	stop    chan struct{}
	next    time.Time    // when the pending firing is due
	samples []lateSample // a ring of the last latenessKept firings
	head    int
}

var meter latenessMeter

// hold starts the meter if it is not running, and returns the function
// that lets it go; the meter stops when nobody holds it.
func (m *latenessMeter) hold() (release func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.holders++
	if m.holders == 1 {
		m.stop = make(chan struct{})
		m.next = time.Now().Add(latenessTick)
		go m.run(m.stop, m.next)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			m.mu.Lock()
			defer m.mu.Unlock()
			m.holders--
			if m.holders == 0 {
				close(m.stop)
			}
		})
	}
}

func (m *latenessMeter) run(stop chan struct{}, due time.Time) {
	// An event the suite observes passes through several goroutines,
	// each of which a loaded machine may wake late: from the gateway's
	// timer through its connection to the backend's server and ledger,
	// or to the client's reader and the test. So does the control
	// timer's: its firing is passed from the timer's goroutine to this
	// one and on through controlHops more, and its lateness is when the
	// last runs.
	relay := make(chan time.Time, 1)
	handOn := make(chan struct{}, 1)
	in := handOn
	for range controlHops - 1 {
		out := make(chan struct{}, 1)
		go func(in <-chan struct{}, out chan<- struct{}) {
			defer close(out)
			for range in {
				out <- struct{}{}
			}
		}(in, out)
		in = out
	}
	ran := make(chan time.Time, 1)
	go func(in <-chan struct{}) {
		for range in {
			ran <- time.Now()
		}
	}(in)
	defer close(handOn)
	for {
		d := due
		timer := time.AfterFunc(time.Until(d), func() { relay <- d })
		select {
		case <-stop:
			timer.Stop()
			return
		case <-relay:
		}
		handOn <- struct{}{}
		fired := <-ran
		next := fired.Add(latenessTick)
		m.mu.Lock()
		s := lateSample{due: d, late: max(fired.Sub(d), 0)}
		if len(m.samples) < latenessKept {
			m.samples = append(m.samples, s)
		} else {
			m.samples[m.head] = s
			m.head = (m.head + 1) % latenessKept
		}
		m.next = next
		m.mu.Unlock()
		due = next
	}
}

// lateness returns how late the control timer was, at most, for firings
// due in [from, to], counting the pending firing as late by now minus its
// due time if that is in the span and past.
func (m *latenessMeter) lateness(from, to time.Time) time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	var worst time.Duration
	for _, s := range m.samples {
		if !s.due.Before(from) && !s.due.After(to) {
			worst = max(worst, s.late)
		}
	}
	if m.holders > 0 && !m.next.Before(from) && !m.next.After(to) {
		worst = max(worst, time.Since(m.next))
	}
	return worst
}

// LateMiss is a timing assertion that missed its window's end by no more
// than the suite's own timer lateness while the event was due, or its
// start by no more than that lateness when the window's start was taken
// (a start recorded late makes what follows look short).
type LateMiss struct {
	// Test is the name of the (sub)test that made the assertion.
	Test string
	// Assertion says what missed its window, as the failure would.
	Assertion string
	// Over is by how much the event missed the window (past its end, or
	// before its start when Early).
	Over time.Duration
	// Early says the event came before the window's start.
	Early bool
	// SuiteLateness is how late the suite's own control timer was at
	// most, from the window's start to the observation.
	SuiteLateness time.Duration
}

// String is the miss with both figures.
func (m LateMiss) String() string {
	how := "late"
	if m.Early {
		how = "early"
	}
	return fmt.Sprintf("%s: %s (%s by %v, the suite's own timers late by up to %v)",
		m.Test, m.Assertion, how, m.Over.Round(time.Millisecond), m.SuiteLateness.Round(time.Millisecond))
}

var lateMisses struct {
	mu      sync.Mutex
	handler func(LateMiss) bool
}

// SetLateMissHandler makes a late miss (see LateMiss) go to h instead of
// failing the test, when h returns true; nil, the default, fails every
// miss. A runner that reruns such tests alone, and reports them
// inconclusive if they miss again by no more than the suite's own
// lateness, sets it; under upstream's runner every miss fails.
func SetLateMissHandler(h func(LateMiss) bool) {
	lateMisses.mu.Lock()
	defer lateMisses.mu.Unlock()
	lateMisses.handler = h
}

// missedLate reports an event that ended (or was observed) elapsed after
// start, past the window's end hi: a failure with the suite's own
// lateness in the message, or, when the miss is within that lateness and
// a handler takes it, a LateMiss logged and handed over instead.
// what is the failure's text, without the figures.
func missedLate(t testing.TB, start time.Time, elapsed, lo, hi time.Duration, what string) {
	t.Helper()
	missed(t, LateMiss{Assertion: what, Over: elapsed - hi, SuiteLateness: meter.lateness(start.Add(lo), start.Add(elapsed))})
}

// startLookback is how far before a window's start the suite's lateness
// is read for an early miss: a start recorded late was due up to that
// lateness before.
const startLookback = time.Second

// missedEarly reports an event that ended (or was observed) elapsed after
// start, before the window's start lo, as missedLate does for a late one,
// weighed against the suite's lateness as the start was recorded.
func missedEarly(t testing.TB, start time.Time, elapsed, lo time.Duration, what string) {
	t.Helper()
	missed(t, LateMiss{Assertion: what, Over: lo - elapsed, Early: true, SuiteLateness: meter.lateness(start.Add(-startLookback), start)})
}

// missed hands m to the handler when it is within the suite's lateness
// and a handler takes it, and fails t otherwise, with both figures.
func missed(t testing.TB, m LateMiss) {
	t.Helper()
	m.Test = t.Name()
	lateMisses.mu.Lock()
	h := lateMisses.handler
	lateMisses.mu.Unlock()
	if m.Over <= m.SuiteLateness && h != nil && h(m) {
		t.Logf("missed by no more than the suite's own lateness: %s", m)
		return
	}
	t.Errorf("%s; the suite's own timers were late by up to %v meanwhile", m.Assertion, m.SuiteLateness.Round(time.Millisecond))
}

// clockGranularity is how much earlier than its configured duration a
// timer may fire and still be on time: a data plane whose timers run on a
// millisecond clock fires up to a millisecond early as a nanosecond clock
// sees it (a 1s delay closed a connection after 999.96ms). See
// docs/semantics/timing-tolerance.md.
const clockGranularity = time.Millisecond

// timerWindow is the window of an event a timer of d causes: not earlier
// than d less the clock's granularity, not later than d plus the
// tolerance.
func timerWindow(d time.Duration) (lo, hi time.Duration) {
	return d - clockGranularity, d + TimingTolerance()
}

// checkWindow checks that an event elapsed after start lies in [lo, hi],
// where what says what happened ("the connection was closed", with its
// context): earlier is a missedEarly, later a missedLate. It reports
// whether the event was in the window.
func checkWindow(t testing.TB, start time.Time, elapsed, lo, hi time.Duration, what string) bool {
	t.Helper()
	msg := fmt.Sprintf("%s after %v, want within [%v, %v] (tolerance %v)", what, elapsed.Round(time.Millisecond), lo, hi, TimingTolerance())
	switch {
	case elapsed < lo:
		missedEarly(t, start, elapsed, lo, msg)
		return false
	case elapsed > hi:
		missedLate(t, start, elapsed, lo, hi, msg)
		return false
	}
	return true
}
