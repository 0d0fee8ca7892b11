package runner

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/gateway-api/conformance/utils/suite"
	gwfeatures "sigs.k8s.io/gateway-api/pkg/features"

	"github.com/gatewitness/gatewitness/features"
	"github.com/gatewitness/gatewitness/reports"
)

// TestDurationIsTheTestsOwn: a parallel test whose clean-up takes a while
// (as a clean-up waits for other tests' timing windows to close) is timed
// to the end of its own function, not to the end of its clean-up.
func TestDurationIsTheTestsOwn(t *testing.T) {
	useTestProfiles(t)
	core := []features.FeatureName{gwfeatures.SupportHTTPRoute}
	const wait = 100 * time.Millisecond
	var cleanupBegan, cleanupEnded time.Time
	gcTests := []suite.ConformanceTest{
		{ShortName: "Waiting", Features: core, Parallel: true, Test: func(t *testing.T, _ *suite.ConformanceTestSuite) {
			t.Cleanup(func() {
				cleanupBegan = time.Now()
				// Time must pass for the durations to differ: the wait
				// ends at a deadline, it synchronises nothing.
				for time.Since(cleanupBegan) < wait {
					time.Sleep(time.Millisecond)
				}
				cleanupEnded = time.Now()
			})
		}},
	}
	o := testOptions(t.TempDir(), nil)
	runPlumbing(t, o, nil, gcTests, func(res *Result, _ string) {
		tr := resultsByName(res.Run)["Waiting"]
		if tr.Result != reports.Pass {
			t.Fatalf("result %s, want pass", tr.Result)
		}
		if end := tr.Started.Add(tr.Duration); end.After(cleanupBegan) {
			t.Errorf("the duration %v ends %v after the test's clean-up began: it counts the clean-up, which took %v",
				tr.Duration, end.Sub(cleanupBegan), cleanupEnded.Sub(cleanupBegan))
		}
	})
}

// TestInterruptRecordsWhatFinished: a signal on Options.Interrupt while
// a test runs ends the run's record at once: the test that finished keeps
// its pass, the one running is interrupted (not failed), the one not
// started is interrupted as not started, the record says by which signal,
// and no upstream report is written. The run's own end, later, keeps that
// record.
func TestInterruptRecordsWhatFinished(t *testing.T) {
	useTestProfiles(t)
	core := []features.FeatureName{gwfeatures.SupportHTTPRoute}
	running, release := make(chan struct{}), make(chan struct{})
	sigs := make(chan os.Signal, 1)
	interrupted := make(chan *Result, 1)
	upTests := []suite.ConformanceTest{
		{ShortName: "Finished", Features: core, Test: func(*testing.T, *suite.ConformanceTestSuite) {}},
		{ShortName: "Running", Features: core, Test: func(t *testing.T, _ *suite.ConformanceTestSuite) {
			close(running)
			<-release
			// A result that comes after the interruption is not kept.
			t.Skip("skips once the run is interrupted")
		}},
		{ShortName: "NotStarted", Features: core, Test: func(*testing.T, *suite.ConformanceTestSuite) {}},
	}
	dir := t.TempDir()
	o := testOptions(dir, nil)
	o.Interrupt = sigs
	o.OnInterrupt = func(r *Result) { interrupted <- r }
	var got *Result
	go func() {
		defer close(release)
		<-running
		sigs <- os.Interrupt
		select {
		case got = <-interrupted:
		case <-time.After(time.Minute):
			t.Error("OnInterrupt was not called within a minute of the signal")
			return
		}
		checkInterruptedRecord(t, got.Run)
		data, err := os.ReadFile(filepath.Join(dir, reports.RunFileName))
		if err != nil {
			t.Error(err)
			return
		}
		written, err := reports.ReadRunJSON(bytes.NewReader(data))
		if err != nil {
			t.Error(err)
			return
		}
		checkInterruptedRecord(t, written)
		for _, name := range []string{reports.UpstreamDirName, reports.IncompleteRunFileName} {
			if _, err := os.Stat(filepath.Join(dir, name)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s is in the report folder of an interrupted run (%v)", name, err)
			}
		}
	}()
	runPlumbing(t, o, upTests, nil, func(res *Result, _ string) {
		if res != got || res.Run.Status != reports.RunInterrupted {
			t.Errorf("the run's end replaced the interrupted record (status %q)", res.Run.Status)
		}
	})
}

func checkInterruptedRecord(t *testing.T, run *reports.Run) {
	t.Helper()
	if run.Status != reports.RunInterrupted || run.Interruption == nil || run.Interruption.Signal != "SIGINT" {
		t.Errorf("status %q, interruption %+v; want interrupted by SIGINT", run.Status, run.Interruption)
	}
	if run.Conformance != nil || run.GatewitnessProfiles != nil {
		t.Error("an interrupted run has profile results")
	}
	want := map[string]string{"Finished": "pass: ", "Running": "interrupted: cut short after", "NotStarted": "interrupted: not started: the run was interrupted by SIGINT first"}
	for _, tr := range run.Tests {
		if w, ok := want[tr.ShortName]; ok && !strings.HasPrefix(string(tr.Result)+": "+tr.Message, w) {
			t.Errorf("%s: %s: %q, want %q...", tr.ShortName, tr.Result, tr.Message, w)
		}
		delete(want, tr.ShortName)
	}
	if len(want) > 0 {
		t.Errorf("tests missing from the record: %v", want)
	}
}

// TestHeaderSaysWhyASideDoesNotRun: a side none of whose tests is claimed
// is "not run" for that reason, not for a --run-test that was not given.
func TestHeaderSaysWhyASideDoesNotRun(t *testing.T) {
	useTestProfiles(t)
	core := []features.FeatureName{gwfeatures.SupportHTTPRoute}
	upTests := []suite.ConformanceTest{{ShortName: "Up", Features: core, Test: func(*testing.T, *suite.ConformanceTestSuite) {}}}
	gcTests := []suite.ConformanceTest{{ShortName: "Unclaimed", Features: append(slices.Clone(core), features.SupportHTTPRouteRetry), Test: mustNotRun}}
	o := testOptions(t.TempDir(), nil)
	o.ConformanceProfiles = []suite.ConformanceProfileName{testUpstreamProfile}
	runPlumbing(t, o, upTests, gcTests, func(_ *Result, progress string) {
		want := "gatewitness report: none (not run: the run claims the features of none of its tests, or --skip-tests names them)"
		if !strings.Contains(progress, want) || strings.Contains(progress, "--run-test names no test") {
			t.Errorf("the header does not say %q:\n%s", want, progress)
		}
	})
}
