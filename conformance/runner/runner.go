// Package runner runs the conformance suite: the upstream Gateway API tests
// (sigs.k8s.io/gateway-api/conformance v1.6.3) and gatecheck's own, against
// the in-process reference gateway or a cluster named by a kubeconfig, and
// writes the reports (the upstream ConformanceReport YAML, JUnit XML and a
// Markdown summary).
//
// The suite is upstream's ConformanceTestSuite, so a test behaves the same
// under this runner as under upstream's; the runner adds the in-process
// target, options checked up front, per-test progress and results with
// what each test observed.
package runner

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/gateway-api/conformance"
	"sigs.k8s.io/gateway-api/conformance/utils/config"
	"sigs.k8s.io/gateway-api/conformance/utils/suite"
	"sigs.k8s.io/gateway-api/conformance/utils/tlog"

	"github.com/gatecheck/gatecheck/conformance/observe"
	gctests "github.com/gatecheck/gatecheck/conformance/tests"
	"github.com/gatecheck/gatecheck/features"
	"github.com/gatecheck/gatecheck/reports"
)

// Names of the report files written to Options.ReportDir next to the
// ConformanceReport YAML, whose name reports.ConformanceFileName gives.
const (
	JUnitFileName    = "junit.xml"
	MarkdownFileName = "summary.md"
)

// Result is what a run produced. Run returns it at once, but it is filled
// in only when the test that called Run has finished (see Run).
type Result struct {
	// Run is the record of the run; nil if the suite could not report.
	Run *reports.Run
	// Files lists the report files written, in the order written.
	Files []string
	// Err reports a failure to build or write the reports.
	Err error
}

// Run runs the suite as subtests of t, one per conformance test, named by
// the test's ShortName (which is what observe.Record files observations
// under), and writes the reports.
//
// The upstream suite completes a run only in a cleanup of t (tests marked
// Parallel start after t's function returns), so the reports are built and
// written in a cleanup Run registers on t: the returned Result is complete
// once t has finished, e.g. after the t.Run that called Run returns. If the
// base resources cannot be set up, t fails and ends as upstream's suite
// ends it; the reports are still written, with no tests.
//
// Run returns an error, and runs nothing, if the options are bad or the
// target cannot be started.
func Run(t *testing.T, opts Options) (*Result, error) {
	t.Helper()
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("runner: %w", err)
	}
	if err := features.Validate(); err != nil {
		return nil, fmt.Errorf("runner: the features registry: %w", err)
	}
	all := AllTests()
	if err := checkUnique(all); err != nil {
		return nil, err
	}
	if err := gctests.SetTimingTolerance(opts.TimingTolerance); err != nil {
		return nil, fmt.Errorf("runner: %w", err)
	}
	if err := gctests.SetConnectionTimeouts(opts.ConnectionTimeouts); err != nil {
		return nil, fmt.Errorf("runner: connectionTimeouts: %w", err)
	}
	crlog.SetLogger(opts.Logger)
	observe.Reset()

	inProcess := opts.Kubeconfig == ""
	if inProcess {
		setInProcessDefaults(&opts)
	}
	if opts.ReportDir != "" || opts.ReportOutputPath != "" {
		if err := opts.Implementation.Validate(); err != nil {
			return nil, fmt.Errorf("runner: writing a report needs --organization, --project, --url, --version and --contact: %w", err)
		}
	}
	// The suite fills in unset timeouts; the target's clients need them too.
	config.SetupTimeoutConfig(&opts.TimeoutConfig)

	co := suite.ConformanceOptions{
		ConfigurableOptions: opts.ConfigurableOptions,
		ManifestFS:          []fs.FS{&conformance.Manifests, gctests.Manifests},
	}
	// The runner writes the reports itself, once the run is over.
	co.ReportOutputPath = ""
	var tgt *target
	var err error
	if inProcess {
		tgt, err = startInProcess(t, &opts, &co)
	} else {
		tgt, err = connect(opts.Kubeconfig, &co)
		if err == nil {
			err = waitForPreviousRun(t.Context(), &co, opts.Progress)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("runner: %w", err)
	}

	return runSuite(t, &opts, co, all, tgt.restoreClient)
}

