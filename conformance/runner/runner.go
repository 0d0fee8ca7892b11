// Package runner runs the conformance suite: the upstream Gateway API tests
// (sigs.k8s.io/gateway-api/conformance v1.6.3) and gatewitness's own, against
// the in-process reference gateway or a cluster named by a kubeconfig, and
// writes the reports.
//
// Upstream's tests and gatewitness's run on two upstream
// ConformanceTestSuites that share one set-up: upstream's with the
// upstream profiles requested, gatewitness's with the gatewitness profiles.
// The upstream report is therefore exactly what upstream's own runner
// writes for the same claims, and gatewitness's tests never change an
// upstream result; the gatewitness report counts gatewitness's tests only. A
// test behaves the same under this runner as under upstream's; the runner
// adds the in-process target, options checked up front, a header saying
// what will be tested, per-test progress, and results with what each test
// observed.
package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatewitness/gatewitness/internal/project"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/gateway-api/conformance"
	confv1 "sigs.k8s.io/gateway-api/conformance/apis/v1"
	"sigs.k8s.io/gateway-api/conformance/utils/config"
	"sigs.k8s.io/gateway-api/conformance/utils/suite"
	"sigs.k8s.io/gateway-api/conformance/utils/tlog"
	"sigs.k8s.io/gateway-api/pkg/consts"

	gctests "github.com/gatewitness/gatewitness/conformance/tests"
	"github.com/gatewitness/gatewitness/contract/observe"
	"github.com/gatewitness/gatewitness/crds"
	"github.com/gatewitness/gatewitness/features"
	"github.com/gatewitness/gatewitness/internal/version"
	"github.com/gatewitness/gatewitness/reports"
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
	// Phases are how long each phase of the run took, from the call of
	// Run: "start" (the target started or reached, the suites built and
	// planned, the header printed), "set-up" (the base resources),
	// "serial tests" (each suite's, upstream's beside gatewitness's; see
	// runSides), "parallel tests" (those marked Parallel, which run
	// after the serial ones), "clean-up" (the base resources deleted)
	// and "reports" (built and written). The run record holds all but
	// the last.
	Phases []reports.Phase
}

// phaseClock times the phases of a run, each from the end of the one
// before.
type phaseClock struct {
	mu     sync.Mutex
	last   time.Time
	phases []reports.Phase
}

// end ends the phase name now.
func (c *phaseClock) end(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	c.phases = append(c.phases, reports.Phase{Name: name, Duration: now.Sub(c.last)})
	c.last = now
}

func (c *phaseClock) list() []reports.Phase {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.phases)
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
// Run returns an error, and runs nothing, if the options are bad, the
// target cannot be reached, or a test that would run counts in no
// requested profile. Options that name no cluster run against the
// in-process reference gateway as it ships (RunInProcess with the zero
// InProcess).
func Run(t *testing.T, opts Options) (*Result, error) {
	t.Helper()
	return RunInProcess(t, opts, InProcess{})
}

