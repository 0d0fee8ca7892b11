package runner

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/gateway-api/conformance/utils/suite"

	"github.com/gatewitness/gatewitness/cluster/crdneeds"
	"github.com/gatewitness/gatewitness/features"
	"github.com/gatewitness/gatewitness/reports"
)

// lookupProfile and allProfiles read the profiles from the features
// registry; the suite-plumbing test replaces them with a profile of its
// own.
var (
	lookupProfile = features.LookupProfile
	allProfiles   = features.Profiles
)

// plannedTest is a test and what the run will do with it, decided as
// upstream's suite decides it.
type plannedTest struct {
	test   suite.ConformanceTest
	source reports.Source
	// runs is true if the test will run (it may still skip itself).
	runs bool
	// notSelected is true if --run-test names other tests and not this
	// one.
	notSelected bool
	// outsideProfiles is true if the test would run, but counts in none
	// of the profiles the run names, so the run leaves it out (see
	// dropUncounted).
	outsideProfiles bool
	// unclaimed lists the test's features the run does not claim.
	unclaimed []features.FeatureName
	// lacks is what the test's manifests need that the cluster's CRDs
	// lack; the run skips the test (skipLackingFields).
	lacks []crdneeds.Need
	// profiles are the requested profiles, of the test's own side, that
	// have all of the test's features: the profiles it counts in (none
	// when the run does not claim all its features).
	profiles []string
}

// side is the tests of one source with the suite that runs them.
type side struct {
	source   reports.Source
	suite    *suite.ConformanceTestSuite
	tests    []suite.ConformanceTest
	profiles []string
	planned  []plannedTest
	// run is false when the run has nothing to do on this side (a
	// --run-test of the other side's test), so the suite is not run.
	run bool
}

// planSide decides, for each test of s, whether it runs, which claimed
// features it lacks and which requested profiles it counts in. A test
// runs as upstream's ConformanceTest.Run lets it: with --run-test naming
// one test, only that test (whatever the claims); with --run-test naming
// several (selected), those of them whose features are all claimed;
// otherwise each test whose features are all claimed; never one named by
// --skip-tests.
func planSide(s *side, selected []string) {
	st := s.suite
	s.planned = make([]plannedTest, len(s.tests))
	for i, ct := range s.tests {
		p := plannedTest{test: ct, source: s.source}
		for _, f := range ct.Features {
			if !st.SupportedFeatures.Has(f) {
				p.unclaimed = append(p.unclaimed, f)
			}
		}
		switch {
		case len(selected) > 0 && !slices.Contains(selected, ct.ShortName):
			p.notSelected = true
		case st.SkipTests.Has(ct.ShortName):
		case st.RunTest != "":
			p.runs = true
		default:
			p.runs = len(p.unclaimed) == 0
		}
		if len(p.unclaimed) == 0 {
			// Upstream's suite counts a test whose features are not all
			// claimed in no profile, even when --run-test runs it.
			p.profiles = countingProfiles(ct, s.profiles)
		}
		s.planned[i] = p
	}
}

// countingProfiles returns the profiles among names that have every
// feature of ct, as upstream's report counts a test in a profile.
func countingProfiles(ct suite.ConformanceTest, names []string) []string {
	var out []string
	for _, name := range names {
		p, ok := lookupProfile(name)
		if !ok {
			continue
		}
		have := sets.New(p.Core...).Insert(p.Extended...)
		if have.HasAll(ct.Features...) {
			out = append(out, name)
		}
	}
	return out
}

