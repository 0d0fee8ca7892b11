package runner

import (
	"errors"
	"fmt"
	"runtime"
	"slices"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/gateway-api/conformance/utils/suite"
	"sigs.k8s.io/gateway-api/pkg/consts"

	gctests "github.com/gatewitness/gatewitness/conformance/tests"
	"github.com/gatewitness/gatewitness/features"
	"github.com/gatewitness/gatewitness/internal/version"
	"github.com/gatewitness/gatewitness/reports"
)

// runPlan is what the plan phase of a run decided: the suites and their
// tests, the notes for the header, and the part of the run's record known
// before it starts.
type runPlan struct {
	// co are the suites' options, with the profiles the run reports on.
	co suite.ConformanceOptions
	// sides are both suites, upstream's first; running those that run.
	sides, running []*side
	// selected are the tests --run-test names, if any.
	selected []string
	// notes are the header's notes.
	notes []string
	// reruns, when not nil, reruns the timing tests whose windows the
	// suite's own lateness may have missed.
	reruns *reruns
	// info is the record of the run before it starts.
	info reports.Run
	// explicitProfiles is true when the options named the profiles.
	explicitProfiles bool
}

// planRun builds the two suites (upstream's tests and gatewitness's) from
// co, plans each test, and refuses the run if there is nothing to run, a
// test --run-test names is not claimed, or a test would count in no
// requested profile.
func planRun(opts *Options, co suite.ConformanceOptions, tgt *target, upTests, gcTests []suite.ConformanceTest) (*runPlan, error) {
	p := &runPlan{co: co, explicitProfiles: len(co.ConformanceProfiles) > 0, selected: selectedTests(co.RunTest)}
	selectSeveral(&p.co, p.selected, append(slices.Clone(upTests), gcTests...))
	if err := p.buildSuites(opts, upTests, gcTests); err != nil {
		return nil, err
	}
	if err := p.planTests(opts); err != nil {
		return nil, err
	}
	total := 0
	for _, s := range p.running {
		total += len(s.tests)
	}
	p.reruns = newReruns(opts, total)
	if w := scheduleWarning(opts, p.running, p.reruns != nil); w != "" {
		opts.Warnings = append(opts.Warnings, w)
		gctests.SetWindowSchedule(false)
	}
	tgt.info.Controller = gatewayClassController(p.co.Client, p.co.GatewayClassName, p.co.TimeoutConfig.GetTimeout)
	p.info = runInfo(opts, tgt, p.sides, p.explicitProfiles)
	// Before the run, the report holds what the suite read from the
	// cluster: the Gateway API version and channel of its CRDs.
	if r, err := p.sides[0].suite.Report(); err == nil {
		p.info.Environment.GatewayAPIVersion, p.info.Environment.GatewayAPIChannel = r.GatewayAPIVersion, r.GatewayAPIChannel
	}
	return p, nil
}

// buildSuites builds upstream's suite and gatewitness's. With no profile
// named, the run reports on every profile whose core features it claims
// (on a cluster the claims may come from the GatewayClass, known only once
// upstream's suite is built), and with --run-test on the profiles of their
// sides that count the tests it names.
func (p *runPlan) buildSuites(opts *Options, upTests, gcTests []suite.ConformanceTest) error {
	upProfiles, gcProfiles := splitProfiles(p.co.ConformanceProfiles)
	up := &side{source: reports.Upstream, tests: upTests, profiles: upProfiles}
	gc := &side{source: reports.Gatewitness, tests: gcTests, profiles: gcProfiles}
	p.sides = []*side{up, gc}
	var err error
	if up.suite, err = p.build(up.profiles); err != nil {
		return err
	}
	if !p.explicitProfiles {
		p.co.ConformanceProfiles = claimedProfiles(up.suite.SupportedFeatures)
		for _, s := range p.sides {
			for _, ct := range s.tests {
				if !slices.Contains(p.selected, ct.ShortName) {
					continue
				}
				for _, name := range countingProfiles(ct, profileNames(s.source)) {
					if !slices.Contains(p.co.ConformanceProfiles, suite.ConformanceProfileName(name)) {
						p.co.ConformanceProfiles = append(p.co.ConformanceProfiles, suite.ConformanceProfileName(name))
					}
				}
			}
		}
		opts.ConformanceProfiles = p.co.ConformanceProfiles
		up.profiles, gc.profiles = splitProfiles(p.co.ConformanceProfiles)
		if up.suite, err = p.build(up.profiles); err != nil {
			return err
		}
	}
	gc.suite, err = p.build(gc.profiles)
	return err
}

// build builds one suite for profiles, with a RestConfig of its own
// (tests change its UserAgent).
func (p *runPlan) build(profiles []string) (*suite.ConformanceTestSuite, error) {
	c := p.co
	c.ConformanceProfiles = nil
	for _, name := range profiles {
		c.ConformanceProfiles = append(c.ConformanceProfiles, suite.ConformanceProfileName(name))
	}
	if p.co.RestConfig != nil {
		c.RestConfig = rest.CopyConfig(p.co.RestConfig)
	}
	s, err := suite.NewConformanceTestSuite(c)
	if err != nil {
		return nil, fmt.Errorf("runner: creating the upstream suite: %w", err)
	}
	return s, nil
}

// planTests plans each side's tests, decides which sides run, and
// gathers the header's notes.
func (p *runPlan) planTests(opts *Options) error {
	for _, s := range p.sides {
		planSide(s, p.selected)
		s.run = len(s.tests) > 0 && (len(p.selected) == 0 || slices.ContainsFunc(s.tests, func(ct suite.ConformanceTest) bool { return slices.Contains(p.selected, ct.ShortName) }))
	}
	if err := selectedUnclaimed(p.sides, p.selected); err != nil {
		return fmt.Errorf("runner: %w", err)
	}
	// Gatewitness's tests whose manifests need what the cluster's CRDs
	// lack are skipped, naming the field (cluster/crdneeds).
	for _, s := range p.sides {
		if s.source != reports.Gatewitness {
			continue
		}
		if note, warn := skipLackingFields(p.co.Client, s, p.co.TimeoutConfig.GetTimeout); note != "" || warn != "" {
			p.notes = appendNonEmpty(p.notes, note)
			opts.Warnings = appendNonEmpty(opts.Warnings, warn)
		}
	}
	// Profiles the user named, not the in-process defaults: the run is
	// about them, and leaves out what counts in none (dropUncounted).
	if p.explicitProfiles && !opts.defaultProfiles {
		if note := dropUncounted(p.sides, p.selected); note != "" {
			p.notes = append(p.notes, note)
		}
	}
	p.running = slices.DeleteFunc(slices.Clone(p.sides), func(s *side) bool { return !s.run })
	if len(p.running) == 0 {
		return errors.New("runner: there is no test to run")
	}
	if p.explicitProfiles || opts.ReportDir != "" || opts.ReportOutputPath != "" {
		more, err := uncounted(p.sides)
		if err != nil {
			return fmt.Errorf("runner: %w", err)
		}
		p.notes = append(p.notes, more...)
	}
	return nil
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
		ReportFolder: o.ReportFolder,
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
