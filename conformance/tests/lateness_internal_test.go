package tests

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

// recordingTB is a testing.TB that keeps what a check reported.
type recordingTB struct {
	testing.TB
	name   string
	errors []string
	logs   []string
}

func (r *recordingTB) Helper()      {}
func (r *recordingTB) Name() string { return r.name }
func (r *recordingTB) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}
func (r *recordingTB) Error(args ...any) { r.errors = append(r.errors, fmt.Sprint(args...)) }
func (r *recordingTB) Logf(format string, args ...any) {
	r.logs = append(r.logs, fmt.Sprintf(format, args...))
}

// withSamples makes the meter hold the given firings for the test.
func withSamples(t *testing.T, samples ...lateSample) {
	meter.mu.Lock()
	saved, savedHead := meter.samples, meter.head
	meter.samples, meter.head = samples, 0
	meter.mu.Unlock()
	t.Cleanup(func() {
		meter.mu.Lock()
		meter.samples, meter.head = saved, savedHead
		meter.mu.Unlock()
	})
}

func withHandler(t *testing.T, h func(LateMiss) bool) {
	SetLateMissHandler(h)
	t.Cleanup(func() { SetLateMissHandler(nil) })
}

// TestCheckWindowLowerBoundAllowsAMillisecond: a timer on a millisecond
// clock may fire up to 1ms before its time; 10% early fails.
func TestCheckWindowLowerBoundAllowsAMillisecond(t *testing.T) {
	d := time.Second
	lo, hi := timerWindow(d)
	for _, tc := range []struct {
		elapsed time.Duration
		ok      bool
	}{
		{999960 * time.Microsecond, true},
		{d - time.Millisecond, true},
		{d + TimingTolerance(), true},
		{d - time.Millisecond - time.Microsecond, false},
		{d * 9 / 10, false},
	} {
		withSamples(t) // no lateness
		r := &recordingTB{name: "T/ConnectionTLSInspectDelay"}
		if got := checkWindow(r, time.Now(), tc.elapsed, lo, hi, "closed"); got != tc.ok || (len(r.errors) == 0) != tc.ok {
			t.Errorf("checkWindow(%v) in [%v, %v] = %v, errors %q; want %v", tc.elapsed, lo, hi, got, r.errors, tc.ok)
		}
	}
}

// TestLateMissWithinSuiteLateness: a miss by no more than the control
// timer's lateness goes to the handler and fails nothing; a larger miss,
// or any miss without a handler, fails with both figures.
func TestLateMissWithinSuiteLateness(t *testing.T) {
	start := time.Now().Add(-2 * time.Second)
	d := time.Second
	lo, hi := timerWindow(d)
	// The control timer due 1.2s into the window fired 400ms late.
	withSamples(t, lateSample{due: start.Add(1200 * time.Millisecond), late: 400 * time.Millisecond})
	var got []LateMiss
	withHandler(t, func(m LateMiss) bool { got = append(got, m); return true })

	r := &recordingTB{name: "T/ConnectionClientTimeout/idle"}
	checkWindow(r, start, hi+300*time.Millisecond, lo, hi, "closed")
	if len(r.errors) != 0 || len(got) != 1 || got[0].Over != 300*time.Millisecond || got[0].SuiteLateness != 400*time.Millisecond {
		t.Errorf("a miss of 300ms with the suite 400ms late: errors %q, misses %v; want one LateMiss (300ms, 400ms) and no error", r.errors, got)
	}

	r = &recordingTB{name: "T/ConnectionClientTimeout/idle"}
	checkWindow(r, start, hi+500*time.Millisecond, lo, hi, "closed")
	if len(r.errors) != 1 || len(got) != 1 {
		t.Errorf("a miss of 500ms with the suite 400ms late: errors %q, misses %v; want a failure", r.errors, got)
	}

	SetLateMissHandler(nil)
	r = &recordingTB{name: "T/ConnectionClientTimeout/idle"}
	checkWindow(r, start, hi+300*time.Millisecond, lo, hi, "closed")
	if len(r.errors) != 1 {
		t.Errorf("a miss without a handler (upstream's runner): errors %q; want a failure", r.errors)
	}
}

