package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	confv1 "sigs.k8s.io/gateway-api/conformance/apis/v1"

	"github.com/gatewitness/gatewitness/conformance/runner"
	"github.com/gatewitness/gatewitness/reports"
	"github.com/gatewitness/gatewitness/reports/site"
)

const runUsage = `Usage: gatewitness run [flags]

Runs the conformance suite, upstream's tests and gatewitness's. The target is
chosen as Kubernetes tools choose it: --kubeconfig, else $KUBECONFIG (with
--context if given) selects a cluster, whose GatewayClass --gateway-class
names the implementation under test; --in-process, or none of them, runs
the embedded cluster and gatewitness's reference gateway, with its features
and profiles.

The run starts with a header (target, GatewayClass and controller, claimed
features, profiles, the number of tests), then prints "[n/N]" and the result
of each test as it finishes, and names the tests still running when nothing
has finished for 10s. A test that would run but count in no requested
profile stops the run before it starts.

With --report-dir it writes: the upstream ConformanceReport (upstream's
profiles and tests only) and its README.md under upstream/<major.minor>/
<implementation>/, ready to submit (check it with gatewitness verify-report);
gatewitness-report.yaml (gatewitness's profiles, from gatewitness's tests only);
junit.xml; summary.md and summary-short.md; html/, the run's pages; and
run.json, the run record every other file is written from (gatewitness report
writes them all again from it).

The flags are upstream's suite's, plus gatewitness's own. Lists are
comma-separated; an options file (--conformance-options-file) takes the
same options as YAML or JSON, and flags override it.

Flags:
`

// runCommand is `gatewitness run`.
func runCommand(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gatewitness run", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	build := runner.RegisterFlags(fs)
	dataPlane := fs.String("data-plane", "reference", "in-process: what serves the Gateways behind the reference controller: reference, or haproxy or nginx "+
		"(the real proxy on $PATH, claiming what its configuration expresses unless --supported-features says otherwise; docs/calibration.md)")
	verbose := fs.Bool("v", false, "print every test's log as it runs, not only a line per test")
	parallel := fs.Int("parallel", defaultParallel, "how many tests and subtests marked parallel may run at once (as go test -parallel); "+
		"the default is sized to the suite, not to the cores, since its tests mostly wait on timers and the network")
	// The flag package prints the help itself, when asked for it and
	// after a bad flag's error; it is kept until Parse says which, so that
	// help asked for goes to stdout (where it can be paged) and help after
	// an error to stderr.
	var help bytes.Buffer
	fs.Usage = func() {
		out := fs.Output()
		fs.SetOutput(&help)
		fmt.Fprint(&help, runUsage)
		fs.PrintDefaults()
		fs.SetOutput(out)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			stdout.Write(help.Bytes())
			return 0
		}
		// One line, not the whole help: the error and where to look.
		fmt.Fprintf(stderr, "gatewitness run: %v%s\n", err, flagHint(fs, err))
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "gatewitness run: unexpected argument %q; it takes flags only (gatewitness run -help)\n", fs.Arg(0))
		return 2
	}
	if *parallel < 1 || *parallel > maxParallel {
		fmt.Fprintf(stderr, "gatewitness run: flag --parallel: %d is out of range; want 1 to %d\n", *parallel, maxParallel)
		return 2
	}
	opts, err := build()
	if err != nil {
		fmt.Fprintf(stderr, "gatewitness run: %v\n", err)
		return 2
	}
	in, err := inProcessTarget(*dataPlane, &opts)
	if err != nil {
		fmt.Fprintf(stderr, "gatewitness run: %v\n", err)
		return 2
	}
	opts.Progress = stdout
	opts.CommandLine = append([]string{"gatewitness", "run"}, args...)
	return host(opts, in, *verbose, *parallel, stdout, stderr)
}