// uncounted checks that each test that will run counts in a requested
// profile of its side, and returns an error naming each one that would
// count in none, with the features the closest requested profile lacks.
//
// An upstream test that no upstream profile at all can count (upstream
// v1.6.3 has a few: GRPCRouteNamedRule needs GRPCRouteNamedRouteRule,
// which is in no profile) is not refused, since no choice of profiles
// would count it and upstream's own runner runs it all the same; a note
// names it instead, and its result is in the other reports.
func uncounted(sides []*side) (notes []string, err error) {
	var lines []string
	n := 0
	for _, s := range sides {
		if !s.run {
			continue
		}
		for _, p := range s.planned {
			if !p.runs || len(p.profiles) > 0 {
				continue
			}
			if len(p.unclaimed) > 0 {
				notes = append(notes, fmt.Sprintf("%s runs because --run-test names it, but the run does not claim %s, so upstream's suite "+
					"records it as not supported and no profile counts it; claim them with --supported-features", p.test.ShortName, featureList(p.unclaimed)))
				continue
			}
			if s.source == reports.Upstream && len(countingProfiles(p.test, profileNames(s.source))) == 0 {
				notes = append(notes, fmt.Sprintf("%s runs, but no upstream profile has all its features (%s), so the upstream report cannot count it; "+
					"its result is in junit.xml, summary.md and run.json", p.test.ShortName, featureList(p.test.Features)))
				continue
			}
			n++
			if len(lines) < 12 {
				lines = append(lines, "  "+p.test.ShortName+": "+whyUncounted(p, s))
			}
		}
	}
	if n == 0 {
		return notes, nil
	}
	if len(lines) < n {
		lines = append(lines, fmt.Sprintf("  and %d more", n-len(lines)))
	}
	return notes, fmt.Errorf("%d test(s) would run but count in no requested profile, so no report would hold their results:\n%s\n"+
		"Request a profile that has all of a test's features with --conformance-profiles, or leave the test out "+
		"with --skip-tests or --exempt-features", n, strings.Join(lines, "\n"))
}

func featureList(fs []features.FeatureName) string {
	names := make([]string, len(fs))
	for i, f := range fs {
		names[i] = string(f)
	}
	return strings.Join(names, ", ")
}

func whyUncounted(p plannedTest, s *side) string {
	if len(s.profiles) == 0 {
		msg := fmt.Sprintf("no %s profile was requested", s.source)
		if others := countingProfiles(p.test, profileNames(s.source)); len(others) > 0 {
			msg += "; it counts in " + strings.Join(others, ", ")
		}
		return msg
	}
	// The requested profiles that come closest: those lacking the
	// fewest of the test's features.
	var parts []string
	fewest := -1
	for _, name := range s.profiles {
		prof, _ := lookupProfile(name)
		have := sets.New(prof.Core...).Insert(prof.Extended...)
		var lack []string
		for _, f := range p.test.Features {
			if !have.Has(f) {
				lack = append(lack, string(f))
			}
		}
		switch {
		case fewest < 0 || len(lack) < fewest:
			fewest, parts = len(lack), nil
			fallthrough
		case len(lack) == fewest:
			parts = append(parts, name+" lacks "+strings.Join(lack, ", "))
		}
	}
	msg := strings.Join(parts, "; ")
	if others := countingProfiles(p.test, profileNames(s.source)); len(others) > 0 {
		msg += " (it counts in " + strings.Join(others, ", ") + ", which was not requested)"
	}
	return msg
}

// profileNames returns the names of the registered profiles of a source,
// sorted.
func profileNames(src reports.Source) []string {
	var out []string
	for _, p := range allProfiles() {
		if p.Upstream == (src == reports.Upstream) {
			out = append(out, p.Name)
		}
	}
	slices.Sort(out)
	return out
}

// splitProfiles splits requested profiles into upstream's and gatewitness's.
func splitProfiles(ps []suite.ConformanceProfileName) (upstream, gatewitness []string) {
	for _, p := range ps {
		prof, ok := lookupProfile(string(p))
		switch {
		case !ok:
		case prof.Upstream:
			upstream = append(upstream, prof.Name)
		default:
			gatewitness = append(gatewitness, prof.Name)
		}
	}
	return upstream, gatewitness
}

