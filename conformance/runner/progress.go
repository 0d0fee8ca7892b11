package runner

import (
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gatewitness/gatewitness/contract/observe"
	"github.com/gatewitness/gatewitness/features"
	"github.com/gatewitness/gatewitness/reports"
)

// recorder collects each test's result as the suites report it through
// their hook, which runs as the test's last cleanup, and writes the
// progress lines.
type recorder struct {
	progress io.Writer
	interval time.Duration
	testLog  func(string) string
	planned  map[string]plannedTest
	total    int // tests planned to run
	// selected are the tests --run-test names, if any.
	selected []string
	// changed, when set, is called (without the lock) whenever a test
	// starts or its result is filed.
	changed func()

	mu       sync.Mutex
	begun    time.Time
	last     time.Time // of the last line about a test
	done     int
	running  map[string]time.Time
	endedAt  map[string]time.Time // when a running test's function and subtests ended
	results  map[string]reports.TestResult
	states   map[string][]reports.ObjectState // of failed tests, before their clean-up
	stopped  bool
	frozen   bool // see freeze
	stopTick chan struct{}
}

func newRecorder(o *Options) *recorder {
	interval := o.ProgressInterval
	if interval <= 0 {
		interval = DefaultProgressInterval
	}
	return &recorder{
		progress: o.Progress,
		interval: interval,
		testLog:  o.TestLog,
		planned:  map[string]plannedTest{},
		running:  map[string]time.Time{},
		endedAt:  map[string]time.Time{},
		results:  map[string]reports.TestResult{},
		states:   map[string][]reports.ObjectState{},
		stopTick: make(chan struct{}),
	}
}

// begin starts the clock and, with a progress writer, the goroutine that
// names the running tests when the output has been quiet for a while.
func (r *recorder) begin(sides []*side) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range sides {
		for _, p := range s.planned {
			r.planned[p.test.ShortName] = p
			if p.runs && s.run {
				r.total++
			}
		}
	}
	r.begun = time.Now()
	r.last = r.begun
	if r.progress == nil {
		return
	}
	tick := min(max(r.interval/10, 10*time.Millisecond), time.Second)
	go r.watch(tick)
}

func (r *recorder) watch(tick time.Duration) {
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-r.stopTick:
			return
		case now := <-t.C:
			r.mu.Lock()
			if !r.stopped && len(r.running) > 0 && now.Sub(r.last) >= r.interval {
				r.last = now
				fmt.Fprintf(r.progress, "%s %s  … nothing finished for %s; running: %s\n",
					r.counter(), r.elapsed(now), r.interval.Round(time.Second), r.runningList(now))
			}
			r.mu.Unlock()
		}
	}
}

// stop ends the progress output.
func (r *recorder) stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.stopped {
		r.stopped = true
		close(r.stopTick)
	}
}

func (r *recorder) counter() string {
	w := len(fmt.Sprint(r.total))
	return fmt.Sprintf("[%*d/%d]", w, r.done, r.total)
}

func (r *recorder) elapsed(now time.Time) string {
	return fmt.Sprintf("%5s", now.Sub(r.begun).Round(time.Second))
}

// runningList names the running tests, longest running first, with how
// long each has run. The caller holds r.mu.
func (r *recorder) runningList(now time.Time) string {
	names := make([]string, 0, len(r.running))
	for n := range r.running {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b string) int { return r.running[a].Compare(r.running[b]) })
	const shown = 6
	var parts []string
	for i, n := range names {
		if i == shown {
			parts = append(parts, fmt.Sprintf("and %d more", len(names)-shown))
			break
		}
		parts = append(parts, fmt.Sprintf("%s (%s)", n, now.Sub(r.running[n]).Round(time.Second)))
	}
	return strings.Join(parts, ", ")
}

// setState keeps what the cluster held when the test name failed.
func (r *recorder) setState(name string, state []reports.ObjectState) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.states[name] = state
}

// start marks the test name as started now.
func (r *recorder) start(name string) {
	r.mu.Lock()
	if r.frozen {
		r.mu.Unlock()
		return
	}
	r.running[name] = time.Now()
	r.mu.Unlock()
	r.notify()
}

// end marks the end of the running test name: its function and its
// subtests are over, its clean-up (which may wait for other tests) is not.
func (r *recorder) end(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.running[name]; ok {
		r.endedAt[name] = time.Now()
	}
}

func (r *recorder) notify() {
	if r.changed != nil {
		r.changed()
	}
}

// freeze stops the recorder taking results: those of the tests that end
// after an interruption are not theirs to keep. It returns when it froze.
func (r *recorder) freeze() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.frozen = true
	return time.Now()
}