// runSuite runs the tests on a suite made from co, as Run describes.
// restore is the client tests must find in the suite, or nil to keep the
// one the suite gives each test.
func runSuite(t *testing.T, opts *Options, co suite.ConformanceOptions, all []suite.ConformanceTest, restore client.Client) (*Result, error) {
	rec := &recorder{
		progress: opts.Progress,
		testLog:  opts.TestLog,
		runTest:  opts.RunTest,
		started:  map[string]time.Time{},
		results:  map[string]reports.TestResult{},
	}
	co.Hook = rec.hook
	s, err := suite.NewConformanceTestSuite(co)
	if err != nil {
		return nil, fmt.Errorf("runner: creating the upstream suite: %w", err)
	}
	wrapped := wrapTests(all, restore, rec)

	res := &Result{}
	start := time.Now()
	// Registered before Setup and Run register theirs, so it runs after
	// them: after every test, after the suite marks the run over, and
	// after the base resources are deleted.
	t.Cleanup(func() {
		res.Run, res.Files, res.Err = finish(s, opts, rec, all, start)
		if res.Err != nil {
			t.Errorf("runner: %v", res.Err)
		}
	})

	s.Setup(t, wrapped)
	if err := s.Run(t, wrapped); err != nil {
		return nil, fmt.Errorf("runner: %w", err)
	}
	if restore != nil {
		// See wrapTests: tests marked Parallel start after this function
		// returns, and must find the in-process client in place.
		s.Client = restore
	}
	return res, nil
}

func checkUnique(all []suite.ConformanceTest) error {
	seen := make(map[string]bool, len(all))
	for _, ct := range all {
		if seen[ct.ShortName] {
			return fmt.Errorf("runner: two conformance tests have the ShortName %q", ct.ShortName)
		}
		seen[ct.ShortName] = true
	}
	return nil
}

// setInProcessDefaults fills in what an in-process run knows: the
// reference gateway's features and profiles, and who the implementation
// is.
func setInProcessDefaults(o *Options) {
	if len(o.SupportedFeatures) == 0 && !o.EnableAllSupportedFeatures {
		o.SupportedFeatures = ReferenceFeatures()
	}
	if len(o.ConformanceProfiles) == 0 {
		for _, p := range append(slices.Clone(referenceProfiles), features.ProfileHTTPResilience, features.ProfileGRPCDeadlines,
			features.ProfileConnectionTimeouts, features.ProfileMeshProbes) {
			o.ConformanceProfiles = append(o.ConformanceProfiles, suite.ConformanceProfileName(p))
		}
	}
	impl := &o.Implementation
	if impl.Organization == "" {
		impl.Organization = "gatecheck"
	}
	if impl.Project == "" {
		impl.Project = "reference-gateway"
	}
	if impl.URL == "" {
		impl.URL = "https://github.com/gatecheck/gatecheck"
	}
	if impl.Version == "" {
		impl.Version = buildVersion()
	}
	if len(impl.Contact) == 0 {
		impl.Contact = []string{"https://github.com/gatecheck/gatecheck/issues"}
	}
}

// buildVersion is the version of the gatecheck module in this binary, or
// "dev" when it has none usable in a file name (a build from a work tree).
func buildVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && checkFileNamePart(bi.Main.Version, false) == nil {
		return bi.Main.Version
	}
	return "dev"
}

// wrapTests returns copies of the tests that time themselves and, on the
// in-process target, put the in-process client back before they start.
//
// The upstream suite gives each test a client built from its RestConfig
// (for a per-test user agent). The in-process cluster's REST API serves
// only pod logs, so that client cannot read or write objects. A copy
// therefore applies the test's
// manifests itself (the suite would do it with that client) after setting
// the suite's client back. A test marked Parallel does not set it: it runs
// after Run has set it back once and for all, and setting it from there
// would race with other parallel tests reading it.
func wrapTests(all []suite.ConformanceTest, restore client.Client, rec *recorder) []suite.ConformanceTest {
	out := make([]suite.ConformanceTest, len(all))
	for i, orig := range all {
		w := orig
		w.Manifests = nil
		w.Test = func(t *testing.T, s *suite.ConformanceTestSuite) {
			if restore != nil && !(orig.Parallel && !s.DisableParallelTests) {
				s.Client = restore
			}
			rec.start(orig.ShortName)
			for _, m := range orig.Manifests {
				tlog.Logf(t, "Applying %s", m)
				s.Applier.MustApplyWithCleanup(t, s.Client, s.TimeoutConfig, m, s.CleanupTestResources)
			}
			orig.Test(t, s)
		}
		out[i] = w
	}
	return out
}

// recorder collects each test's result as the suite reports it through
// its hook, which runs as the test's last cleanup.
type recorder struct {
	progress io.Writer
	testLog  func(string) string
	runTest  string

	mu      sync.Mutex
	started map[string]time.Time
	results map[string]reports.TestResult
}

func (r *recorder) start(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.started[name] = time.Now()
}