// claimedProfiles returns the profiles whose core features are all in
// claimed: the profiles a run on a cluster reports on when none is named.
func claimedProfiles(claimed sets.Set[features.FeatureName]) []suite.ConformanceProfileName {
	var out []suite.ConformanceProfileName
	for _, p := range allProfiles() {
		if len(p.Core) > 0 && claimed.HasAll(p.Core...) {
			out = append(out, suite.ConformanceProfileName(p.Name))
		}
	}
	return out
}

// selectedTests returns the tests --run-test names, in order: one
// ShortName, as upstream's flag takes it, or a comma-separated list.
func selectedTests(runTest string) []string {
	names, _ := parseList(strings.TrimSpace(runTest), "")
	return names
}

// selectSeveral makes a suite's options run exactly the tests named when
// --run-test names more than one: upstream's suite takes one name in
// RunTest, so the options name none there and skip every other test
// instead, as upstream's runner would run them given the same claims and
// that --skip-tests. A test named once runs as upstream's --run-test runs
// it, and the options are left as they are.
func selectSeveral(co *suite.ConformanceOptions, selected []string, all []suite.ConformanceTest) {
	if len(selected) < 2 {
		return
	}
	co.RunTest = ""
	skip := slices.Clone(co.SkipTests)
	for _, ct := range all {
		if !slices.Contains(selected, ct.ShortName) && !slices.Contains(skip, ct.ShortName) {
			skip = append(skip, ct.ShortName)
		}
	}
	co.SkipTests = skip
}

// selectedUnclaimed returns an error naming each test that --run-test
// names among others but whose features the run does not claim: upstream's
// suite runs a test whatever the claims only when it is the one test
// named.
func selectedUnclaimed(sides []*side, selected []string) error {
	if len(selected) < 2 {
		return nil
	}
	var lines []string
	for _, s := range sides {
		for _, p := range s.planned {
			if slices.Contains(selected, p.test.ShortName) && len(p.unclaimed) > 0 {
				lines = append(lines, fmt.Sprintf("  %s needs %s", p.test.ShortName, featureList(p.unclaimed)))
			}
		}
	}
	if len(lines) == 0 {
		return nil
	}
	return fmt.Errorf("--run-test names %d tests, and the run does not claim every feature of %d of them:\n%s\n"+
		"Claim the features with --supported-features, or name the test alone: --run-test with one name runs it whatever the claims, as upstream's flag does",
		len(selected), len(lines), strings.Join(lines, "\n"))
}

// dropUncounted leaves out of the run each test that would run but counts
// in none of the profiles the run names, unless --run-test names it: with
// profiles named, the run is about them. The suites skip the tests left
// out as --skip-tests would; no profile report changes, since upstream's
// report counts a test only in the requested profiles that have all its
// features. A side left with no test to run does not run. It returns the
// header's note naming them, or "".
func dropUncounted(sides []*side, selected []string) string {
	var names []string
	for _, s := range sides {
		if !s.run {
			continue
		}
		left := 0
		for i := range s.planned {
			p := &s.planned[i]
			if p.runs && len(p.profiles) == 0 && !slices.Contains(selected, p.test.ShortName) {
				p.runs, p.outsideProfiles = false, true
				s.suite.SkipTests.Insert(p.test.ShortName)
				names = append(names, p.test.ShortName)
			}
			if p.runs {
				left++
			}
		}
		s.run = left > 0
	}
	if len(names) == 0 {
		return ""
	}
	shown := names
	const most = 8
	list := strings.Join(shown, ", ")
	if len(shown) > most {
		list = strings.Join(shown[:most], ", ") + fmt.Sprintf(" and %d more", len(shown)-most)
	}
	return fmt.Sprintf("%d test(s) whose features are claimed count in none of the profiles named, so they do not run: %s "+
		"(name them with --run-test, or name a profile that counts them)", len(names), list)
}