// TestEarlyMissWithinSuiteLatenessAtStart: an event that looks early by
// no more than the suite's lateness as the window's start was recorded
// (a start recorded late) goes to the handler; by more, it fails.
func TestEarlyMissWithinSuiteLatenessAtStart(t *testing.T) {
	start := time.Now().Add(-2 * time.Second)
	lo, hi := timerWindow(time.Second)
	withSamples(t, lateSample{due: start.Add(-100 * time.Millisecond), late: 200 * time.Millisecond})
	var got []LateMiss
	withHandler(t, func(m LateMiss) bool { got = append(got, m); return true })
	r := &recordingTB{name: "T/HTTPRouteRetryBackendTimeoutCancels"}
	checkWindow(r, start, lo-150*time.Millisecond, lo, hi, "cancelled")
	if len(r.errors) != 0 || len(got) != 1 || !got[0].Early {
		t.Errorf("150ms early with the suite 200ms late at the start: errors %q, misses %v; want one early LateMiss", r.errors, got)
	}
	checkWindow(r, start, lo-300*time.Millisecond, lo, hi, "cancelled")
	if len(r.errors) != 1 {
		t.Errorf("300ms early with the suite 200ms late at the start: errors %q; want a failure", r.errors)
	}
}

// TestLatenessMeterSeesAStarvedTimer: the control timer's lateness
// covers only firings due in the span asked about.
func TestLatenessMeterSeesAStarvedTimer(t *testing.T) {
	base := time.Now().Add(-time.Minute)
	withSamples(t,
		lateSample{due: base, late: 900 * time.Millisecond},
		lateSample{due: base.Add(2 * time.Second), late: 30 * time.Millisecond},
	)
	if got := meter.lateness(base.Add(time.Second), base.Add(3*time.Second)); got != 30*time.Millisecond {
		t.Errorf("lateness after the starved firing = %v, want 30ms", got)
	}
	if got := meter.lateness(base.Add(-time.Second), base.Add(3*time.Second)); got != 900*time.Millisecond {
		t.Errorf("lateness over both = %v, want 900ms", got)
	}
}

// TestScheduleKeepsWindowsAndChangesApart: while one test holds a
// window, another's configuration step waits, and the window's holder
// never waits for it.
func TestScheduleKeepsWindowsAndChangesApart(t *testing.T) {
	s := newSchedule()
	s.on = true
	s.tests["a"], s.tests["b"] = noSlot, noSlot
	s.move("a", windowSlot)
	s.move("b", noSlot)
	stepped := make(chan struct{})
	go func() {
		s.move("b", configSlot)
		close(stepped)
	}()
	deadline := time.Now().Add(5 * time.Second)
	for {
		s.mu.Lock()
		waiting := s.waiting[configSlot]
		s.mu.Unlock()
		if waiting == 1 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond) // polling until b waits
	}
	select {
	case <-stepped:
		t.Fatal("a configuration step began while a window was open")
	default:
	}
	s.move("a", noSlot)
	<-stepped
	var wg sync.WaitGroup
	wg.Go(func() { s.move("a", windowSlot) })
	s.mu.Lock()
	held := s.held
	s.mu.Unlock()
	if held[windowSlot] != 0 || held[configSlot] != 1 {
		t.Errorf("held %v while b's step runs; want only the step", held)
	}
	s.move("b", noSlot)
	wg.Wait()
}

// TestLatenessMeterRunsWhileHeld: held, the control timer fires and
// records its firings; let go, it stops.
func TestLatenessMeterRunsWhileHeld(t *testing.T) {
	count := func() int {
		meter.mu.Lock()
		defer meter.mu.Unlock()
		return len(meter.samples)
	}
	before := count()
	release := meter.hold()
	deadline := time.Now().Add(10 * time.Second)
	for count() < min(before+3, latenessKept) && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond) // polling the meter's firings
	}
	release()
	if got := count(); got < min(before+3, latenessKept) {
		t.Fatalf("the meter recorded %d firings in 10s, want at least 3", got-before)
	}
	meter.mu.Lock()
	holders := meter.holders
	meter.mu.Unlock()
	if holders != 0 {
		t.Errorf("holders = %d after release, want 0", holders)
	}
}
