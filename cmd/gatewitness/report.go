package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/gatewitness/gatewitness/conformance/runner"
	"github.com/gatewitness/gatewitness/reports"
	"github.com/gatewitness/gatewitness/reports/site"
)

const reportUsage = `Usage: gatewitness report [flags] PATH

Writes every output of a run again from its run record: PATH is a run.json,
or a report folder that holds one. It writes, into --out (by default the
folder of the run.json): run.json, junit.xml, summary.md, summary-short.md,
gatewitness-report.yaml, the upstream report and its README.md under upstream/,
and the run's HTML pages under html/ (html/index.html). A newer gatewitness
renders an older run this way; gatewitness run writes the same files.

Flags:
`

// reportCommand is `gatewitness report`.
func reportCommand(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gatewitness report", flag.ContinueOnError)
	out := fs.String("out", "", "folder to write the outputs to (default: the run.json's folder)")
	sourceURL := fs.String("source-url", site.DefaultSourceURL, "where gatewitness's files are browsed, for the HTML's links to docs/semantics")
	paths, code, done := parseFlags(fs, args, reportUsage, stdout, stderr)
	if done {
		return code
	}
	if len(paths) != 1 {
		fmt.Fprintf(stderr, "gatewitness report: want one PATH (a run.json or a folder holding one), got %q\n", paths)
		return 2
	}
	opts := site.Options{SourceURL: *sourceURL}
	if err := opts.Complete(); err != nil {
		fmt.Fprintf(stderr, "gatewitness report: --%v\n", err)
		return 2
	}
	path, err := runRecordPath(paths[0])
	if err != nil {
		fmt.Fprintf(stderr, "gatewitness report: %v\n", err)
		return 2
	}
	run, err := readRun(path)
	if err != nil {
		fmt.Fprintf(stderr, "gatewitness report: %v\n", err)
		return 1
	}
	dir := *out
	if dir == "" {
		dir = filepath.Dir(path)
	}
	written, err := reports.WriteAll(dir, run)
	for _, f := range written {
		fmt.Fprintln(stdout, f)
	}
	if err != nil {
		fmt.Fprintf(stderr, "gatewitness report: %v\n", err)
		return 1
	}
	index, err := writeRunHTML(dir, run, opts)
	if err != nil {
		fmt.Fprintf(stderr, "gatewitness report: %v\n", err)
		return 1
	}
	fmt.Fprintln(stdout, index)
	return 0
}

// HTMLDirName is the folder of a report folder that holds the run's pages.
const HTMLDirName = "html"

// writeRunHTML writes the pages of run alone (a site of one run) into
// dir/html and returns the path of its index.
func writeRunHTML(dir string, run *reports.Run, opts site.Options) (string, error) {
	h, err := site.NewHistory(run)
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, HTMLDirName)
	if _, err := site.Build(out, h, opts); err != nil {
		return "", fmt.Errorf("the HTML pages: %w", err)
	}
	return filepath.Join(out, "index.html"), nil
}

// runRecordPath is path when it names a file, or the record inside it
// when it names a folder: its run.json, or its run.incomplete.json when
// that is newer (or alone).
func runRecordPath(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	if fi.IsDir() {
		dir := path
		path = filepath.Join(dir, reports.RunFileName)
		done, err := os.Stat(path)
		// A run killed before its end leaves its incomplete record
		// beside the run.json of the run before it.
		if partial, perr := os.Stat(filepath.Join(dir, reports.IncompleteRunFileName)); perr == nil && (err != nil || partial.ModTime().After(done.ModTime())) {
			return filepath.Join(dir, reports.IncompleteRunFileName), nil
		}
		if err != nil {
			return "", fmt.Errorf("%s holds no %s; give a run record or a report folder written by gatewitness run", dir, reports.RunFileName)
		}
	}
	return path, nil
}

func readRun(path string) (*reports.Run, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	run, err := reports.ReadRunJSON(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return run, nil
}

// parseFlags parses args into fs, flags and arguments in any order, and
// returns the arguments. It prints the usage and the defaults to stdout
// when help is asked for and to stderr after a bad flag; done says the
// command should return code at once.
func parseFlags(fs *flag.FlagSet, args []string, usage string, stdout, stderr io.Writer) (rest []string, code int, done bool) {
	fs.SetOutput(io.Discard)
	printUsage := func(w io.Writer) {
		fmt.Fprint(w, usage)
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				printUsage(stdout)
				return nil, 0, true
			}
			fmt.Fprintf(stderr, "%s: %v%s\n", fs.Name(), err, flagHint(fs, err))
			return nil, 2, true
		}
		if fs.NArg() == 0 {
			return rest, 0, false
		}
		rest = append(rest, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// flagHint is what follows a flag error: the flag closest to an unknown
// one, and where the flags are listed.
func flagHint(fs *flag.FlagSet, err error) string {
	hint := ""
	if name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: -"); ok {
		var names []string
		fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
		if s := runner.Suggest(strings.TrimLeft(name, "-"), names); s != "" {
			hint = fmt.Sprintf("; did you mean --%s?", s)
		}
	}
	return hint + " (" + fs.Name() + " -help lists the flags)"
}
