package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"testing"
	"time"

	"github.com/gatecheck/gatecheck/conformance/runner"
	"github.com/gatecheck/gatecheck/reports"
)

const runUsage = `Usage: gatecheck run [flags]

Runs the conformance suite, upstream's tests and gatecheck's, and prints a
line per test. Without --kubeconfig it runs in-process against the reference
gateway, with the reference gateway's features and the GATEWAY-HTTP,
GATEWAY-GRPC and gatecheck profiles. With --report-dir it writes the
ConformanceReport YAML, JUnit XML and a Markdown summary there.

The flags are the upstream suite's, plus gatecheck's own. Lists are
comma-separated; an options file (--options-file) takes the same options as
YAML or JSON, and flags override it.

Flags:
`

// runCommand is `gatecheck run`.
func runCommand(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gatecheck run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	build := runner.RegisterFlags(fs)
	verbose := fs.Bool("v", false, "print every test's log as it runs, not only a line per test")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), runUsage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "gatecheck run: unexpected argument %q; it takes flags only (gatecheck run -help)\n", fs.Arg(0))
		return 2
	}
	opts, err := build()
	if err != nil {
		fmt.Fprintf(stderr, "gatecheck run: %v\n", err)
		return 2
	}
	opts.Progress = stdout
	return host(opts, *verbose, stdout, stderr)
}

// host runs the suite as the one test of a test binary (see testdeps.go),
// with its output captured for the reports, and prints a summary.
func host(opts runner.Options, verbose bool, stdout, stderr io.Writer) int {
	var forward io.Writer
	if verbose {
		forward = stdout
	}
	c, err := newCapture(forward)
	if err != nil {
		fmt.Fprintf(stderr, "gatecheck run: %v\n", err)
		return 1
	}
	opts.TestLog = c.Log

	var res *runner.Result
	var runErr error
	tests := []testing.InternalTest{{Name: "gatecheck", F: func(t *testing.T) {
		res, runErr = runner.Run(t, opts)
		if runErr != nil {
			t.Error(runErr)
		}
	}}}
	m := testing.MainStart(testDeps{}, tests, nil, nil, nil)
	// testing's flags are on flag.CommandLine: take none from our command
	// line, and have it stream every test's output with framing lines,
	// which the capture parses.
	if err := flag.CommandLine.Parse(nil); err != nil {
		fmt.Fprintf(stderr, "gatecheck run: %v\n", err)
		return 1
	}
	if err := flag.Set("test.v", "test2json"); err != nil {
		fmt.Fprintf(stderr, "gatecheck run: %v\n", err)
		return 1
	}
	savedOut, savedErr := os.Stdout, os.Stderr
	os.Stdout = c.w
	start := time.Now()
	code := m.Run()
	os.Stdout, os.Stderr = savedOut, savedErr
	if err := c.Close(); err != nil {
		fmt.Fprintf(stderr, "gatecheck run: %v\n", err)
	}

	if runErr != nil {
		fmt.Fprintf(stderr, "gatecheck run: %v\n", runErr)
		return 2
	}
	if res == nil || res.Run == nil {
		fmt.Fprintf(stderr, "gatecheck run: the suite did not start; its log:\n%s", c.Log("gatecheck"))
		return 1
	}
	printSummary(stdout, res, time.Since(start))
	if len(res.Run.Tests) == 0 && code != 0 {
		fmt.Fprintf(stderr, "gatecheck run: the suite failed before its tests; its log:\n%s", c.Log("gatecheck"))
	}
	if res.Err != nil {
		fmt.Fprintf(stderr, "gatecheck run: %v\n", res.Err)
	}
	if code == 0 && res.Err != nil {
		code = 1
	}
	return code
}

func printSummary(w io.Writer, res *runner.Result, took time.Duration) {
	var passed, failed, skipped int
	var failedNames []string
	for _, t := range res.Run.Tests {
		switch t.Result {
		case reports.Pass:
			passed++
		case reports.Fail:
			failed++
			failedNames = append(failedNames, t.ShortName)
		case reports.Skip:
			skipped++
		}
	}
	fmt.Fprintf(w, "\n%d tests in %s: %d passed, %d failed, %d skipped\n", len(res.Run.Tests), took.Round(time.Second), passed, failed, skipped)
	for _, n := range failedNames {
		fmt.Fprintf(w, "failed: %s\n", n)
	}
	if len(res.Files) > 0 {
		fmt.Fprintln(w, "reports:")
		for _, f := range res.Files {
			fmt.Fprintf(w, "  %s\n", f)
		}
	}
}