func (r *recorder) hook(t *testing.T, ct suite.ConformanceTest, s *suite.ConformanceTestSuite) {
	tr := reports.TestResult{
		ShortName:           ct.ShortName,
		Description:         ct.Description,
		Features:            slices.Clone(ct.Features),
		Result:              reports.Pass,
		Observations:        observe.For(ct.ShortName),
		DroppedObservations: observe.Dropped(ct.ShortName),
	}
	switch {
	case t.Failed():
		tr.Result = reports.Fail
		tr.Message = "the test failed; its log is in the test output"
		if r.testLog != nil {
			if log := r.testLog(ct.ShortName); log != "" {
				tr.Message = log
			}
		}
	case t.Skipped():
		tr.Result = reports.Skip
		tr.Message = skipReason(ct, s)
	}
	r.mu.Lock()
	if st, ok := r.started[ct.ShortName]; ok {
		tr.Duration = time.Since(st)
	}
	r.results[ct.ShortName] = tr
	// Parallel tests end concurrently; the lock keeps their lines whole.
	if r.progress != nil && (r.runTest == "" || r.runTest == ct.ShortName) {
		fmt.Fprintf(r.progress, "%-4s %s (%s)\n", strings.ToUpper(string(tr.Result)), ct.ShortName, tr.Duration.Round(time.Millisecond))
	}
	r.mu.Unlock()
}

// skipReason says why the suite skipped a test, in the order upstream's
// suite decides it.
func skipReason(ct suite.ConformanceTest, s *suite.ConformanceTestSuite) string {
	switch {
	case s.SkipProvisionalTests && ct.Provisional:
		return "provisional test, skipped by --skip-provisional-tests"
	case s.RunTest != "" && s.RunTest != ct.ShortName:
		return "not selected: --run-test names " + s.RunTest
	case s.SkipTests.Has(ct.ShortName):
		return "skipped by --skip-tests"
	}
	if s.RunTest == "" {
		var missing []string
		for _, f := range ct.Features {
			if !s.SupportedFeatures.Has(f) {
				missing = append(missing, string(f))
			}
		}
		if len(missing) > 0 {
			return "the implementation does not claim " + strings.Join(missing, ", ")
		}
	}
	return "the test skipped itself; its log says why"
}

// finish builds the record of the run and writes the reports.
func finish(s *suite.ConformanceTestSuite, o *Options, rec *recorder, all []suite.ConformanceTest, start time.Time) (*reports.Run, []string, error) {
	run := &reports.Run{
		Implementation: o.Implementation,
		Mode:           o.Mode,
		Started:        start,
		Duration:       time.Since(start),
	}
	for _, p := range o.ConformanceProfiles {
		run.Profiles = append(run.Profiles, string(p))
	}
	rec.mu.Lock()
	for _, ct := range all {
		if tr, ok := rec.results[ct.ShortName]; ok {
			run.Tests = append(run.Tests, tr)
		}
	}
	rec.mu.Unlock()

	cr, err := s.Report()
	if err != nil {
		return run, nil, fmt.Errorf("building the conformance report: %w", err)
	}
	run.Conformance = cr

	var files []string
	if o.ReportOutputPath != "" {
		if err := writeFile(o.ReportOutputPath, func(w io.Writer) error { return reports.WriteConformanceYAML(w, cr) }); err != nil {
			return run, files, err
		}
		files = append(files, o.ReportOutputPath)
	}
	if o.ReportDir == "" {
		return run, files, nil
	}
	if err := os.MkdirAll(o.ReportDir, 0o755); err != nil {
		return run, files, fmt.Errorf("report directory: %w", err)
	}
	name, err := reports.ConformanceFileName(cr)
	if err != nil {
		return run, files, err
	}
	writers := []struct {
		name  string
		write func(io.Writer) error
	}{
		{name, func(w io.Writer) error { return reports.WriteConformanceYAML(w, cr) }},
		{JUnitFileName, func(w io.Writer) error { return reports.WriteJUnit(w, run) }},
		{MarkdownFileName, func(w io.Writer) error { return reports.WriteMarkdown(w, run) }},
	}
	var errs []error
	for _, wr := range writers {
		path := filepath.Join(o.ReportDir, wr.name)
		if err := writeFile(path, wr.write); err != nil {
			errs = append(errs, err)
			continue
		}
		files = append(files, path)
	}
	return run, files, errors.Join(errs...)
}

// writeFile writes a report through a temporary file in the same
// directory, so a reader never sees half a report.
func writeFile(path string, write func(io.Writer) error) error {
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
