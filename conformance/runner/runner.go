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
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gatewitness/gatewitness/internal/project"

	crlog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/gateway-api/conformance"
	confv1 "sigs.k8s.io/gateway-api/conformance/apis/v1"
	"sigs.k8s.io/gateway-api/conformance/utils/config"
	"sigs.k8s.io/gateway-api/conformance/utils/suite"

	gctests "github.com/gatewitness/gatewitness/conformance/tests"
	"github.com/gatewitness/gatewitness/contract/observe"
	"github.com/gatewitness/gatewitness/crds"
	"github.com/gatewitness/gatewitness/features"
	"github.com/gatewitness/gatewitness/internal/version"
)

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
	claimsSource, err := prepare(&opts)
	if err != nil {
		return nil, err
	}
	co := suite.ConformanceOptions{
		ConfigurableOptions: opts.ConfigurableOptions,
		ManifestFS:          []fs.FS{&conformance.Manifests, gctests.ManifestsWithEchoImage(opts.EchoImage)},
	}
	// The runner writes the reports itself, once the run is over.
	co.ReportOutputPath = ""
	var tgt *target
	if opts.Kubeconfig == "" {
		tgt, err = startInProcess(t, &opts, &co, in)
	} else {
		tgt, err = connect(&opts, &co)
	}
	if err != nil {
		return nil, fmt.Errorf("runner: %w", err)
	}
	tgt.claimsSource = claimsSource
	tgt.began = began
	// Every test's writes are configuration steps (tests.ConfigWrites):
	// those of upstream's tests too, which are no steps while they only
	// read status (tests.ConfigApplied).
	co.Client = gctests.ConfigWrites(co.Client)
	if tgt.restoreClient != nil {
		tgt.restoreClient = co.Client
	}
	return runSuites(t, &opts, co, tgt, upstreamTests(), gctests.ConformanceTests)
}

// prepare checks the options and the registries, sets what the tests
// read from the options (tolerance, load, logger), fills in the in-process
// defaults, and says where the run's claims come from.
func prepare(opts *Options) (claimsSource string, err error) {
	if err := opts.Validate(); err != nil {
		return "", fmt.Errorf("runner: %w", err)
	}
	if err := features.Validate(); err != nil {
		return "", fmt.Errorf("runner: the features registry: %w", err)
	}
	if err := checkUnique(AllTests()); err != nil {
		return "", err
	}
	if err := setTestOptions(opts); err != nil {
		return "", err
	}
	claimsSource = claimsSourceOf(opts)
	if opts.Kubeconfig == "" {
		if claimsSource, err = inProcessDefaults(opts, claimsSource); err != nil {
			return "", err
		}
	}
	if opts.ReportDir != "" || opts.ReportOutputPath != "" {
		if err := opts.Implementation.Validate(); err != nil {
			return "", fmt.Errorf("runner: writing a report needs --organization, --project, --url, --version and --contact: %w", err)
		}
		if v := opts.Implementation.Version; !version.IsSemantic(v) {
			opts.Warnings = append(opts.Warnings, fmt.Sprintf("--version %q is not a semantic version; the Gateway API project accepts reports of released versions or snapshots such as v1.2.3 or v0.0.0-20260301120000-0123456789ab", v))
		}
		if err := checkReportPaths(opts); err != nil {
			return "", fmt.Errorf("runner: %w", err)
		}
	}
	if opts.Kubeconfig != "" && opts.TimeoutConfig.RequiredConsecutiveSuccesses == 0 {
		opts.TimeoutConfig.RequiredConsecutiveSuccesses = ClusterRequiredConsecutiveSuccesses
	}
	// The suite fills in unset timeouts (in-process, upstream's
	// RequiredConsecutiveSuccesses); the target's clients need them too.
	config.SetupTimeoutConfig(&opts.TimeoutConfig)
	return claimsSource, nil
}

// setTestOptions hands the tests what they read from the options.
func setTestOptions(opts *Options) error {
	if err := gctests.SetTimingTolerance(opts.TimingTolerance); err != nil {
		return fmt.Errorf("runner: %w", err)
	}
	if err := gctests.SetConnectionTimeouts(opts.ConnectionTimeouts); err != nil {
		return fmt.Errorf("runner: connectionTimeouts: %w", err)
	}
	if err := gctests.SetRetryBudgetLoad(opts.RetryBudgetLoad); err != nil {
		return fmt.Errorf("runner: retryBudgetLoad: %w", err)
	}
	crlog.SetLogger(opts.Logger)
	observe.Reset()
	gctests.SetWindowSchedule(!opts.ChurnDuringWindows)
	return nil
}

// claimsSourceOf says where the claims come from, as upstream's suite
// decides it.
func claimsSourceOf(opts *Options) string {
	switch {
	case opts.EnableAllSupportedFeatures:
		return "--all-features"
	case len(opts.SupportedFeatures) > 0:
		return "--supported-features"
	case opts.Kubeconfig == "":
		return "the reference gateway's features"
	case len(selectedTests(opts.RunTest)) == 1 || len(opts.ExemptFeatures) > 0:
		return "none given, so only the profiles' core features"
	}
	return "the GatewayClass's status.supportedFeatures"
}

// inProcessDefaults refuses an identity for the in-process target, fills
// in its defaults for the channel of its CRDs, and returns claimsSource
// with that channel said when it matters.
func inProcessDefaults(opts *Options, claimsSource string) (string, error) {
	if fields := identityFields(opts.Implementation); len(fields) > 0 {
		return "", fmt.Errorf("runner: %s: %w", strings.Join(fields, ", "), errIdentityInProcess)
	}
	channel, err := servedChannel()
	if err != nil {
		return "", fmt.Errorf("runner: %w", err)
	}
	if claimsSource == "the reference gateway's features" && channel != features.ChannelExperimental {
		claimsSource += fmt.Sprintf(" on the %s channel's CRDs (less its experimental features)", channel)
	}
	setInProcessDefaults(opts, channel)
	return claimsSource, nil
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

// runSuites runs the suites on the target in the phases of a run: plan
// (the two suites built from co, the tests planned, the run refused if a
// test would count in no profile), start (the header, the record begun,
// the base resources set up once), run (both suites' tests, and the
// reruns), then, in a clean-up of t once every test is over, record (the
// run record and the reports written). The target stops in its own
// clean-up, or when the run is interrupted (Options.Interrupt).
func runSuites(t *testing.T, opts *Options, co suite.ConformanceOptions, tgt *target, upTests, gcTests []suite.ConformanceTest) (*Result, error) {
	clock := newPhaseClock(tgt.began)
	h := &testHook{rec: newRecorder(opts)}
	co.Hook = h.hook
	p, err := planRun(opts, co, tgt, upTests, gcTests)
	if err != nil {
		return nil, err
	}
	h.rec.selected = p.selected
	h.reruns = p.reruns
	res, err := startRun(t, opts, p, tgt, h.rec, clock)
	if err != nil {
		return nil, err
	}
	if err := runTests(t, opts, p, tgt, h, clock); err != nil {
		return nil, err
	}
	return res, nil
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