// RunInProcess is Run with the in-process target in: when opts name no
// cluster, the run is against in. On a cluster (opts.Kubeconfig set), in
// is not used.
func RunInProcess(t *testing.T, opts Options, in InProcess) (*Result, error) {
	t.Helper()
	began := time.Now()
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
	if err := gctests.SetRetryBudgetLoad(opts.RetryBudgetLoad); err != nil {
		return nil, fmt.Errorf("runner: retryBudgetLoad: %w", err)
	}
	crlog.SetLogger(opts.Logger)
	observe.Reset()
	gctests.SetWindowSchedule(!opts.ChurnDuringWindows)

	inProcess := opts.Kubeconfig == ""
	// Where the claims come from, as upstream's suite decides it.
	claimsSource := "--supported-features"
	switch {
	case opts.EnableAllSupportedFeatures:
		claimsSource = "--all-features"
	case len(opts.SupportedFeatures) > 0:
	case inProcess:
		claimsSource = "the reference gateway's features"
	case len(selectedTests(opts.RunTest)) == 1 || len(opts.ExemptFeatures) > 0:
		claimsSource = "none given, so only the profiles' core features"
	default:
		claimsSource = "the GatewayClass's status.supportedFeatures"
	}
	if inProcess {
		if fields := identityFields(opts.Implementation); len(fields) > 0 {
			return nil, fmt.Errorf("runner: %s: %w", strings.Join(fields, ", "), errIdentityInProcess)
		}
		channel, err := servedChannel()
		if err != nil {
			return nil, fmt.Errorf("runner: %w", err)
		}
		if claimsSource == "the reference gateway's features" && channel != features.ChannelExperimental {
			claimsSource += fmt.Sprintf(" on the %s channel's CRDs (less its experimental features)", channel)
		}
		setInProcessDefaults(&opts, channel)
	}
	if opts.ReportDir != "" || opts.ReportOutputPath != "" {
		if err := opts.Implementation.Validate(); err != nil {
			return nil, fmt.Errorf("runner: writing a report needs --organization, --project, --url, --version and --contact: %w", err)
		}
		if v := opts.Implementation.Version; !version.IsSemantic(v) {
			opts.Warnings = append(opts.Warnings, fmt.Sprintf("--version %q is not a semantic version; the Gateway API project accepts reports of released versions or snapshots such as v1.2.3 or v0.0.0-20260301120000-0123456789ab", v))
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
		tgt, err = startInProcess(t, &opts, &co, in)
	} else {
		tgt, err = connect(&opts, &co)
	}
	if err != nil {
		return nil, fmt.Errorf("runner: %w", err)
	}
	tgt.claimsSource = claimsSource
	tgt.began = began
	return runSuites(t, &opts, co, tgt, upstreamTests(), gctests.ConformanceTests)
}

// identityFields names the implementation fields that are set.
func identityFields(impl confv1.Implementation) []string {
	var out []string
	for _, f := range []struct {
		name string
		set  bool
	}{
		{"implementation.organization", impl.Organization != ""},
		{"implementation.project", impl.Project != ""},
		{"implementation.url", impl.URL != ""},
		{"implementation.version", impl.Version != ""},
		{"implementation.contact", len(impl.Contact) > 0},
	} {
		if f.set {
			out = append(out, f.name)
		}
	}
	return out
}

// runSuites builds the two suites (upstream's tests and gatewitness's) from
// co, plans the run, refuses it if a test would count in no profile,
// prints the header, sets the base resources up once, and runs both
// suites, as Run describes.
func runSuites(t *testing.T, opts *Options, co suite.ConformanceOptions, tgt *target, upTests, gcTests []suite.ConformanceTest) (*Result, error) {
	clock := &phaseClock{last: tgt.began}
	if clock.last.IsZero() {
		clock.last = time.Now()
	}
	rec := newRecorder(opts)
	co.Hook = rec.hook
	explicitProfiles := len(co.ConformanceProfiles) > 0
	// Profiles the user named, not the in-process defaults: the run is
	// about them, and leaves out what counts in none (dropUncounted).
	namedProfiles := explicitProfiles && !opts.defaultProfiles
	selected := selectedTests(co.RunTest)
	rec.selected = selected
	selectSeveral(&co, selected, append(slices.Clone(upTests), gcTests...))

	build := func(profiles []string, restCfg *rest.Config) (*suite.ConformanceTestSuite, error) {
		c := co
		c.ConformanceProfiles = nil
		for _, p := range profiles {
			c.ConformanceProfiles = append(c.ConformanceProfiles, suite.ConformanceProfileName(p))
		}
		c.RestConfig = restCfg
		s, err := suite.NewConformanceTestSuite(c)
		if err != nil {
			return nil, fmt.Errorf("runner: creating the upstream suite: %w", err)
		}
		return s, nil
	}
	// Tests change RestConfig.UserAgent; each suite gets its own.
	copyRest := func() *rest.Config {
		if co.RestConfig == nil {
			return nil
		}
		return rest.CopyConfig(co.RestConfig)
	}
	upProfiles, gcProfiles := splitProfiles(co.ConformanceProfiles)
	up := &side{source: reports.Upstream, tests: upTests, profiles: upProfiles}
	gc := &side{source: reports.Gatewitness, tests: gcTests, profiles: gcProfiles}
	var err error
	if up.suite, err = build(up.profiles, copyRest()); err != nil {
		return nil, err
	}
	if !explicitProfiles {
		// No profile named: report on every profile whose core features
		// the run claims (on a cluster the claims may come from the
		// GatewayClass, known only now), and with --run-test on the
		// profiles of their sides that count the tests it names.
		claimed := up.suite.SupportedFeatures
		co.ConformanceProfiles = claimedProfiles(claimed)
		for _, s := range []*side{up, gc} {
			for _, ct := range s.tests {
				if !slices.Contains(selected, ct.ShortName) {
					continue
				}
				for _, p := range countingProfiles(ct, profileNames(s.source)) {
					if !slices.Contains(co.ConformanceProfiles, suite.ConformanceProfileName(p)) {
						co.ConformanceProfiles = append(co.ConformanceProfiles, suite.ConformanceProfileName(p))
					}
				}
			}
		}
		opts.ConformanceProfiles = co.ConformanceProfiles
		upProfiles, gcProfiles = splitProfiles(co.ConformanceProfiles)
		up.profiles, gc.profiles = upProfiles, gcProfiles
		if up.suite, err = build(up.profiles, copyRest()); err != nil {
			return nil, err
		}
	}
	if gc.suite, err = build(gc.profiles, copyRest()); err != nil {
		return nil, err
	}
	sides := []*side{up, gc}
	for _, s := range sides {
		planSide(s, selected)
		s.run = len(s.tests) > 0 && (len(selected) == 0 || slices.ContainsFunc(s.tests, func(ct suite.ConformanceTest) bool { return slices.Contains(selected, ct.ShortName) }))
	}
	if err := selectedUnclaimed(sides, selected); err != nil {
		return nil, fmt.Errorf("runner: %w", err)
	}
	var notes []string
	if namedProfiles {
		if note := dropUncounted(sides, selected); note != "" {
			notes = append(notes, note)
		}
	}
	running := slices.DeleteFunc(slices.Clone(sides), func(s *side) bool { return !s.run })
	if len(running) == 0 {
		return nil, errors.New("runner: there is no test to run")
	}
	if explicitProfiles || opts.ReportDir != "" || opts.ReportOutputPath != "" {
		more, err := uncounted(sides)
		if err != nil {
			return nil, fmt.Errorf("runner: %w", err)
		}
		notes = append(notes, more...)
	}

	total := 0
	for _, s := range running {
		total += len(s.tests)
	}
	rec.reruns = newReruns(opts, total)
	if w := scheduleWarning(opts, running, rec.reruns != nil); w != "" {
		opts.Warnings = append(opts.Warnings, w)
		gctests.SetWindowSchedule(false)
	}

	tgt.info.Controller = gatewayClassController(co.Client, co.GatewayClassName, co.TimeoutConfig.GetTimeout)
	info := runInfo(opts, tgt, sides, explicitProfiles)
	// Before the run, the report holds what the suite read from the
	// cluster: the Gateway API version and channel of its CRDs.
	if r, err := up.suite.Report(); err == nil {
		info.Environment.GatewayAPIVersion, info.Environment.GatewayAPIChannel = r.GatewayAPIVersion, r.GatewayAPIChannel
	}
	if opts.Progress != nil {
		writeHeader(opts.Progress, info, sides, opts.Warnings, notes)
	}
	if !tgt.info.InProcess {
		// The namespaces a previous run left being deleted must be gone
		// before the set-up applies them again; the wait reports its
		// progress after the header.
		if err := waitForPreviousRun(t.Context(), &co, opts.Progress); err != nil {
			return nil, fmt.Errorf("runner: %w", err)
		}
	}

	res := &Result{}
	start := time.Now()
	// Registered before Setup and Run register theirs, so it runs after
	// them: after every test, after the suites mark the run over, and
	// after the base resources are deleted.
	t.Cleanup(func() {
		clock.end("clean-up")
		rec.stop()
		res.Run, res.Files, res.Err = finish(opts, rec, sides, info, start, clock.list())
		clock.end("reports")
		res.Phases = clock.list()
		if res.Err != nil {
			t.Errorf("runner: %v", res.Err)
		}
	})
	rec.begin(sides)
	if rec.reruns != nil {
		setLateMissHandler(rec.reruns.take)
		t.Cleanup(func() { setLateMissHandler(nil) })
	}
	clock.end("start")

	// One set-up for both suites: upstream's Setup on the first suite
	// that runs, with the features of both (Setup applies the Gateway and
	// mesh base resources if either needs them), then its results copied
	// to the other.
	first := running[0].suite
	claimed := first.SupportedFeatures
	for _, s := range running[1:] {
		first.SupportedFeatures = claimed.Union(s.suite.SupportedFeatures)
	}
	first.Setup(t, append(slices.Clone(upTests), gcTests...))
	clock.end("set-up")
	first.SupportedFeatures = claimed
	for _, s := range running[1:] {
		s.suite.ControllerName = first.ControllerName
		s.suite.Applier = first.Applier
	}

	if err := runSides(t, opts, running, tgt.restoreClient, rec); err != nil {
		return nil, err
	}
	if tgt.restoreClient != nil {
		// See wrapTests: tests marked Parallel start after this function
		// returns, and must find the in-process client in place.
		for _, s := range running {
			s.suite.Client = tgt.restoreClient
		}
	}
	clock.end("serial tests")
	if rr := rec.reruns; rr != nil {
		restore := func(s *suite.ConformanceTestSuite) {
			if tgt.restoreClient != nil {
				s.Client = tgt.restoreClient
			}
		}
		t.Run(observe.RerunGroup, func(t *testing.T) { rr.drive(t, running, restore, rec) })
	}
	// Cleanups run last registered first, once every subtest is over:
	// this one first, as the parallel tests end.
	t.Cleanup(func() { clock.end("parallel tests") })
	return res, nil
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
		tests := wrapTests(s, restore, rec, pass)
		// Stable: each group keeps the suite's order.
		slices.SortStableFunc(tests, func(a, b suite.ConformanceTest) int {
			switch {
			case a.Parallel == b.Parallel:
				return 0
			case a.Parallel:
				return -1
			}
			return 1
		})
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

// upstreamTests returns upstream's tests.
func upstreamTests() []suite.ConformanceTest {
	all := AllTests()
	return all[:len(all)-len(gctests.ConformanceTests)]
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

// servedChannel is the Gateway API release channel of the CRDs the
// in-process store serves (crds.Load: the embedded experimental ones, or
// those of crds.DirEnv).
func servedChannel() (features.Channel, error) {
	list, err := crds.Load()
	if err != nil {
		return "", fmt.Errorf("loading the in-process CRDs: %w", err)
	}
	channel, err := crds.Channel(list)
	if err != nil {
		return "", fmt.Errorf("the in-process CRDs: %w", err)
	}
	switch c := features.Channel(channel); c {
	case features.ChannelStandard, features.ChannelExperimental:
		return c, nil
	}
	return "", fmt.Errorf("the in-process CRDs are of the channel %q; want %q or %q", channel, features.ChannelStandard, features.ChannelExperimental)
}

// setInProcessDefaults fills in what an in-process run knows: the
// reference gateway's features on CRDs of channel and its profiles, who
// the implementation is, and how often to poll its status.
func setInProcessDefaults(o *Options, channel features.Channel) {
	if len(o.SupportedFeatures) == 0 && !o.EnableAllSupportedFeatures {
		o.SupportedFeatures = ReferenceFeaturesOn(channel)
	}
	if len(o.ConformanceProfiles) == 0 {
		o.defaultProfiles = true
		for _, p := range append(slices.Clone(referenceProfiles), features.ProfileHTTPResilience, features.ProfileGRPCDeadlines,
			features.ProfileConnectionTimeouts, features.ProfileMeshProbes, features.ProfileRetryBudgets, features.ProfileFaultFidelity) {
			if !profileOnChannel(p, channel) {
				continue // its core would claim what the CRDs lack
			}
			o.ConformanceProfiles = append(o.ConformanceProfiles, suite.ConformanceProfileName(p))
		}
	}
	o.Implementation = ReferenceImplementation()
	if p := o.TimeoutConfig.DefaultPollInterval; p == 0 || p == config.DefaultTimeoutConfig().DefaultPollInterval {
		o.TimeoutConfig.DefaultPollInterval = InProcessPollInterval
	}
}

// InProcessPollInterval is how often an in-process run polls an object's
// status while a test waits for it (upstream's DefaultPollInterval), unless
// the timeout config sets another interval than upstream's default. Upstream's
// 100ms suits an API server; the in-process store answers a read in
// microseconds and the reference gateway writes status within milliseconds,
// so at 100ms most of the small tests would spend their time waiting for
// the second poll.
const InProcessPollInterval = 10 * time.Millisecond

// ReferenceImplementation is how reports name the in-process reference
// gateway: gatewitness's project, at the version of this gatewitness.
func ReferenceImplementation() confv1.Implementation {
	return confv1.Implementation{
		Organization: project.Name,
		Project:      "reference-gateway",
		URL:          project.RepositoryURL,
		Version:      version.Gatewitness(),
		Contact:      []string{project.IssuesURL},
	}
}

// wrapTests returns copies of a side's tests that mark when they start
// and, on the in-process target, put the in-process client back before
// they start.
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
			rec.start(orig.ShortName)
			// A failed test's state is read when the test function
			// returns, before its clean-ups delete what it applied.
			defer func() {
				if !t.Failed() {
					return
				}
				state, err := snapshot(context.Background(), base, applied.list())
				if err != nil {
					tlog.Logf(t, "%v", err)
				}
				rec.setState(orig.ShortName, state)
			}()
			// A configuration step until the test opens its timing
			// windows (tests.SetWindowSchedule), and again for the
			// clean-up, which runs after t.Cleanup(EndWindows).
			gctests.ConfigStep(t)
			for _, m := range orig.Manifests {
				refs, err := manifestObjects(s.ManifestFS, m)
				if err != nil {
					tlog.Logf(t, "the state at a failure will lack %s's objects: %v", m, err)
				}
				applied.add(refs...)
				tlog.Logf(t, "Applying %s", m)
				s.Applier.MustApplyWithCleanup(t, s.Client, s.TimeoutConfig, m, s.CleanupTestResources)
			}
			t.Cleanup(func() { gctests.EndWindows(t) })
			orig.Test(t, s)
		}
		out[i] = w
	}
	return out
}

