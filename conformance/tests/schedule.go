package tests

// Timing windows free of churn. A data plane that applies configuration by
// reloading (HAProxy, nginx) restarts, or ends, the timers of connections
// held by its old workers; a route change by one test while another test's
// timing window is open then decides the other test's verdict. So, when
// the runner turns the schedule on, the steps that change configuration
// (a test's set-up, its whole run if it measures no window, its clean-up)
// and the measured windows of the timing tests exclude each other: windows
// open together, configuration steps run together, never both at once. A
// class that waits gets the next turn, so neither starves.
//
// A conformance test is a configuration step from the runner's
// ConfigStep (before its manifests are applied) until it calls measure,
// once its routes are served; from then until its clean-up begins
// (EndWindows) it holds a window. What a step sets in motion after its
// API calls return (a Service's endpoints following a deleted Pod, a data
// plane's reload) is not waited for: in-process it lands within
// milliseconds, within every tolerance. A holder never waits for another test,
// so however few tests run at once (-test.parallel) no one waits forever.

import (
	"strings"
	"sync"
	"testing"
)

type slot int

const (
	noSlot slot = iota
	configSlot
	windowSlot
)

// schedule is the lock the two classes share.
type schedule struct {
	mu      sync.Mutex
	changed *sync.Cond
	on      bool
	held    [3]int // holders per slot
	waiting [3]int
	turn    slot            // the class that goes first when both wait
	tests   map[string]slot // what each test (by its name) holds
}

var sched = newSchedule()

func newSchedule() *schedule {
	s := &schedule{turn: configSlot, tests: map[string]slot{}}
	s.changed = sync.NewCond(&s.mu)
	return s
}

// SetWindowSchedule turns the schedule of configuration steps and timing
// windows on or off (off by default: under upstream's runner, which does
// not call ConfigStep, windows are not held apart from other tests'
// changes). The runner turns it on for a run, before any test starts.
func SetWindowSchedule(on bool) {
	sched.mu.Lock()
	defer sched.mu.Unlock()
	sched.on = on
}

func other(c slot) slot {
	if c == configSlot {
		return windowSlot
	}
	return configSlot
}

// acquire waits until c may be held and holds it. s.mu is held.
func (s *schedule) acquire(c slot) {
	s.waiting[c]++
	for s.held[other(c)] > 0 || (s.waiting[other(c)] > 0 && s.turn != c) {
		s.changed.Wait()
	}
	s.waiting[c]--
	s.held[c]++
}

// release lets c go. s.mu is held.
func (s *schedule) release(c slot) {
	if c == noSlot {
		return
	}
	s.held[c]--
	if s.held[c] == 0 {
		s.turn = other(c)
	}
	s.changed.Broadcast()
}

// move makes the test named name hold c instead of what it holds.
func (s *schedule) move(name string, c slot) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tests[name] == c {
		return
	}
	s.release(s.tests[name])
	s.tests[name] = noSlot
	if c != noSlot {
		s.acquire(c)
	}
	s.tests[name] = c
}

// holder returns the name of the registered test t is, or is a subtest
// of, and whether there is one.
func (s *schedule) holder(t *testing.T) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for name := t.Name(); ; {
		if _, ok := s.tests[name]; ok {
			return name, true
		}
		i := strings.LastIndex(name, "/")
		if i < 0 {
			return "", false
		}
		name = name[:i]
	}
}

// ConfigStep makes the conformance test t a configuration step: it waits
// until no timing window is open and holds windows off until t calls
// measure or ends. The runner calls it before applying t's manifests;
// the step is over, at the latest, when t's last clean-up has run.
func ConfigStep(t *testing.T) {
	sched.mu.Lock()
	on := sched.on
	if on {
		sched.tests[t.Name()] = noSlot
	}
	sched.mu.Unlock()
	if !on {
		return
	}
	name := t.Name()
	sched.move(name, configSlot)
	t.Cleanup(func() {
		sched.move(name, noSlot)
		sched.mu.Lock()
		delete(sched.tests, name)
		sched.mu.Unlock()
	})
}

// EndWindows ends the timing windows of t, if it opened any: its clean-up
// that follows is a configuration step. The runner registers it as a
// clean-up of t after applying t's manifests, so that it runs after t and
// its subtests, before the manifests' objects are deleted.
func EndWindows(t *testing.T) {
	if name, ok := sched.holder(t); ok {
		sched.move(name, configSlot)
	}
}

// measure says that t's set-up is done (its routes are served) and its
// timing windows begin: it waits until no configuration step runs, then
// holds them off until t's clean-up. It also runs the suite's lateness
// meter until t ends. A test calls it once, on its own t (not a
// subtest's), before its first window.
//
// The clean-ups the test registered before (the objects its set-up
// created, such as a Gateway of its own) are configuration steps: measure
// registers the end of the windows after them, so that it runs before
// them.
func measure(t *testing.T) {
	t.Helper()
	t.Cleanup(meter.hold())
	name, ok := sched.holder(t)
	if !ok {
		return
	}
	sched.move(name, windowSlot)
	t.Cleanup(func() { EndWindows(t) })
}