// defaultParallel is --parallel's default. testing's own default is the
// number of cores (GOMAXPROCS), which here queues the suite's parallel
// tests behind a couple of slots, though each spends nearly all its time
// waiting: for a timeout it provoked, a retry's backoff, a status to be
// written. An in-process run has 42 parallel tests (33 of
// gatewitness's, 9 of upstream's), and the timing tests' windows open
// together (tests/schedule.go), each test's parallel subtests at once: at
// 48, ConnectionTunnelTimeout's two WebSockets (the longest window) waited
// about a second for a slot in two of three runs, until other windows
// ended, and the run took that second longer; at 128 every subtest of the
// windows starts as they open. Earlier, beside a CPU hog, 256 took the
// parallel tests' phase no faster than 32 and had a timer late in two of
// ten runs, as 32 did; 16 was slower.
const defaultParallel = 128

// maxParallel bounds --parallel.
const maxParallel = 4096

// host runs the suite as the one test of a test binary (see testdeps.go),
// with its output captured for the reports, and prints a summary.
func host(opts runner.Options, in runner.InProcess, verbose bool, parallel int, stdout, stderr io.Writer) int {
	var forward io.Writer
	if verbose {
		forward = stdout
	}
	c, err := newCapture(forward)
	if err != nil {
		fmt.Fprintf(stderr, "gatewitness run: %v\n", err)
		return 1
	}
	opts.TestLog = c.Log

	// SIGINT (Ctrl-C, a CI system's cancel) and SIGTERM stop the run: the
	// runner records it as interrupted and calls back here, and the
	// command exits with 128 plus the signal's number.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	interrupted := make(chan *runner.Result, 1)
	opts.Interrupt = sigs
	opts.OnInterrupt = func(r *runner.Result) { interrupted <- r }

	var res *runner.Result
	var runErr error
	tests := []testing.InternalTest{{Name: "gatewitness", F: func(t *testing.T) {
		res, runErr = runner.RunInProcess(t, opts, in)
		if runErr != nil {
			t.Error(runErr)
		}
	}}}
	m := testing.MainStart(testDeps{}, tests, nil, nil, nil)
	if err := setTestingFlags(parallel); err != nil {
		fmt.Fprintf(stderr, "gatewitness run: %v\n", err)
		return 1
	}
	savedOut, savedErr := os.Stdout, os.Stderr
	os.Stdout = c.w
	start := time.Now()
	ran := make(chan int, 1)
	go func() { ran <- m.Run() }()
	var code int
	select {
	case code = <-ran:
	case r := <-interrupted:
		// The tests still running end with the process.
		os.Stdout, os.Stderr = savedOut, savedErr
		return hostInterrupted(opts, r, stdout, stderr, time.Since(start))
	}
	os.Stdout, os.Stderr = savedOut, savedErr
	if err := c.Close(); err != nil {
		fmt.Fprintf(stderr, "gatewitness run: %v\n", err)
	}

	if runErr != nil {
		fmt.Fprintf(stderr, "gatewitness run: %v\n", runErr)
		return 2
	}
	if res == nil || res.Run == nil {
		fmt.Fprintf(stderr, "gatewitness run: the suite did not start; its log:\n%s", c.Log("gatewitness"))
		return 1
	}
	if opts.ReportDir != "" && len(res.Run.Tests) > 0 {
		// The run's pages, beside the reports (gatewitness report writes
		// them again from run.json).
		index, err := writeRunHTML(opts.ReportDir, res.Run, site.Options{})
		if err != nil {
			res.Err = errors.Join(res.Err, err)
		} else {
			res.Files = append(res.Files, index)
		}
	}
	printSummary(stdout, res, time.Since(start))
	if len(res.Run.Tests) == 0 && code != 0 {
		fmt.Fprintf(stderr, "gatewitness run: the suite failed before its tests; its log:\n%s", c.Log("gatewitness"))
	}
	if res.Err != nil {
		fmt.Fprintf(stderr, "gatewitness run: %v\n", res.Err)
	}
	if code == 0 && res.Err != nil {
		code = 1
	}
	return code
}