// hook is the suites' Hook: it records a test's result as its subtest
// ends.
func (r *recorder) hook(t *testing.T, ct suite.ConformanceTest, s *suite.ConformanceTestSuite) {
	r.mu.Lock()
	p, ok := r.planned[ct.ShortName]
	r.mu.Unlock()
	if !ok {
		p = plannedTest{test: ct}
	}
	tr := r.testResult(p, t.Failed(), t.Skipped(), r.selected)
	defer r.reruns.ended()
	if tr.Result == reports.Pass && len(r.reruns.missed(ct.ShortName)) > 0 {
		// Passed but for windows missed by the suite's own lateness:
		// the rerun decides (reruns.drive).
		r.record(tr, false)
		return
	}
	r.record(tr, p.runs)
}

// finish builds the record of the run and writes the reports.
func finish(o *Options, rec *recorder, sides []*side, info reports.Run, start time.Time, phases []reports.Phase) (*reports.Run, []string, error) {
	run := info
	run.Started = start
	run.Duration = time.Since(start)
	run.Phases = phases
	for _, s := range sides {
		if !s.run {
			continue
		}
		for _, ct := range s.tests {
			if tr, ok := rec.result(ct.ShortName); ok {
				run.Tests = append(run.Tests, tr)
			}
		}
		report, err := s.suite.Report()
		if err != nil {
			return &run, nil, fmt.Errorf("building the %s report: %w", s.source, err)
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
			run.GatewitnessProfiles = report.ProfileReports
		}
		if run.Environment.GatewayAPIVersion == "" {
			run.Environment.GatewayAPIVersion = report.GatewayAPIVersion
			run.Environment.GatewayAPIChannel = report.GatewayAPIChannel
		}
	}

	var files []string
	var errs []error
	if o.ReportOutputPath != "" && run.Conformance != nil {
		err := reports.WriteFile(o.ReportOutputPath, func(w io.Writer) error { return reports.WriteConformanceYAML(w, run.Conformance) })
		if err != nil {
			errs = append(errs, err)
		} else {
			files = append(files, o.ReportOutputPath)
		}
	}
	if o.ReportDir != "" {
		written, err := reports.WriteAll(o.ReportDir, &run)
		files = append(files, written...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	return &run, files, errors.Join(errs...)
}

// runInfo is the part of the run's record known before it starts.
func runInfo(o *Options, tgt *target, sides []*side, explicitProfiles bool) reports.Run {
	run := reports.Run{
		Schema:          reports.RunSchema,
		Implementation:  o.Implementation,
		Mode:            o.Mode,
		Target:          tgt.info,
		TimingTolerance: o.TimingTolerance,
		RetryBudgetLoad: &reports.RetryBudgetLoad{
			QPS: o.RetryBudgetLoad.QPS, Requests: o.RetryBudgetLoad.Requests, ShareSlack: o.RetryBudgetLoad.ShareSlack,
		},
		CommandLine:  o.CommandLine,
		InstallSteps: o.InstallSteps,
		Environment: reports.Environment{
			KubernetesVersion:  tgt.kubernetesVersion,
			SuiteVersion:       consts.BundleVersion,
			GatewitnessVersion: version.Gatewitness(),
			GoVersion:          runtime.Version(),
		},
	}
	if run.Mode == "" {
		run.Mode = DefaultMode
	}
	run.Target.GatewayClass = o.GatewayClassName
	for _, s := range sides {
		run.Profiles = append(run.Profiles, s.profiles...)
	}
	claimed := sets.New[features.FeatureName]()
	for _, s := range sides {
		claimed = claimed.Union(s.suite.SupportedFeatures)
	}
	run.Claims.Features = sets.List(claimed)
	run.Claims.Source = tgt.claimsSource + claimsBreakdown(o, claimed, run.Profiles)
	switch {
	case explicitProfiles:
	case o.RunTest != "":
		run.Claims.Source += "; profiles: those whose core features are claimed, and those of the --run-test tests"
	default:
		run.Claims.Source += "; profiles: those whose core features are claimed"
	}
	return run
}

// claimsBreakdown says, when the run was given its features, how many of
// the claimed ones it was given and which it claims because they are core
// features of a profile requested (upstream's suite claims those
// implicitly), so that the header's count adds up: e.g. 24 claimed for 23
// given is " (23), and the core of the profiles requested (1:
// ReferenceGrant)". It returns "" when nothing was added, or when the
// features came from the GatewayClass or --all-features.
func claimsBreakdown(o *Options, claimed sets.Set[features.FeatureName], profiles []string) string {
	if o.EnableAllSupportedFeatures || len(o.SupportedFeatures) == 0 {
		return ""
	}
	given := sets.New(o.SupportedFeatures...).Difference(sets.New(o.ExemptFeatures...))
	core := sets.New[features.FeatureName]()
	for _, name := range profiles {
		if p, ok := lookupProfile(name); ok {
			core.Insert(p.Core...)
		}
	}
	added := claimed.Intersection(core).Difference(given)
	if added.Len() == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d), and the core of the profiles requested (%d: %s)", given.Len(), added.Len(), featureList(sets.List(added)))
}
