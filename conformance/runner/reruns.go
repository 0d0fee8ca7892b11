package runner

import (
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	confv1 "sigs.k8s.io/gateway-api/conformance/apis/v1"
	"sigs.k8s.io/gateway-api/conformance/utils/suite"
	"sigs.k8s.io/gateway-api/conformance/utils/tlog"

	gctests "github.com/gatewitness/gatewitness/conformance/tests"
	"github.com/gatewitness/gatewitness/contract/observe"
	"github.com/gatewitness/gatewitness/features"
	"github.com/gatewitness/gatewitness/reports"
)

// setLateMissHandler is tests.SetLateMissHandler; the runner's own tests
// replace it to make late misses of their own.
var setLateMissHandler = gctests.SetLateMissHandler

// reruns holds the timing tests whose windows were missed only by as much
// as the suite's own timers were late (tests.LateMiss), and reruns them.
// Such a miss does not fail the test; its result waits. Once every test of
// the run has ended, each such test that did not fail otherwise runs again,
// alone, under the subtest observe.RerunGroup: if it misses again only by
// the suite's own lateness it is inconclusive, with the figures of both
// runs; a failure of the rerun is a failure; a clean rerun is a pass.
type reruns struct {
	mu        sync.Mutex
	first     map[string][]gctests.LateMiss // by ShortName
	again     map[string][]gctests.LateMiss // misses of the reruns
	rerunning bool
	pending   int // tests of the run not yet ended
	allEnded  chan struct{}
}

// newReruns returns reruns for a run of total tests, or nil when a rerun
// cannot wait for the others: with --fail-fast some tests never end, and
// with a single parallel slot the waiting rerun would hold it.
func newReruns(opts *Options, total int) *reruns {
	if opts.FailFast || total == 0 {
		return nil
	}
	if n := testParallel(); n > 0 && n < 2 {
		return nil
	}
	return &reruns{first: map[string][]gctests.LateMiss{}, again: map[string][]gctests.LateMiss{}, pending: total, allEnded: make(chan struct{})}
}

// testParallel is -test.parallel, how many parallel tests and subtests may
// run at once (the CLI's --parallel); 0 if it cannot be read.
func testParallel() int {
	if f := flag.Lookup("test.parallel"); f != nil {
		if n, err := strconv.Atoi(f.Value.String()); err == nil {
			return n
		}
	}
	return 0
}

// scheduleWarning returns why the schedule of windows and configuration
// steps (tests.SetWindowSchedule) cannot be kept, or "". A test that
// waits for its turn holds a parallel slot, and a window's holder needs
// slots for its parallel subtests: with no more slots than parallel tests
// (the rerun's subtest counted), every slot could be held by a waiting
// test while the window's subtests wait for one.
func scheduleWarning(opts *Options, running []*side, reruns bool) string {
	if opts.ChurnDuringWindows || opts.DisableParallelTests {
		return ""
	}
	n := testParallel()
	parallel := 0
	for _, s := range running {
		for _, p := range s.planned {
			if p.runs && p.test.Parallel {
				parallel++
			}
		}
	}
	if reruns {
		parallel++
	}
	if n == 0 || n > parallel {
		return ""
	}
	return fmt.Sprintf("--parallel %d is not more than the %d parallel tests, so other tests' configuration changes may reach the gateway "+
		"while timing windows are open (a data plane that reloads may then fail timing tests); use --parallel %d or more", n, parallel, parallel+1)
}

// take is the tests' late-miss handler (tests.SetLateMissHandler).
func (r *reruns) take(m gctests.LateMiss) bool {
	short := observe.ShortName(m.Test)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.rerunning {
		r.again[short] = append(r.again[short], m)
	} else {
		r.first[short] = append(r.first[short], m)
	}
	return true
}

// missed returns the first run's late misses of a test.
func (r *reruns) missed(short string) []gctests.LateMiss {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.first[short])
}

// ended counts a test of the run as ended (its hook ran).
func (r *reruns) ended() {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pending--
	if r.pending == 0 {
		close(r.allEnded)
	}
}

