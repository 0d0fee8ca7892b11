package runner

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/gateway-api/conformance/utils/suite"
	gwfeatures "sigs.k8s.io/gateway-api/pkg/features"

	gctests "github.com/gatewitness/gatewitness/conformance/tests"
	"github.com/gatewitness/gatewitness/contract/observe"
	"github.com/gatewitness/gatewitness/features"
	"github.com/gatewitness/gatewitness/reports"
)

// TestLateMissesRunAgain: a test whose only misses were within the
// suite's own lateness is rerun alone after every other test; missing
// again so makes it inconclusive (never a pass, counted as skipped in its
// profile, a skip of type inconclusive in junit.xml, both figures in its
// message); a clean rerun passes. The run is t itself (tests are named
// under the Go test function, as observe expects), so its checks run in a
// cleanup, once the run is over; no test of it may fail.
func TestLateMissesRunAgain(t *testing.T) {
	useTestProfiles(t)
	var mu sync.Mutex
	var handler func(gctests.LateMiss) bool
	saved := setLateMissHandler
	setLateMissHandler = func(h func(gctests.LateMiss) bool) {
		mu.Lock()
		defer mu.Unlock()
		handler = h
	}
	t.Cleanup(func() { setLateMissHandler = saved })
	// miss reports a late miss as tests.missedLate does, and fails t if
	// no handler takes it.
	miss := func(t *testing.T) {
		mu.Lock()
		h := handler
		mu.Unlock()
		m := gctests.LateMiss{Test: t.Name(), Assertion: "closed after 1.529s, want within [999ms, 1.5s]", Over: 29 * time.Millisecond, SuiteLateness: 40 * time.Millisecond}
		if h == nil || !h(m) {
			t.Errorf("%s", m)
		}
	}
	var started sync.Map // ShortName -> runs
	runs := func(t *testing.T, name string) int {
		v, _ := started.LoadOrStore(name, new(int))
		mu.Lock()
		defer mu.Unlock()
		*v.(*int)++
		return *v.(*int)
	}
	alone := func(t *testing.T) {
		if strings.Contains(t.Name(), observe.RerunGroup) {
			// Rerun: every other test has ended.
			for _, other := range []string{"Quick"} {
				if v, ok := started.Load(other); !ok || *v.(*int) != 1 {
					t.Errorf("rerun while %s had not run", other)
				}
			}
		}
	}
	core := []features.FeatureName{gwfeatures.SupportHTTPRoute}
	gcTests := []suite.ConformanceTest{
		{ShortName: "LateTwice", Description: "late twice", Features: core, Parallel: true, Test: func(t *testing.T, s *suite.ConformanceTestSuite) {
			alone(t)
			runs(t, "LateTwice")
			observe.Record(t, "closed", "1.529s")
			miss(t)
		}},
		{ShortName: "LateOnce", Description: "late once", Features: core, Parallel: true, Test: func(t *testing.T, s *suite.ConformanceTestSuite) {
			alone(t)
			if runs(t, "LateOnce") == 1 {
				miss(t)
			}
		}},
		{ShortName: "Quick", Description: "quick", Features: core, Parallel: true, Test: func(t *testing.T, s *suite.ConformanceTestSuite) {
			runs(t, "Quick")
		}},
	}
	dir := t.TempDir()
	o := testOptions(dir, nil)
	o.ConformanceProfiles = []suite.ConformanceProfileName{testGatewitnessProfile}
	runPlumbing(t, o, nil, gcTests, func(res *Result, _ string) { checkReruns(t, res, dir, &started) })
}

func checkReruns(t *testing.T, res *Result, dir string, started *sync.Map) {
	if res == nil || res.Run == nil {
		t.Fatalf("no run record: %+v", res)
	}
	want := map[string]reports.Result{"LateTwice": reports.Inconclusive, "LateOnce": reports.Pass, "Quick": reports.Pass}
	wantRuns := map[string]int{"LateTwice": 2, "LateOnce": 2, "Quick": 1}
	for _, tr := range res.Run.Tests {
		if tr.Result != want[tr.ShortName] {
			t.Errorf("%s: %s (%s), want %s", tr.ShortName, tr.Result, tr.Message, want[tr.ShortName])
		}
		v, _ := started.Load(tr.ShortName)
		if n := *v.(*int); n != wantRuns[tr.ShortName] {
			t.Errorf("%s ran %d times, want %d", tr.ShortName, n, wantRuns[tr.ShortName])
		}
		if tr.ShortName == "LateTwice" && (!strings.Contains(tr.Message, "29ms") || !strings.Contains(tr.Message, "40ms") || !strings.Contains(tr.Message, "Rerun:")) {
			t.Errorf("LateTwice's message %q lacks the figures of both runs", tr.Message)
		}
	}
	found := false
	for _, p := range res.Run.GatewitnessProfiles {
		if p.Name != testGatewitnessProfile {
			continue
		}
		found = true
		st := p.Core
		if st.Passed != 2 || st.Failed != 0 || st.Skipped != 1 || !strings.Contains(strings.Join(st.SkippedTests, ","), "LateTwice") {
			t.Errorf("profile %s core: %+v; want 2 passed, LateTwice skipped", p.Name, st)
		}
	}
	if !found {
		t.Errorf("no profile report %s", testGatewitnessProfile)
	}
	data, err := os.ReadFile(filepath.Join(dir, "junit.xml"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Cases []struct {
			Name    string `xml:"name,attr"`
			Skipped *struct {
				Type string `xml:"type,attr"`
			} `xml:"skipped"`
		} `xml:"testsuite>testcase"`
	}
	if err := xml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	for _, c := range doc.Cases {
		if c.Name == "LateTwice" && (c.Skipped == nil || c.Skipped.Type != "inconclusive") {
			t.Errorf("junit.xml: LateTwice is not a skip of type inconclusive")
		}
	}
}
