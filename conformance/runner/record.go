package runner

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"sigs.k8s.io/gateway-api/conformance/utils/suite"

	"github.com/gatewitness/gatewitness/reports"
)

// The record phase: the run's record built from what the recorder holds,
// as the run goes (the incomplete record), when it ends, or when it is
// interrupted, and the reports written from it.

// runRecord builds and writes the record of one run. Exactly one end is
// recorded: the run's own (complete) or an interruption, whichever comes
// first; the incomplete record is written until then.
type runRecord struct {
	opts    *Options
	rec     *recorder
	plan    *runPlan
	started time.Time
	journal *journal

	endOnce sync.Once
	ended   chan struct{} // closed once the end is recorded
	res     *Result
}

func newRunRecord(opts *Options, rec *recorder, p *runPlan) *runRecord {
	rr := &runRecord{opts: opts, rec: rec, plan: p, started: time.Now(), ended: make(chan struct{}), res: &Result{}}
	if opts.ReportDir != "" {
		rr.journal = startJournal(filepath.Join(opts.ReportDir, reports.IncompleteRunFileName), opts.Progress,
			func() *reports.Run { return rr.partial(reports.RunIncomplete, nil, time.Now()) })
		rec.changed = rr.journal.poke
	}
	return rr
}

// end records the run's end with record, unless an end was recorded
// already; it returns once the end is recorded, whichever it was.
func (rr *runRecord) end(record func(res *Result)) *Result {
	rr.endOnce.Do(func() {
		rr.journal.stop()
		record(rr.res)
		close(rr.ended)
	})
	<-rr.ended
	return rr.res
}

// finish records the end of a run that ran to its end.
func (rr *runRecord) finish(phases []reports.Phase) *Result {
	return rr.end(func(res *Result) {
		res.Run, res.Err = rr.complete(phases)
		if res.Err == nil {
			res.Files, res.Err = rr.write(res.Run)
		}
	})
}

// interrupt records the end of a run that sig, named signal, interrupted,
// then stops the target with stop.
func (rr *runRecord) interrupt(sig os.Signal, signal string, phases []reports.Phase, stop func() error) *Result {
	return rr.end(func(res *Result) {
		at := rr.rec.freeze()
		run := rr.partial(reports.RunInterrupted, &reports.Interruption{At: at, Signal: signal}, at)
		run.Phases = phases
		res.Run, res.Signal, res.Phases = run, sig, phases
		res.Files, res.Err = rr.write(run)
		if err := stop(); err != nil {
			res.Err = errors.Join(res.Err, err)
		}
	})
}

// complete builds the record of a run that ran to its end.
func (rr *runRecord) complete(phases []reports.Phase) (*reports.Run, error) {
	run := rr.plan.info
	run.Started = rr.started
	run.Duration = time.Since(rr.started)
	run.Phases = phases
	for _, s := range rr.plan.sides {
		if !s.run {
			continue
		}
		for _, ct := range s.tests {
			if tr, ok := rr.rec.result(ct.ShortName); ok {
				run.Tests = append(run.Tests, tr)
			}
		}
		report, err := s.suite.Report()
		if err != nil {
			return &run, fmt.Errorf("building the %s report: %w", s.source, err)
		}
		switch s.source {
		case reports.Upstream:
			run.Conformance = report
		case reports.Gatewitness:
			byName := map[string]suite.ConformanceTest{}
			for _, ct := range s.tests {
				byName[ct.ShortName] = ct
			}
			settleProfiles(report.ProfileReports, run.Tests, byName)
			reports.MarkNotClaimed(report.ProfileReports)
			run.GatewitnessProfiles = report.ProfileReports
		}
		if run.Environment.GatewayAPIVersion == "" {
			run.Environment.GatewayAPIVersion = report.GatewayAPIVersion
			run.Environment.GatewayAPIChannel = report.GatewayAPIChannel
		}
	}
	return &run, nil
}

// partial builds the record of a run that has not ended (status
// RunIncomplete) or was stopped (RunInterrupted, by in), as of now: the
// tests with a result keep it, the tests that were to run and have not
// finished are reports.Interrupted, and the tests the run does not run
// have the result they would have had. It has no profile results: they
// would count tests that never ran to their end.
func (rr *runRecord) partial(status reports.RunStatus, in *reports.Interruption, now time.Time) *reports.Run {
	run := rr.plan.info
	run.Status, run.Interruption = status, in
	run.Started = rr.started
	run.Duration = now.Sub(rr.started)
	stopped := "the run was interrupted"
	if in != nil {
		stopped += " by " + in.Signal
	}
	for _, s := range rr.plan.sides {
		if !s.run {
			continue
		}
		for _, p := range s.planned {
			tr, done, started := rr.rec.progressOf(p.test.ShortName)
			switch {
			case done:
			case !p.runs:
				tr = rr.rec.testResult(p, false, true, rr.plan.selected)
			default:
				tr = rr.rec.testResult(p, false, false, rr.plan.selected)
				tr.Result, tr.Observations, tr.DroppedObservations = reports.Interrupted, nil, 0
				tr.Message = notFinished(status, stopped, started, now)
				if !started.IsZero() {
					tr.Started, tr.Duration = started, now.Sub(started)
				}
			}
			run.Tests = append(run.Tests, tr)
		}
	}
	return &run
}