// drive is the subtest observe.RerunGroup: it waits until every test has
// ended, then reruns, one after the other, the tests that late misses
// left waiting, and records their results.
func (r *reruns) drive(t *testing.T, sides []*side, restore func(*suite.ConformanceTestSuite), rec *recorder) {
	t.Parallel()
	<-r.allEnded
	r.mu.Lock()
	r.rerunning = true
	r.mu.Unlock()
	for _, s := range sides {
		for _, ct := range s.tests {
			first := r.missed(ct.ShortName)
			prev, ok := rec.result(ct.ShortName)
			if len(first) == 0 || !ok || prev.Result != reports.Pass {
				continue
			}
			restore(s.suite)
			passed := t.Run(ct.ShortName, func(t *testing.T) {
				observe.Record(t, "rerun", fmt.Sprintf("alone, after every other test: the first run missed %d window(s) by no more than the suite's own lateness", len(first)))
				gctests.ConfigStep(t)
				for _, m := range ct.Manifests {
					tlog.Logf(t, "Applying %s", m)
					s.suite.Applier.MustApplyWithCleanup(t, s.suite.Client, s.suite.TimeoutConfig, m, s.suite.CleanupTestResources)
				}
				t.Cleanup(func() { gctests.EndWindows(t) })
				ct.Test(t, s.suite)
			})
			r.mu.Lock()
			again := slices.Clone(r.again[ct.ShortName])
			r.mu.Unlock()
			tr := prev
			tr.Observations = observe.For(ct.ShortName)
			tr.DroppedObservations = observe.Dropped(ct.ShortName)
			switch {
			case !passed:
				tr.Result = reports.Fail
				tr.Message = "rerun alone after a first run that missed a window only by the suite's own lateness, it failed; its log " +
					"(the test output, under " + observe.RerunGroup + "/" + ct.ShortName + ") says why. First run: " + missList(first)
			case len(again) > 0:
				tr.Result = reports.Inconclusive
				tr.Message = "missed a window by no more than the suite's own timers were late, in its run and again rerun alone. " +
					"First run: " + missList(first) + ". Rerun: " + missList(again)
			default:
				tr.Message = ""
			}
			rec.record(tr, true)
		}
	}
}

func missList(ms []gctests.LateMiss) string {
	parts := make([]string, len(ms))
	for i, m := range ms {
		parts[i] = m.String()
	}
	return strings.Join(parts, "; ")
}

// settleProfiles corrects gatewitness's profile reports, which upstream's
// suite built from each test's first run, for the tests whose result the
// reruns decided: a rerun that failed counts as failed; an inconclusive
// test as skipped (it never counts as passed), with its name in
// SkippedTests. Results and summaries are compiled again as upstream's
// suite compiles them.
func settleProfiles(profiles []confv1.ProfileReport, tests []reports.TestResult, byName map[string]suite.ConformanceTest) {
	for _, tr := range tests {
		if tr.Source != reports.Gatewitness || (tr.Result != reports.Fail && tr.Result != reports.Inconclusive) {
			continue
		}
		ct, ok := byName[tr.ShortName]
		if !ok {
			continue
		}
		for i := range profiles {
			if !slices.Contains(tr.Profiles, profiles[i].Name) {
				continue
			}
			prof, ok := lookupProfile(profiles[i].Name)
			if !ok {
				continue
			}
			st := &profiles[i].Core
			if slices.ContainsFunc(ct.Features, func(f features.FeatureName) bool { return !slices.Contains(prof.Core, f) }) {
				if profiles[i].Extended == nil {
					continue
				}
				st = &profiles[i].Extended.Status
			}
			if st.Passed == 0 || slices.Contains(st.FailedTests, tr.ShortName) || slices.Contains(st.SkippedTests, tr.ShortName) {
				continue // counted as it is already
			}
			st.Passed--
			if tr.Result == reports.Fail {
				st.Failed++
				st.FailedTests = append(st.FailedTests, tr.ShortName)
			} else {
				st.Skipped++
				st.SkippedTests = append(st.SkippedTests, tr.ShortName)
			}
			profiles[i].Core.Result = statusResult(profiles[i].Core)
			summary := "Core tests " + statusSummary(profiles[i].Core)
			if ext := profiles[i].Extended; ext != nil {
				ext.Result = statusResult(ext.Status)
				summary += ". Extended tests " + statusSummary(ext.Status)
			}
			profiles[i].Summary = summary + "."
		}
	}
}

// statusResult and statusSummary are how upstream's suite compiles a
// status's result and summary.
func statusResult(s confv1.Status) confv1.Result {
	switch {
	case s.Failed > 0:
		return confv1.Failure
	case s.Skipped > 0:
		return confv1.Partial
	}
	return confv1.Success
}

func statusSummary(s confv1.Status) string {
	switch s.Result {
	case confv1.Partial:
		return fmt.Sprintf("partially succeeded with %d test skips", s.Skipped)
	case confv1.Failure:
		return fmt.Sprintf("failed with %d test failures", s.Failed)
	}
	return "succeeded"
}
