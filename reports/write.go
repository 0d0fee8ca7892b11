package reports

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Names of the files WriteAll writes at the top of a report directory.
const (
	RunFileName       = "run.json"
	JUnitFileName     = "junit.xml"
	MarkdownFileName  = "summary.md"
	MarkdownShortName = "summary-short.md"
	// IncompleteRunFileName is the record of a run still going (Status
	// RunIncomplete), beside run.json: the runner writes it at the start
	// and as tests start and finish, and removes it once run.json holds
	// the run's end, so that a previous run's run.json stays whole until
	// then and a run killed outright leaves this record of how far it got.
	IncompleteRunFileName = "run.incomplete.json"
)

// WriteAll writes every report of run into dir, creating it if needed,
// and returns the paths written, in order:
//
//	run.json                 the run record (everything below is written from it)
//	junit.xml                JUnit XML
//	summary.md               the Markdown summary
//	summary-short.md         the short summary, for a pull-request comment
//	gatewitness-report.yaml    the gatewitness report, when the run had gatewitness's tests or profiles
//	upstream/<major.minor>/<implementation>/<channel>-<version>-<mode>-report.yaml
//	upstream/<major.minor>/<implementation>/README.md
//	                         the upstream submission, when the run had upstream's tests
//	                         and is complete (never for an interrupted run)
//
// Each file is written to a temporary file first and renamed, so a reader
// never sees half a report. WriteAll writes what it can and reports every
// failure.
func WriteAll(dir string, run *Run) ([]string, error) {
	if err := run.Validate(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("reports: report directory: %w", err)
	}
	type file struct {
		path  string
		write func(io.Writer) error
	}
	files := []file{
		{RunFileName, func(w io.Writer) error { return WriteRunJSON(w, run) }},
		{JUnitFileName, func(w io.Writer) error { return WriteJUnit(w, run) }},
		{MarkdownFileName, func(w io.Writer) error { return WriteMarkdown(w, run) }},
		{MarkdownShortName, func(w io.Writer) error { return WriteMarkdownShort(w, run) }},
	}
	if run.hasGatewitness() {
		files = append(files, file{GatewitnessReportFileName, func(w io.Writer) error { return WriteGatewitnessYAML(w, run) }})
	}
	var errs []error
	if run.Conformance != nil && run.Status == RunComplete {
		sub, err := runSubmissionDir(run)
		if err == nil {
			var name string
			if name, err = ConformanceFileName(run.Conformance); err == nil {
				sub = filepath.Join(UpstreamDirName, filepath.FromSlash(sub))
				if err = os.MkdirAll(filepath.Join(dir, sub), 0o755); err == nil {
					files = append(files,
						file{filepath.Join(sub, name), func(w io.Writer) error { return WriteConformanceYAML(w, run.Conformance) }},
						file{filepath.Join(sub, SubmissionReadmeName), func(w io.Writer) error { return WriteSubmissionReadme(w, run) }})
				}
			}
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("the upstream report: %w", err))
		}
	}
	var written []string
	for _, f := range files {
		path := filepath.Join(dir, f.path)
		if err := WriteFile(path, f.write); err != nil {
			errs = append(errs, err)
			continue
		}
		written = append(written, path)
	}
	return written, errors.Join(errs...)
}

// WriteFile writes a file through a temporary file in the same directory,
// renamed into place once complete.
func WriteFile(path string, write func(io.Writer) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer os.Remove(f.Name())
	if err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Chmod(f.Name(), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
