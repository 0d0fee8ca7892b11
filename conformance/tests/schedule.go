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
// (EndWindows) it holds a window. A step ends on evidence from the data
// plane, not when its API calls return (evidence.go): its routes served
// by their backend on servedInARow connections in a row, and, at its
// clean-up, its routes deleted first and no longer served. A test of
// upstream's, whose requests the suite cannot see, is a step while its
// manifests are applied and deleted, and for each write it makes
// (ConfigWrites), not while it reads status (ConfigApplied), so a slow
// failing status test holds no window back. A holder never waits for
// another test, so however few tests run at once (-test.parallel) no one
// waits forever.

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
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
	// ends are what each test's configuration steps wait for before
	// they end (retire, evidence.go): early at the end of its windows,
	// before the objects of its manifests are deleted, and final once
	// every deletion is done.
	ends map[string]*stepEnds
}

// stepEnds are the evidence a test's clean-up waits for.
type stepEnds struct{ early, final []func() }

// atStepEnd registers early and final for the test named name (see
// schedule.ends).
func (s *schedule) atStepEnd(name string, early, final func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.ends[name]
	if e == nil {
		e = &stepEnds{}
		s.ends[name] = e
	}
	e.early = append(e.early, early)
	e.final = append(e.final, final)
}

// takeEnds returns, and forgets, the early (or final) functions of name.
func (s *schedule) takeEnds(name string, final bool) []func() {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.ends[name]
	if e == nil {
		return nil
	}
	var out []func()
	if final {
		out, e.final = e.final, nil
		delete(s.ends, name)
	} else {
		out, e.early = e.early, nil
	}
	return out
}

var sched = newSchedule()

func newSchedule() *schedule {
	s := &schedule{turn: configSlot, tests: map[string]slot{}, ends: map[string]*stepEnds{}}
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
	stepStarts.Store(name, time.Now())
	t.Cleanup(func() {
		defer func() {
			sched.move(name, noSlot)
			sched.mu.Lock()
			delete(sched.tests, name)
			sched.mu.Unlock()
			stepStarts.Delete(name)
		}()
		// Every object is deleted: wait for the evidence that the data
		// plane no longer serves them before windows may open.
		sched.move(name, configSlot)
		for _, f := range sched.takeEnds(name, true) {
			f()
		}
	})
}

// ConfigApplied says that the manifests of the conformance test t are
// applied and that t gives no evidence of their being served (a test of
// upstream's, whose requests the suite cannot see): from here until its
// clean-up t is no configuration step, so a test that only reads status,
// however long it waits for one, holds no timing window back. Its writes
// through a client of ConfigWrites are configuration steps of their own.
// The runner calls it after applying t's manifests.
func ConfigApplied(t *testing.T) {
	if name, ok := sched.holder(t); ok {
		sched.move(name, noSlot)
	}
}

// EndWindows ends the timing windows of t, if it opened any: its clean-up
// that follows is a configuration step. The runner registers it as a
// clean-up of t after applying t's manifests, so that it runs after t and
// its subtests, before the manifests' objects are deleted.
func EndWindows(t *testing.T) {
	name, ok := sched.holder(t)
	if !ok {
		return
	}
	sched.move(name, configSlot)
	early := sched.takeEnds(name, false)
	if len(early) > 0 {
		stepStarts.Store(name, time.Now())
	}
	for _, f := range early {
		f()
	}
}

// ConfigWrites returns c with every write (Create, Update, Patch, Delete,
// DeleteAllOf) made a configuration step: it waits until no timing window
// is open and holds windows off until the API call returns. A test that
// is a configuration step already passes at once. The runner gives the
// suite such a client, for the tests that are no configuration step while
// they read status (ConfigApplied). A test holding a timing window must
// not write through it: gatewitness's tests write only in their set-up
// and clean-up.
func ConfigWrites(c client.Client) client.Client { return configWriter{c} }

type configWriter struct{ client.Client }

// write holds a configuration step for one API call.
func (s *schedule) write() func() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.on {
		return func() {}
	}
	for s.held[windowSlot] > 0 {
		s.changed.Wait()
	}
	s.held[configSlot]++
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.release(configSlot)
	}
}

func (w configWriter) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	defer sched.write()()
	return w.Client.Create(ctx, obj, opts...)
}

func (w configWriter) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	defer sched.write()()
	return w.Client.Update(ctx, obj, opts...)
}

func (w configWriter) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	defer sched.write()()
	return w.Client.Patch(ctx, obj, patch, opts...)
}

func (w configWriter) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	defer sched.write()()
	return w.Client.Delete(ctx, obj, opts...)
}

func (w configWriter) DeleteAllOf(ctx context.Context, obj client.Object, opts ...client.DeleteAllOfOption) error {
	defer sched.write()()
	return w.Client.DeleteAllOf(ctx, obj, opts...)
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
