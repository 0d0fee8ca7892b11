package runner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/gateway-api/conformance/utils/suite"
	"sigs.k8s.io/gateway-api/conformance/utils/tlog"

	gctests "github.com/gatewitness/gatewitness/conformance/tests"
	"github.com/gatewitness/gatewitness/contract/observe"
	"github.com/gatewitness/gatewitness/reports"
)

// The run phase: both suites' tests, then the reruns.

// runTests runs both suites' tests on t (runSides), and the reruns after
// them, timing the serial and the parallel tests.
func runTests(t *testing.T, opts *Options, p *runPlan, tgt *target, h *testHook, clock *phaseClock) error {
	if err := runSides(t, opts, p.running, tgt.restoreClient, h.rec); err != nil {
		return err
	}
	if tgt.restoreClient != nil {
		// See wrapTests: tests marked Parallel start after this function
		// returns, and must find the in-process client in place.
		for _, s := range p.running {
			s.suite.Client = tgt.restoreClient
		}
	}
	clock.end("serial tests")
	if rr := h.reruns; rr != nil {
		restore := func(s *suite.ConformanceTestSuite) {
			if tgt.restoreClient != nil {
				s.Client = tgt.restoreClient
			}
		}
		t.Run(observe.RerunGroup, func(t *testing.T) { rr.drive(t, p.running, restore, h.rec) })
	}
	// Cleanups run last registered first, once every subtest is over:
	// this one first, as the parallel tests end.
	t.Cleanup(func() { clock.end("parallel tests") })
	return nil
}

// runSides runs each side's suite on t. The suites' serial tests run side
// by side: upstream's one after another, as upstream's runner runs them,
// and next to them gatewitness's one after another. A suite's tests are
// serial for what they do to each other, or for their own load: upstream's
// share the base Gateways and wait on one another's clean-up; gatewitness's
// serial tests (the retry-budget load tests) are serial so that their load
// does not delay the timers of gatewitness's parallel tests, and run on
// Gateways of their own. Neither side shares a Gateway listener, a host
// name or a backend with the other's serial tests, so the two serial
// phases overlap and the run takes the longer of them instead of both.
// Every test marked Parallel, of either side, starts when both are done,
// as each suite's Run leaves it.
//
// testing allows t.Run from several goroutines at once, but a subtest's
// t.Parallel adds it to t's list of parallel subtests without a lock. So
// the sides after the first run in goroutines one at a time, each with its
// parallel tests first, and the next side starts only once the last has
// passed them (its first serial test has started, or its Run returned):
// from then on only one goroutine's subtests call t.Parallel.
//
// With FailFast or DisableParallelTests the sides run one after the
// other, as one suite would run them: a failure stops the run before the
// next side starts, and nothing runs beside anything else.
func runSides(t *testing.T, opts *Options, running []*side, restore client.Client, rec *recorder) error {
	if opts.FailFast || opts.DisableParallelTests {
		for _, s := range running {
			if opts.FailFast && t.Failed() {
				break
			}
			if err := s.suite.Run(t, wrapTests(s, restore, rec, nil)); err != nil {
				return fmt.Errorf("runner: %w", err)
			}
		}
		return nil
	}
	errs := make([]error, len(running))
	var wg sync.WaitGroup
	for i, s := range running[1:] {
		passed := make(chan struct{})
		var once sync.Once
		pass := func() { once.Do(func() { close(passed) }) }
		tests := parallelFirst(wrapTests(s, restore, rec, pass))
		wg.Go(func() {
			defer pass()
			if err := s.suite.Run(t, tests); err != nil {
				errs[i+1] = fmt.Errorf("runner: %w", err)
			}
		})
		<-passed
	}
	if err := running[0].suite.Run(t, wrapTests(running[0], restore, rec, nil)); err != nil {
		errs[0] = fmt.Errorf("runner: %w", err)
	}
	wg.Wait()
	return errors.Join(errs...)
}

// parallelFirst puts the tests marked Parallel first, each group in the
// suite's order.
func parallelFirst(tests []suite.ConformanceTest) []suite.ConformanceTest {
	slices.SortStableFunc(tests, func(a, b suite.ConformanceTest) int {
		switch {
		case a.Parallel == b.Parallel:
			return 0
		case a.Parallel:
			return -1
		}
		return 1
	})
	return tests
}