// notFinished says why a test that was to run has no result.
func notFinished(status reports.RunStatus, stopped string, started, now time.Time) string {
	switch {
	case status == reports.RunIncomplete && started.IsZero():
		return "not started when this record was written; the run had not finished"
	case status == reports.RunIncomplete:
		return fmt.Sprintf("running (for %s) when this record was written; the run had not finished", now.Sub(started).Round(time.Millisecond))
	case started.IsZero():
		return "not started: " + stopped + " first"
	}
	return fmt.Sprintf("cut short after %s: %s", now.Sub(started).Round(time.Millisecond), stopped)
}

// write writes the reports of run: the upstream report at
// ReportOutputPath (for a complete run only) and every report in
// ReportDir, whose incomplete record then goes.
func (rr *runRecord) write(run *reports.Run) ([]string, error) {
	o := rr.opts
	var files []string
	var errs []error
	if o.ReportOutputPath != "" && run.Conformance != nil && run.Status == reports.RunComplete {
		err := reports.WriteFile(o.ReportOutputPath, func(w io.Writer) error { return reports.WriteConformanceYAML(w, run.Conformance) })
		if err != nil {
			errs = append(errs, err)
		} else {
			files = append(files, o.ReportOutputPath)
		}
	}
	if o.ReportDir != "" {
		written, err := reports.WriteAll(o.ReportDir, run)
		files = append(files, written...)
		if err != nil {
			errs = append(errs, err)
		} else if err := os.Remove(filepath.Join(o.ReportDir, reports.IncompleteRunFileName)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("removing the incomplete record: %w", err))
		}
	}
	return files, errors.Join(errs...)
}

// journalEvery is the least time between two writes of the incomplete
// record.
const journalEvery = 200 * time.Millisecond

// journal writes the incomplete record of a run that is going to path:
// once at the start, then, at most every journalEvery, after each change
// (poke), until stop.
type journal struct {
	path  string
	warn  io.Writer
	build func() *reports.Run

	changes chan struct{}
	quit    chan struct{}
	done    chan struct{}
}

func startJournal(path string, warn io.Writer, build func() *reports.Run) *journal {
	j := &journal{path: path, warn: warn, build: build, changes: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{})}
	go j.loop()
	j.poke()
	return j
}

// poke says the record changed.
func (j *journal) poke() {
	select {
	case j.changes <- struct{}{}:
	default:
	}
}

func (j *journal) loop() {
	defer close(j.done)
	warned := false
	if err := os.MkdirAll(filepath.Dir(j.path), 0o755); err != nil && j.warn != nil {
		warned = true
		fmt.Fprintf(j.warn, "warning: the incomplete record: %v\n", err)
	}
	for {
		select {
		case <-j.quit:
			return
		case <-j.changes:
		}
		err := reports.WriteFile(j.path, func(w io.Writer) error { return reports.WriteRunJSON(w, j.build()) })
		if err != nil && !warned && j.warn != nil {
			warned = true
			fmt.Fprintf(j.warn, "warning: the incomplete record: %v\n", err)
		}
		select {
		case <-j.quit:
			return
		case <-time.After(journalEvery):
		}
	}
}

// stop ends the writes and waits for the one under way; nil-safe.
func (j *journal) stop() {
	if j == nil {
		return
	}
	close(j.quit)
	<-j.done
}

// checkReportPaths makes sure, before the run, that its reports can be
// written where the options say: ReportDir is a folder (made if missing)
// that takes a file, ReportOutputPath is not a folder and its folder takes
// a file. A run that could not write its reports is lost.
func checkReportPaths(o *Options) error {
	if o.ReportDir != "" {
		if fi, err := os.Stat(o.ReportDir); err == nil && !fi.IsDir() {
			return fmt.Errorf("reportDir (--report-dir): %s is a file; want a folder to write the reports into (made if missing)", o.ReportDir)
		}
		if err := probeFolder(o.ReportDir); err != nil {
			return fmt.Errorf("reportDir (--report-dir): %w", err)
		}
	}
	if o.ReportOutputPath != "" {
		if fi, err := os.Stat(o.ReportOutputPath); err == nil && fi.IsDir() {
			return fmt.Errorf("reportOutputPath (--report-output): %s is a folder; want the path of the report file", o.ReportOutputPath)
		}
		if err := probeFolder(filepath.Dir(o.ReportOutputPath)); err != nil {
			return fmt.Errorf("reportOutputPath (--report-output): %w", err)
		}
	}
	return nil
}

// probeFolder makes dir if needed and writes and removes a file in it.
func probeFolder(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("cannot make the folder: %w", err)
	}
	f, err := os.CreateTemp(dir, ".gatewitness-probe-")
	if err != nil {
		return fmt.Errorf("cannot write into %s: %w", dir, err)
	}
	f.Close()
	return os.Remove(f.Name())
}