// progressOf returns what the recorder knows of the test name: its result
// if it has one, else whether and since when it runs.
func (r *recorder) progressOf(name string) (tr reports.TestResult, done bool, started time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if tr, ok := r.results[name]; ok {
		return tr, true, time.Time{}
	}
	return reports.TestResult{}, false, r.running[name]
}

// record files a test's result and prints its progress line.
func (r *recorder) record(tr reports.TestResult, counted bool) {
	r.mu.Lock()
	defer r.notify()
	defer r.mu.Unlock()
	if r.frozen {
		return
	}
	now := time.Now()
	if st, ok := r.running[tr.ShortName]; ok {
		end := now
		if e, ok := r.endedAt[tr.ShortName]; ok {
			end = e
		}
		tr.Duration = end.Sub(st)
		tr.Started = st
		delete(r.running, tr.ShortName)
		delete(r.endedAt, tr.ShortName)
	}
	r.results[tr.ShortName] = tr
	if !counted {
		return
	}
	r.done++
	if r.progress == nil || r.stopped {
		return
	}
	r.last = now
	line := fmt.Sprintf("%s %s  %-4s %s (%s)", r.counter(), r.elapsed(now), strings.ToUpper(string(tr.Result)), tr.ShortName, tr.Duration.Round(time.Millisecond))
	if tr.Result != reports.Pass && tr.Message != "" {
		first, _, _ := strings.Cut(tr.Message, "\n")
		if len(first) > 160 {
			first = first[:157] + "..."
		}
		line += ": " + first
	}
	fmt.Fprintln(r.progress, line)
}

func (r *recorder) result(name string) (reports.TestResult, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	tr, ok := r.results[name]
	return tr, ok
}

// testResult builds a test's result from how its subtest ended.
func (r *recorder) testResult(p plannedTest, failed, skipped bool, selected []string) reports.TestResult {
	ct := p.test
	tr := reports.TestResult{
		ShortName:           ct.ShortName,
		Source:              p.source,
		Description:         ct.Description,
		Features:            slices.Clone(ct.Features),
		Result:              reports.Pass,
		Profiles:            p.profiles,
		Observations:        observe.For(ct.ShortName),
		DroppedObservations: observe.Dropped(ct.ShortName),
	}
	switch {
	case failed:
		tr.Result = reports.Fail
		r.mu.Lock()
		tr.State = r.states[ct.ShortName]
		r.mu.Unlock()
		tr.Message = "the test failed; its log (the test output) says why"
		if r.testLog != nil {
			tr.Log = r.testLog(ct.ShortName)
			if a := FailedAssertions(tr.Log); a != "" {
				tr.Message = a
			}
		}
	case skipped:
		tr.Result = reports.Skip
		tr.Message, tr.Unclaimed = skipReason(p, selected, r.testLog)
	}
	return tr
}

// skipReason says why a test was skipped, as upstream's suite decided it;
// selected are the tests --run-test names.
func skipReason(p plannedTest, selected []string, testLog func(string) string) (string, []features.FeatureName) {
	switch {
	case p.notSelected || len(selected) > 0 && !slices.Contains(selected, p.test.ShortName):
		return "not selected: --run-test names " + strings.Join(selected, ", "), nil
	case p.outsideProfiles:
		return "not run: it counts in none of the profiles named", nil
	case len(p.lacks) > 0:
		return lacksReason(p.lacks), nil
	case !p.runs && len(p.unclaimed) == 0:
		return "skipped by --skip-tests", nil
	case !p.runs:
		names := make([]string, len(p.unclaimed))
		for i, f := range p.unclaimed {
			names[i] = string(f)
		}
		return "the run does not claim " + strings.Join(names, ", "), slices.Clone(p.unclaimed)
	}
	msg := "the test skipped itself; its log says why"
	if testLog != nil {
		if log := testLog(p.test.ShortName); log != "" {
			if last := lastReasonLine(log); last != "" {
				msg = "the test skipped itself: " + last
			}
		}
	}
	return msg, nil
}

// lastReasonLine returns the last line of a test's log that can say why
// it skipped itself: not go test's own "=== " and "--- " lines, and not
// the lines upstream's Applier logs as it deletes the test's manifests
// (see cleanupLine), which come after the skip because t.Cleanup
// functions run once the test has stopped.
func lastReasonLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if l != "" && !strings.HasPrefix(l, "=== ") && !strings.HasPrefix(l, "--- ") && !cleanupLine.MatchString(l) {
			return l
		}
	}
	return ""
}

