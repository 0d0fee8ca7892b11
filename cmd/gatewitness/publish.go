package main

import (
	"flag"
	"fmt"
	"io"
	"path/filepath"

	"github.com/gatewitness/gatewitness/reports"
	"github.com/gatewitness/gatewitness/reports/site"
)

const publishUsage = `Usage: gatewitness publish --history DIR --out SITE [--add RUN]... [flags]

Builds the report site from a history of runs. The history DIR holds a
folder per run, named by its start time and series, with its run.json; a
series is an implementation (organization and project) in one mode against
one target (in-process, or a cluster's kubeconfig context and GatewayClass).
--add copies a run into the history first (a run.json, or a report folder
holding one; given again for more runs); a run already there is kept as it
is. --keep N then removes all but each series' newest N runs.

The site, written into SITE (other files there are left alone), has:
  index.html                  the implementations and targets, a matrix per
                              profile in the shape of the Gateway API
                              implementations table, what changed since the
                              previous night, and the recent runs
  runs/<run>/index.html       a run: profiles, changes, every test with its
                              history strip; run.json beside it
  runs/<run>/tests/<T>.html   a test: result, failure, observations (retry
                              ledgers as tables, timings as charts), links to
                              the GEPs and docs/semantics, its history
  series/<series>.html        every test's strip of the last nights, first
                              failed, last passed, flaky
  badges/<series>.json        a shields.io endpoint badge
  calibration.html            with --calibration: each test's verdict on
                              real HAProxy and nginx per variant, as their
                              documentation expects it (docs/calibration.md)

--alerts FILE writes the failed tests of the runs added (a JSON array: the
series, the test, whether it broke tonight or was failing already, since
when, the failure's first line, the test's page), for a nightly that opens
an issue per failed test and fails the job. An interrupted or incomplete
run raises no alert; a folder of the history whose run cannot be read is
left out of the site, named on it, and in the alerts as kind
"history-problem". Publishes of one history take turns (a lock on it).
A report folder whose newest record is run.incomplete.json (a run killed
before its end) adds that record, shown as incomplete.

Flags:
`

// runList collects --add values.
type runList []string

func (l *runList) String() string     { return fmt.Sprint(*l) }
func (l *runList) Set(v string) error { *l = append(*l, v); return nil }

// publishCommand is `gatewitness publish`.
func publishCommand(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gatewitness publish", flag.ContinueOnError)
	history := fs.String("history", "", "the history folder: one folder per run, each with its run.json (required)")
	out := fs.String("out", "", "the folder to write the site to (required)")
	var add runList
	fs.Var(&add, "add", "a run to add to the history first: a run.json or a report folder holding one (repeatable)")
	keep := fs.Int("keep", 0, "after adding, keep only each series' newest N runs in the history (0 keeps all)")
	nights := fs.Int("nights", site.DefaultNights, fmt.Sprintf("nights the history strips show, and runs per series that get pages (1 to %d)", site.MaxNights))
	title := fs.String("title", site.DefaultTitle, "the site's title")
	sourceURL := fs.String("source-url", site.DefaultSourceURL, "where gatewitness's files are browsed, for the links to docs/semantics")
	calibration := fs.String("calibration", "", "a calibration matrix (make calibrate writes out/calibration/matrix.json) to show as calibration.html")
	alerts := fs.String("alerts", "", "write the failed tests of the runs added with --add (without --add: of each series' newest run) to this file, as JSON, for a nightly to alert on (an empty array when none failed)")
	extra, code, done := parseFlags(fs, args, publishUsage, stdout, stderr)
	if done {
		return code
	}
	var missing []string
	if *history == "" {
		missing = append(missing, "--history DIR")
	}
	if *out == "" {
		missing = append(missing, "--out SITE")
	}
	switch {
	case len(missing) > 0:
		fmt.Fprintf(stderr, "gatewitness publish: %v required (gatewitness publish -help)\n", missing)
		return 2
	case len(extra) > 0:
		fmt.Fprintf(stderr, "gatewitness publish: unexpected argument %q; runs are added with --add\n", extra[0])
		return 2
	case *nights == 0:
		fmt.Fprintf(stderr, "gatewitness publish: --nights 0: want 1 to %d\n", site.MaxNights)
		return 2
	case *keep < 0:
		fmt.Fprintf(stderr, "gatewitness publish: --keep %d: want 0 (keep every run) or more\n", *keep)
		return 2
	}
	opts := site.Options{Title: *title, Nights: *nights, SourceURL: *sourceURL}
	if *calibration != "" {
		c, err := site.ReadCalibration(*calibration)
		if err != nil {
			fmt.Fprintf(stderr, "gatewitness publish: --calibration: %v\n", err)
			return 1
		}
		opts.Calibration = c
	}
	if err := opts.Complete(); err != nil {
		fmt.Fprintf(stderr, "gatewitness publish: --%v\n", err)
		return 2
	}
	if site.Replaces(*out, *history) {
		fmt.Fprintf(stderr, "gatewitness publish: --history %s is where the site's own files go in --out %s; put the history in a folder of its own (e.g. SITE/history)\n", *history, *out)
		return 2
	}

	// One publish at a time on a history: another waits here.
	unlock, err := site.LockHistory(*history)
	if err != nil {
		fmt.Fprintf(stderr, "gatewitness publish: %v\n", err)
		return 1
	}
	defer unlock()
	var added []string
	for _, a := range add {
		path, err := runRecordPath(a)
		if err != nil {
			fmt.Fprintf(stderr, "gatewitness publish: --add %s: %v\n", a, err)
			return 1
		}
		id, err := site.AddRun(*history, path)
		if err != nil {
			fmt.Fprintf(stderr, "gatewitness publish: --add: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "history: %s\n", id)
		added = append(added, id)
	}
	if *keep > 0 {
		removed, err := site.Prune(*history, *keep)
		for _, id := range removed {
			fmt.Fprintf(stdout, "history: removed %s (more than %d runs in its series)\n", id, *keep)
		}
		if err != nil {
			fmt.Fprintf(stderr, "gatewitness publish: %v\n", err)
			return 1
		}
	}
	h, err := site.ReadHistory(*history)
	if err != nil {
		fmt.Fprintf(stderr, "gatewitness publish: %v\n", err)
		return 1
	}
	for _, p := range h.Problems {
		fmt.Fprintf(stderr, "gatewitness publish: warning: a history problem, left out of the site: %s\n", p)
	}
	if len(h.Entries) == 0 {
		fmt.Fprintf(stderr, "gatewitness publish: the history %s holds no run; add one with --add RUN\n", *history)
		return 1
	}
	n, err := site.Build(*out, h, opts)
	if err != nil {
		fmt.Fprintf(stderr, "gatewitness publish: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "site: %s (%d pages from %d runs)\n", filepath.Join(*out, "index.html"), n, len(h.Entries))
	if *alerts != "" {
		breakages, err := site.Breakages(h, added)
		if err == nil {
			err = reports.WriteFile(*alerts, func(w io.Writer) error { return site.WriteBreakages(w, breakages) })
		}
		if err != nil {
			fmt.Fprintf(stderr, "gatewitness publish: --alerts: %v\n", err)
			return 1
		}
		counts := fmt.Sprintf("%d failed tests", len(breakages)-len(h.Problems))
		if n := len(h.Problems); n > 0 {
			counts += fmt.Sprintf(", %d history problems", n)
		}
		fmt.Fprintf(stdout, "alerts: %s (%s)\n", *alerts, counts)
	}
	return 0
}