// hostInterrupted ends a run that a signal interrupted: the run's pages
// beside its reports, the summary, and the exit status of a process the
// signal ended, 128 plus its number (130 for SIGINT, 143 for SIGTERM).
func hostInterrupted(opts runner.Options, res *runner.Result, stdout, stderr io.Writer, took time.Duration) int {
	if opts.ReportDir != "" && res.Run != nil {
		index, err := writeRunHTML(opts.ReportDir, res.Run, site.Options{})
		if err != nil {
			res.Err = errors.Join(res.Err, err)
		} else {
			res.Files = append(res.Files, index)
		}
	}
	if res.Run != nil {
		printSummary(stdout, res, took)
	}
	if res.Err != nil {
		fmt.Fprintf(stderr, "gatewitness run: %v\n", res.Err)
	}
	if n, ok := res.Signal.(syscall.Signal); ok {
		return 128 + int(n)
	}
	return 1
}

// setTestingFlags sets testing's flags, which are on flag.CommandLine:
// none from our command line; every test's output streamed with framing
// lines, which the capture parses; and parallel tests run up to parallel at
// once.
func setTestingFlags(parallel int) error {
	if err := flag.CommandLine.Parse(nil); err != nil {
		return err
	}
	if err := flag.Set("test.v", "test2json"); err != nil {
		return err
	}
	return flag.Set("test.parallel", strconv.Itoa(parallel))
}

func printSummary(w io.Writer, res *runner.Result, took time.Duration) {
	var passed, failed, skipped int
	var failedNames, inconclusive []string
	for _, t := range res.Run.Tests {
		switch t.Result {
		case reports.Pass:
			passed++
		case reports.Fail:
			failed++
			failedNames = append(failedNames, t.ShortName)
		case reports.Skip:
			skipped++
		case reports.Inconclusive:
			inconclusive = append(inconclusive, t.ShortName+": "+t.Message)
		}
	}
	fmt.Fprintf(w, "\n%d tests in %s: %d passed, %d failed, %d skipped", len(res.Run.Tests), took.Round(time.Second), passed, failed, skipped)
	if len(inconclusive) > 0 {
		fmt.Fprintf(w, ", %d inconclusive", len(inconclusive))
	}
	if n := res.Run.InterruptedCount(); n > 0 || res.Run.Status != reports.RunComplete {
		fmt.Fprintf(w, ", %d interrupted", n)
	}
	fmt.Fprintln(w)
	if st := res.Run.StatusLine(); st != "" {
		fmt.Fprintln(w, st)
	}
	for _, line := range inconclusive {
		fmt.Fprintf(w, "inconclusive: %s\n", line)
	}
	if len(res.Phases) > 0 {
		phases := slices.Clone(res.Phases)
		var sum time.Duration
		for _, p := range phases {
			sum += p.Duration
		}
		// The rest is the in-process cluster's stop, after the reports.
		if rest := took - sum; rest > 0 {
			phases = append(phases, reports.Phase{Name: "stop", Duration: rest})
		}
		fmt.Fprintf(w, "phases: %s\n", reports.PhasesLine(phases))
	}
	for _, n := range failedNames {
		fmt.Fprintf(w, "failed: %s\n", n)
	}
	for _, p := range profileResults(res.Run) {
		fmt.Fprintf(w, "profile %s\n", p)
	}
	if len(res.Files) > 0 {
		fmt.Fprintln(w, "reports:")
		for _, f := range res.Files {
			fmt.Fprintf(w, "  %s\n", f)
		}
	}
}

// profileResults describes each profile's result in a line, upstream's
// first.
func profileResults(run *reports.Run) []string {
	var out []string
	add := func(report string, ps []confv1.ProfileReport) {
		ps = slices.Clone(ps)
		slices.SortFunc(ps, func(a, b confv1.ProfileReport) int { return strings.Compare(a.Name, b.Name) })
		for _, p := range ps {
			if reports.ProfileNotClaimed(p) {
				out = append(out, fmt.Sprintf("%s (%s report): %s, no test of it ran", p.Name, report, reports.NotClaimed))
				continue
			}
			line := fmt.Sprintf("%s (%s report): core %s", p.Name, report, p.Core.Result)
			if p.Extended != nil {
				line += ", extended " + string(p.Extended.Result)
			}
			out = append(out, line)
		}
	}
	if run.Conformance != nil {
		add("upstream", run.Conformance.ProfileReports)
	}
	add("gatewitness", run.GatewitnessProfiles)
	return out
}