// cleanupLine matches what upstream's Applier logs when its cleanup
// deletes an object a test applied (utils/kubernetes/apply.go, through
// tlog: the file and line, a timestamp, "Deleting", the name and kind),
// e.g. "apply.go:279: 2026-11-28T08:48:38.6Z: Deleting mesh-probe-http HTTPRoute".
var cleanupLine = regexp.MustCompile(`^apply\.go:\d+: \S+: Deleting \S+ \S+$`)

// writeHeader writes the lines a run starts with: what is tested, with
// which claims, profiles and tests.
func writeHeader(w io.Writer, info reports.Run, sides []*side, warnings, notes []string) {
	fmt.Fprintf(w, "target:       %s\n", info.Target)
	gc := info.Target.GatewayClass
	if ctrl := info.Target.Controller; ctrl != "" {
		gc += ", controller " + ctrl
	} else {
		gc += " (not readable yet; the set-up waits for it to be Accepted)"
	}
	fmt.Fprintf(w, "GatewayClass: %s\n", gc)
	names := make([]string, len(info.Claims.Features))
	for i, f := range info.Claims.Features {
		names[i] = string(f)
	}
	fmt.Fprintf(w, "features:     %d claimed (%s): %s\n", len(names), info.Claims.Source, strings.Join(names, ", "))
	fmt.Fprintf(w, "profiles:     %s\n", profilesLine(sides))
	fmt.Fprintf(w, "tests:        %s\n", testsLine(sides))
	env := info.Environment
	fmt.Fprintf(w, "versions:     gatewitness %s, upstream suite %s, Gateway API CRDs %s (%s), Kubernetes %s, timing tolerance %s\n",
		env.GatewitnessVersion, env.SuiteVersion, orUnknown(env.GatewayAPIVersion), orUnknown(env.GatewayAPIChannel),
		orUnknown(env.KubernetesVersion), info.TimingTolerance)
	for _, warn := range warnings {
		fmt.Fprintf(w, "warning:      %s\n", warn)
	}
	for _, note := range notes {
		fmt.Fprintf(w, "note:         %s\n", note)
	}
	fmt.Fprintln(w)
}

// profilesLine names each side's profiles, and why a side does not run.
func profilesLine(sides []*side) string {
	var profiles []string
	for _, s := range sides {
		ps := "none"
		if len(s.profiles) > 0 {
			ps = strings.Join(s.profiles, ", ")
		}
		if !s.run {
			ps += " (not run: " + whyNotRun(s) + ")"
		}
		profiles = append(profiles, fmt.Sprintf("%s report: %s", s.source, ps))
	}
	return strings.Join(profiles, "; ")
}

// whyNotRun says why a side runs none of its tests.
func whyNotRun(s *side) string {
	switch {
	case slices.ContainsFunc(s.planned, func(p plannedTest) bool { return p.outsideProfiles }):
		return "none of its tests counts in the profiles named"
	case len(s.planned) == 0:
		return "it has no tests"
	case !slices.ContainsFunc(s.planned, func(p plannedTest) bool { return !p.notSelected }):
		return "--run-test names no test of it"
	}
	return "the run claims the features of none of its tests, or --skip-tests names them"
}

// testsLine counts the tests that will run, of the sides that run (the
// others are in no record of the run: counting them would make the
// header's total differ from the summary's), and says why the others
// are skipped.
func testsLine(sides []*side) string {
	total, runs := 0, 0
	var perSide []string
	for _, s := range sides {
		if !s.run {
			continue
		}
		n := 0
		for _, p := range s.planned {
			if p.runs {
				n++
			}
		}
		total += len(s.tests)
		runs += n
		perSide = append(perSide, fmt.Sprintf("%d %s", n, s.source))
	}
	why := "their features are not claimed, or --skip-tests names them"
	named, notNamed := 0, 0
	for _, s := range sides {
		for _, p := range s.planned {
			switch {
			case p.notSelected:
				notNamed++
			case p.outsideProfiles:
				why = "their features are not claimed, they count in none of the profiles named, or --skip-tests names them"
				named++
			case len(p.lacks) > 0:
				why = "their features are not claimed, the cluster's CRDs lack what their manifests need (see the note), or --skip-tests names them"
				named++
			default:
				named++
			}
		}
	}
	switch {
	case notNamed > 0 && named == 1:
		why = "--run-test names one test"
	case notNamed > 0:
		why = fmt.Sprintf("--run-test names %d tests", named)
	}
	return fmt.Sprintf("%d of %d will run (%s); %d skipped: %s", runs, total, strings.Join(perSide, ", "), total-runs, why)
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
