package runner

import (
	"fmt"
	"testing"

	"sigs.k8s.io/gateway-api/conformance/utils/suite"
)

// The start phase: the header, the record begun, the base resources set
// up once for both suites.

// startRun prints the header, waits on a cluster for what a previous run
// left being deleted, begins the record (the incomplete record, the
// watch for an interruption, and, in a clean-up of t that runs after every
// test and the suites' own clean-ups, the record phase), and sets the base
// resources up. The Result it returns is filled in by the record phase.
func startRun(t *testing.T, opts *Options, p *runPlan, tgt *target, rec *recorder, clock *phaseClock) (*Result, error) {
	if opts.Progress != nil {
		writeHeader(opts.Progress, p.info, p.sides, opts.Warnings, p.notes)
	}
	if !tgt.info.InProcess {
		// The namespaces a previous run left being deleted must be gone
		// before the set-up applies them again; the wait reports its
		// progress after the header.
		if err := waitForPreviousRun(t.Context(), &p.co, opts.Progress); err != nil {
			return nil, fmt.Errorf("runner: %w", err)
		}
	}
	rec.begin(p.sides)
	rr := newRunRecord(opts, rec, p)
	res := rr.res
	// Registered before Setup and Run register theirs, so it runs after
	// them: after every test, after the suites mark the run over, and
	// after the base resources are deleted.
	t.Cleanup(func() {
		clock.end("clean-up")
		rec.stop()
		rr.finish(clock.list())
		clock.end("reports")
		if res.Signal == nil {
			res.Phases = clock.list()
		}
		if res.Err != nil {
			t.Errorf("runner: %v", res.Err)
		}
	})
	watchInterrupts(opts, rr, p, tgt, clock)
	if p.reruns != nil {
		setLateMissHandler(p.reruns.take)
		t.Cleanup(func() { setLateMissHandler(nil) })
	}
	clock.end("start")
	setUp(t, p)
	clock.end("set-up")
	return res, nil
}

// setUp runs upstream's Setup once for both suites: on the first suite
// that runs, with the features of both (Setup applies the Gateway and
// mesh base resources if either needs them), then copies its results to
// the other.
func setUp(t *testing.T, p *runPlan) {
	first := p.running[0].suite
	claimed := first.SupportedFeatures
	for _, s := range p.running[1:] {
		first.SupportedFeatures = claimed.Union(s.suite.SupportedFeatures)
	}
	var all []suite.ConformanceTest
	for _, s := range p.sides {
		all = append(all, s.tests...)
	}
	first.Setup(t, all)
	first.SupportedFeatures = claimed
	for _, s := range p.running[1:] {
		s.suite.ControllerName = first.ControllerName
		s.suite.Applier = first.Applier
	}
}