// wrapTests returns copies of a side's tests that mark when they start
// and end, record what they apply (for the state at a failure) and, on the
// in-process target, put the in-process client back before they start.
//
// The upstream suite gives each test a client built from its RestConfig
// (for a per-test user agent). The in-process cluster's REST API serves
// only pod logs, so that client cannot read or write objects. A copy
// therefore applies the test's manifests itself (the suite would do it
// with that client) after setting the suite's client back. A test marked
// Parallel does not set it: it runs after Run has set it back once and
// for all, and setting it from there would race with other parallel tests
// reading it. serialStarts, if not nil, is called as each serial test
// starts (see runSides).
func wrapTests(s *side, restore client.Client, rec *recorder, serialStarts func()) []suite.ConformanceTest {
	out := make([]suite.ConformanceTest, len(s.tests))
	upstream := s.source == reports.Upstream
	for i, orig := range s.tests {
		w := orig
		w.Manifests = nil
		w.Test = func(t *testing.T, s *suite.ConformanceTestSuite) {
			serial := !(orig.Parallel && !s.DisableParallelTests)
			if serial && serialStarts != nil {
				serialStarts()
			}
			// What the test applies: its manifests' objects, and, for a
			// serial test, what it creates through the suite's client
			// (which a serial test has to itself; the parallel ones share
			// it, so theirs are their manifests').
			applied := &appliedRecorder{}
			base := s.Client
			if restore != nil {
				base = restore
			}
			if serial {
				s.Client = recordingClient{Client: base, applied: applied}
				defer func() { s.Client = base }()
			}
			// A configuration step until the test opens its timing
			// windows (tests.SetWindowSchedule), and again for the
			// clean-up, which runs after t.Cleanup(EndWindows).
			gctests.ConfigStep(t)
			runTimed(t, orig, rec, func() {
				for _, m := range orig.Manifests {
					refs, err := manifestObjects(s.ManifestFS, m)
					if err != nil {
						tlog.Logf(t, "the state at a failure will lack %s's objects: %v", m, err)
					}
					applied.add(refs...)
					tlog.Logf(t, "Applying %s", m)
					s.Applier.MustApplyWithCleanup(t, s.Client, s.TimeoutConfig, m, s.CleanupTestResources)
				}
				if upstream {
					// The suite cannot see which requests only its
					// manifests answer: no step while it reads status.
					gctests.ConfigApplied(t)
				}
				t.Cleanup(func() { gctests.EndWindows(t) })
				orig.Test(t, s)
			}, func() ([]reports.ObjectState, error) { return snapshot(context.Background(), base, applied.list()) })
		}
		out[i] = w
	}
	return out
}

// runTimed runs the body of the test ct on t between its start and its
// end: the start once it may change configuration (its turn of the window
// schedule), the end when its function and its subtests are over, before
// its clean-ups (the first of which may wait for other tests' timing
// windows to close). A failed test's state is read with state when the
// test and its subtests are over (parallel subtests end after the body
// returns), before its clean-ups delete what it applied.
func runTimed(t *testing.T, ct suite.ConformanceTest, rec *recorder, body func(), state func() ([]reports.ObjectState, error)) {
	rec.start(ct.ShortName)
	// Registered last, from defers (which run on t.FailNow too), they are
	// the first clean-ups to run: after the subtests, before the others.
	defer t.Cleanup(func() { rec.end(ct.ShortName) })
	defer t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		objects, err := state()
		if err != nil {
			tlog.Logf(t, "%v", err)
		}
		rec.setState(ct.ShortName, objects)
	})
	body()
}

// testHook is the suites' Hook: it records a test's result as its subtest
// ends (its last clean-up). reruns, when not nil, holds the tests whose
// result waits for a rerun.
type testHook struct {
	rec    *recorder
	reruns *reruns
}

func (h *testHook) hook(t *testing.T, ct suite.ConformanceTest, _ *suite.ConformanceTestSuite) {
	r := h.rec
	r.mu.Lock()
	p, ok := r.planned[ct.ShortName]
	r.mu.Unlock()
	if !ok {
		p = plannedTest{test: ct}
	}
	tr := r.testResult(p, t.Failed(), t.Skipped(), r.selected)
	defer h.reruns.ended()
	if tr.Result == reports.Pass && len(h.reruns.missed(ct.ShortName)) > 0 {
		// Passed but for windows missed by the suite's own lateness:
		// the rerun decides (reruns.drive).
		r.record(tr, false)
		return
	}
	r.record(tr, p.runs)
}
