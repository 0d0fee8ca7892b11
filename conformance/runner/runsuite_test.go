package runner

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	confv1 "sigs.k8s.io/gateway-api/conformance/apis/v1"
	"sigs.k8s.io/gateway-api/conformance/utils/config"
	"sigs.k8s.io/gateway-api/conformance/utils/suite"
	"sigs.k8s.io/gateway-api/pkg/consts"
	gwfeatures "sigs.k8s.io/gateway-api/pkg/features"
	"sigs.k8s.io/yaml"

	"github.com/gatewitness/gatewitness/contract/observe"
	"github.com/gatewitness/gatewitness/features"
	"github.com/gatewitness/gatewitness/reports"
)

// fakeCluster returns a fake API server holding one Gateway API CRD with
// the suite's version annotations, which is all the suite needs to start.
func fakeCluster(t *testing.T) client.WithWatch {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{
		Name: "httproutes.gateway.networking.k8s.io",
		Annotations: map[string]string{
			consts.BundleVersionAnnotation: consts.BundleVersion,
			consts.ChannelAnnotation:       "standard",
		},
	}}
	return fake.NewClientBuilder().WithScheme(scheme).WithObjects(crd).Build()
}

// The suite-plumbing tests count their tests in two profiles of their own,
// one on each side, whose core is HTTPRoute alone: a profile with Gateway
// in its core would make the suite's set-up wait for a GatewayClass.
const (
	testUpstreamProfile    = "RUNNER-TEST-UPSTREAM"
	testGatewitnessProfile = "RUNNER-TEST-GATEWITNESS"
)

var registerTestProfiles = sync.OnceFunc(func() {
	for _, name := range []string{testUpstreamProfile, testGatewitnessProfile} {
		suite.RegisterConformanceProfile(suite.ConformanceProfile{
			Name:             suite.ConformanceProfileName(name),
			CoreFeatures:     sets.New(gwfeatures.SupportHTTPRoute),
			ExtendedFeatures: sets.New(features.SupportHTTPRouteRetry),
		})
	}
})

// useTestProfiles makes the runner see the two test profiles.
func useTestProfiles(t *testing.T) {
	registerTestProfiles()
	lookup, all := lookupProfile, allProfiles
	t.Cleanup(func() { lookupProfile, allProfiles = lookup, all })
	profile := func(name string) features.Profile {
		return features.Profile{
			Name:     name,
			Core:     []features.FeatureName{gwfeatures.SupportHTTPRoute},
			Extended: []features.FeatureName{features.SupportHTTPRouteRetry},
			Upstream: name == testUpstreamProfile,
		}
	}
	lookupProfile = func(name string) (features.Profile, bool) {
		if name == testUpstreamProfile || name == testGatewitnessProfile {
			return profile(name), true
		}
		return lookup(name)
	}
	allProfiles = func() []features.Profile {
		return append(all(), profile(testUpstreamProfile), profile(testGatewitnessProfile))
	}
}

func testOptions(dir string, progress *bytes.Buffer) Options {
	o := DefaultOptions()
	o.ReportDir = dir
	o.Progress = progress
	o.ProgressInterval = time.Hour
	o.SupportedFeatures = []features.FeatureName{gwfeatures.SupportHTTPRoute}
	o.ConformanceProfiles = []suite.ConformanceProfileName{testUpstreamProfile, testGatewitnessProfile}
	o.Implementation.Organization, o.Implementation.Project = "acme", "gw"
	o.Implementation.URL, o.Implementation.Version = "https://acme.example", "v1.0.0"
	o.Implementation.Contact = []string{"@acme"}
	o.CommandLine = []string{"gatewitness", "run", "--kubeconfig", "/tmp/my cluster"}
	return o
}

// TestRunSuiteRecordsAndReports runs tests that need no cluster through
// the runner's suite plumbing, as the in-process target sets it up (a
// RestConfig that reaches nothing, and the client put back): two on
// upstream's side, three on gatewitness's. It checks the results, the
// header and progress lines, and that each report holds its own side's
// tests only. The checks run in a cleanup, since the run completes in t's
// cleanups.
func TestRunSuiteRecordsAndReports(t *testing.T) {
	useTestProfiles(t)
	dir := t.TempDir()
	c := fakeCluster(t)
	var progress bytes.Buffer
	o := testOptions(dir, &progress)

	// clientSeen records whether each test found the fake client in the
	// suite rather than the per-test client the suite builds.
	var mu sync.Mutex
	clientSeen := map[string]bool{}
	checkClient := func(t *testing.T, s *suite.ConformanceTestSuite) {
		mu.Lock()
		defer mu.Unlock()
		got := s.Client
		if rc, ok := got.(recordingClient); ok { // a serial test's, which keeps what it applies
			got = rc.Client
		}
		clientSeen[t.Name()] = got == client.Client(c)
	}
	core := []features.FeatureName{gwfeatures.SupportHTTPRoute}
	upTests := []suite.ConformanceTest{
		{ShortName: "Passes", Description: "records", Features: core, Test: func(t *testing.T, s *suite.ConformanceTestSuite) {
			checkClient(t, s)
			observe.Record(t, "attempts", 3)
		}},
		{ShortName: "NeedsRetry", Description: "unsupported", Features: []features.FeatureName{gwfeatures.SupportHTTPRoute, features.SupportHTTPRouteRetry},
			Test: func(t *testing.T, s *suite.ConformanceTestSuite) {
				t.Error("ran a test whose feature is not supported")
			}},
	}
	gcTests := []suite.ConformanceTest{
		{ShortName: "ParallelPasses", Description: "parallel", Features: core, Parallel: true, Test: func(t *testing.T, s *suite.ConformanceTestSuite) {
			checkClient(t, s)
			time.Sleep(phaseWork) // work the parallel tests' phase must count
			if err := s.Client.List(context.Background(), &apiextensionsv1.CustomResourceDefinitionList{}); err != nil {
				t.Errorf("the client put back does not work: %v", err)
			}
		}},
		{ShortName: "SkipsItself", Description: "skips", Features: core, Test: func(t *testing.T, s *suite.ConformanceTestSuite) {
			t.Skip("not today")
		}},
		{ShortName: "GatewitnessPasses", Description: "gatewitness", Features: core, Test: func(t *testing.T, s *suite.ConformanceTestSuite) {
			observe.Record(t, "gap", "301ms")
			time.Sleep(phaseWork) // work the serial tests' phase must count
		}},
	}
	co, tgt := pluggedInProcess(&o, c)
	observe.Reset()
	var res *Result
	t.Cleanup(func() {
		if res == nil {
			return
		}
		checkRun(t, res, dir, progress.String())
		for _, name := range []string{"Passes", "ParallelPasses"} {
			if !clientSeen[t.Name()+"/"+name] {
				t.Errorf("%s did not find the runner's client in the suite", name)
			}
		}
	})
	var err error
	res, err = runSuites(t, &o, co, tgt, upTests, gcTests)
	if err != nil {
		t.Fatal(err)
	}
	if res.Run != nil {
		t.Error("the Result was filled in before the run was over")
	}
}

// pluggedInProcess returns the suite options and target the runner's
// plumbing gets from the in-process target: a RestConfig that reaches
// nothing, and the client c put back into the suite.
func pluggedInProcess(o *Options, c client.Client) (suite.ConformanceOptions, *target) {
	co := suite.ConformanceOptions{
		ConfigurableOptions: o.ConfigurableOptions,
		Client:              c,
		RestConfig:          &rest.Config{Host: "http://in-process.invalid", Transport: noAPIServer{}},
	}
	return co, &target{restoreClient: c, info: reports.Target{InProcess: true}, claimsSource: "--supported-features"}
}

// phaseWork is how long a test of TestRunSuiteRecordsAndReports works,
// so that the phase it runs in shows it.
const phaseWork = 50 * time.Millisecond

func checkRun(t *testing.T, res *Result, dir, progress string) {
	if res.Err != nil {
		t.Fatalf("Result.Err = %v", res.Err)
	}
	checkPhases(t, res)
	order := []string{"Passes", "NeedsRetry", "ParallelPasses", "SkipsItself", "GatewitnessPasses"}
	want := map[string]reports.Result{"Passes": reports.Pass, "ParallelPasses": reports.Pass, "SkipsItself": reports.Skip,
		"NeedsRetry": reports.Skip, "GatewitnessPasses": reports.Pass}
	if len(res.Run.Tests) != len(want) {
		t.Fatalf("recorded %d tests, want %d: %+v", len(res.Run.Tests), len(want), res.Run.Tests)
	}
	for i, tr := range res.Run.Tests {
		if tr.Result != want[tr.ShortName] {
			t.Errorf("%s: result %s, want %s", tr.ShortName, tr.Result, want[tr.ShortName])
		}
		if tr.ShortName != order[i] {
			t.Errorf("Tests[%d] = %s, want %s: results in the suites' order, upstream's first", i, tr.ShortName, order[i])
		}
		wantSource := reports.Gatewitness
		if i < 2 {
			wantSource = reports.Upstream
		}
		if tr.Source != wantSource {
			t.Errorf("%s: source %q, want %q", tr.ShortName, tr.Source, wantSource)
		}
		switch tr.ShortName {
		case "Passes":
			if len(tr.Observations) != 1 || tr.Observations[0].Key != "attempts" || tr.Observations[0].Value != "3" {
				t.Errorf("Passes: observations %+v, want attempts = 3", tr.Observations)
			}
			if !slices.Equal(tr.Profiles, []string{testUpstreamProfile}) {
				t.Errorf("Passes counts in %v, want only %s", tr.Profiles, testUpstreamProfile)
			}
		case "NeedsRetry":
			if tr.Message != "the run does not claim HTTPRouteRetry" || !slices.Equal(tr.Unclaimed, []features.FeatureName{features.SupportHTTPRouteRetry}) {
				t.Errorf("NeedsRetry: message %q, unclaimed %v", tr.Message, tr.Unclaimed)
			}
		case "SkipsItself":
			if !strings.Contains(tr.Message, "skipped itself") {
				t.Errorf("SkipsItself: message %q", tr.Message)
			}
		case "GatewitnessPasses":
			if !slices.Equal(tr.Profiles, []string{testGatewitnessProfile}) {
				t.Errorf("GatewitnessPasses counts in %v, want only %s", tr.Profiles, testGatewitnessProfile)
			}
		}
	}

	// The header says what is tested; then one line per test that runs.
	lines := strings.Split(strings.TrimSuffix(progress, "\n"), "\n")
	if !strings.HasPrefix(lines[0], "target:       in-process") {
		t.Errorf("the first line does not name the target: %q", lines[0])
	}
	for _, want := range []string{
		"GatewayClass: gateway-conformance",
		"features:     1 claimed (--supported-features): HTTPRoute",
		"profiles:     upstream report: " + testUpstreamProfile + "; gatewitness report: " + testGatewitnessProfile,
		"tests:        4 of 5 will run (1 upstream, 3 gatewitness); 1 skipped",
		"[1/4]", "PASS Passes (", "[4/4]", "PASS ParallelPasses (", "SKIP SkipsItself (", "PASS GatewitnessPasses (",
	} {
		if !strings.Contains(progress, want) {
			t.Errorf("progress lacks %q:\n%s", want, progress)
		}
	}
	if strings.Contains(progress, "NeedsRetry") {
		t.Errorf("progress has a line for a test that does not run:\n%s", progress)
	}

	// The upstream report: upstream's profile and tests only, in
	// upstream's folder layout, with its README.
	sub := filepath.Join(dir, reports.UpstreamDirName, consts.BundleVersion[:strings.LastIndex(consts.BundleVersion, ".")], "acme-gw")
	wantFiles := []string{
		filepath.Join(dir, reports.RunFileName),
		filepath.Join(dir, reports.JUnitFileName),
		filepath.Join(dir, reports.MarkdownFileName),
		filepath.Join(dir, reports.MarkdownShortName),
		filepath.Join(dir, reports.GatewitnessReportFileName),
		filepath.Join(sub, "standard-v1.0.0-default-report.yaml"),
		filepath.Join(sub, reports.SubmissionReadmeName),
	}
	if strings.Join(res.Files, " ") != strings.Join(wantFiles, " ") {
		t.Fatalf("Files = %v, want %v", res.Files, wantFiles)
	}
	var up confv1.ConformanceReport
	readYAML(t, wantFiles[5], &up)
	if len(up.ProfileReports) != 1 || up.ProfileReports[0].Name != testUpstreamProfile {
		t.Fatalf("the upstream report's profiles = %+v, want %s alone", up.ProfileReports, testUpstreamProfile)
	}
	// Upstream counts a test whose features are not claimed nowhere; had
	// gatewitness's two passing tests counted, core would have 3 passed.
	if p := up.ProfileReports[0]; p.Core.Passed != 1 || p.Core.Skipped != 0 || p.Core.Failed != 0 {
		t.Errorf("the upstream profile = %+v, want core 1 passed, nothing else: gatewitness's tests counted in it", p)
	}
	var gc reports.GatewitnessReport
	readYAML(t, wantFiles[4], &gc)
	if len(gc.ProfileReports) != 1 || gc.ProfileReports[0].Name != testGatewitnessProfile || gc.ProfileReports[0].Core.Passed != 2 || gc.ProfileReports[0].Core.Skipped != 1 {
		t.Errorf("the gatewitness report's profiles = %+v, want %s with 2 passed and 1 skipped", gc.ProfileReports, testGatewitnessProfile)
	}
	var names []string
	for _, tr := range gc.Tests {
		names = append(names, tr.Name)
	}
	if !slices.Equal(names, []string{"ParallelPasses", "SkipsItself", "GatewitnessPasses"}) {
		t.Errorf("the gatewitness report's tests = %v, want gatewitness's three", names)
	}
	// The command line, without the kubeconfig's path: true of one machine only.
	if readme, _ := os.ReadFile(wantFiles[6]); !bytes.Contains(readme, []byte("```sh\ngatewitness run\n```")) || bytes.Contains(readme, []byte("/tmp/my cluster")) {
		t.Errorf("the README's Reproduce section lacks the command line, or has the kubeconfig's path:\n%s", readme)
	}

	var junit struct {
		Tests  int `xml:"tests,attr"`
		Suites []struct {
			Name    string `xml:"name,attr"`
			Skipped int    `xml:"skipped,attr"`
		} `xml:"testsuite"`
	}
	data, err := os.ReadFile(wantFiles[1])
	if err != nil {
		t.Fatal(err)
	}
	if err := xml.Unmarshal(data, &junit); err != nil || junit.Tests != 5 || len(junit.Suites) != 2 ||
		junit.Suites[0].Name != "upstream" || junit.Suites[0].Skipped != 1 || junit.Suites[1].Skipped != 1 {
		t.Errorf("JUnit: %+v (err %v), want 5 tests in an upstream and a gatewitness suite, one skipped in each:\n%s", junit, err, data)
	}
	md, err := os.ReadFile(wantFiles[2])
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(md, []byte("5 tests: 3 passed, 0 failed, 2 skipped")) {
		t.Errorf("the Markdown summary lacks the counts:\n%s", md)
	}

	// Every report can be written again from run.json alone.
	f, err := os.Open(wantFiles[0])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	run, err := reports.ReadRunJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	again := t.TempDir()
	files, err := reports.WriteAll(again, run)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range files {
		want, _ := os.ReadFile(wantFiles[i])
		got, _ := os.ReadFile(p)
		if !bytes.Equal(got, want) {
			t.Errorf("%s written again from run.json differs from the run's:\n--- run\n%s\n--- again\n%s", filepath.Base(p), want, got)
		}
	}
}

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(data, v); err != nil {
		t.Fatalf("%s: %v\n%s", path, err, data)
	}
}

// TestRunRefusesTestsCountedNowhere: a test that would run, but whose
// features no requested profile of its side has, stops the run before
// anything runs, with a message naming the test and the missing feature,
// when the profiles are the run's defaults (with profiles named, the test
// is left out instead: TestNamedProfilesLeaveOutUncounted) or when
// --run-test names the test.
func TestRunRefusesTestsCountedNowhere(t *testing.T) {
	t.Run("default profiles", func(t *testing.T) { refusesCountedNowhere(t, true, "") })
	t.Run("named by --run-test", func(t *testing.T) { refusesCountedNowhere(t, false, "NeedsCORS,Counted") })
}

func refusesCountedNowhere(t *testing.T, defaultProfiles bool, runTest string) {
	useTestProfiles(t)
	c := fakeCluster(t)
	o := testOptions(t.TempDir(), &bytes.Buffer{})
	o.defaultProfiles = defaultProfiles
	o.RunTest = runTest
	o.SupportedFeatures = append(o.SupportedFeatures, gwfeatures.SupportHTTPRouteCORS)
	co := suite.ConformanceOptions{ConfigurableOptions: o.ConfigurableOptions, Client: c, RestConfig: &rest.Config{Host: "http://x.invalid", Transport: noAPIServer{}}}
	ran := false
	gcTests := []suite.ConformanceTest{{ShortName: "NeedsCORS", Features: []features.FeatureName{gwfeatures.SupportHTTPRoute, gwfeatures.SupportHTTPRouteCORS},
		Test: func(*testing.T, *suite.ConformanceTestSuite) { ran = true }},
		{ShortName: "Counted", Features: []features.FeatureName{gwfeatures.SupportHTTPRoute}, Test: func(*testing.T, *suite.ConformanceTestSuite) { ran = true }}}
	_, err := runSuites(t, &o, co, &target{info: reports.Target{InProcess: true}}, nil, gcTests)
	if err == nil || !strings.Contains(err.Error(), "NeedsCORS: "+testGatewitnessProfile+" lacks HTTPRouteCORS") {
		t.Fatalf("runSuites = %v, want a refusal naming NeedsCORS and HTTPRouteCORS", err)
	}
	if ran {
		t.Error("the test ran although the run was refused")
	}
}

// TestProgressNamesRunningTests: when nothing finishes for the progress
// interval, a line names the tests still running.
func TestProgressNamesRunningTests(t *testing.T) {
	var out syncBuffer
	o := DefaultOptions()
	o.Progress = &out
	o.ProgressInterval = 50 * time.Millisecond
	r := newRecorder(&o)
	s := &side{run: true, planned: []plannedTest{{test: suite.ConformanceTest{ShortName: "Slow"}, runs: true}}}
	r.begin([]*side{s})
	r.start("Slow")
	gomega.NewWithT(t).Eventually(out.String).WithTimeout(10*time.Second).
		Should(gomega.ContainSubstring("running: Slow ("), "progress: a line naming the running test")
	r.record(reports.TestResult{ShortName: "Slow", Result: reports.Pass}, true)
	r.stop()
	if !strings.Contains(out.String(), "[1/1]") || !strings.Contains(out.String(), "PASS Slow (") {
		t.Errorf("no result line: %q", out.String())
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func TestSkipReasons(t *testing.T) {
	ct := suite.ConformanceTest{ShortName: "X", Features: []features.FeatureName{gwfeatures.SupportHTTPRoute, gwfeatures.SupportHTTPRouteCORS}}
	p := plannedTest{test: ct, unclaimed: []features.FeatureName{gwfeatures.SupportHTTPRouteCORS}}
	if got, unclaimed := skipReason(p, nil, nil); got != "the run does not claim HTTPRouteCORS" || len(unclaimed) != 1 {
		t.Errorf("unsupported feature: %q, %v", got, unclaimed)
	}
	if got, _ := skipReason(p, []string{"Y"}, nil); got != "not selected: --run-test names Y" {
		t.Errorf("--run-test: %q", got)
	}
	if got, _ := skipReason(plannedTest{test: ct}, nil, nil); got != "skipped by --skip-tests" {
		t.Errorf("--skip-tests: %q", got)
	}
	log := func(string) string {
		return "=== RUN   gatewitness/X\n    x.go:3: needs two backends\n--- SKIP: gatewitness/X (0.00s)\n"
	}
	if got, _ := skipReason(plannedTest{test: ct, runs: true}, nil, log); got != "the test skipped itself: x.go:3: needs two backends" {
		t.Errorf("self-skip: %q", got)
	}
	// The Applier's cleanup deletes the test's objects after the skip and
	// logs each deletion; the reason is the line before them.
	withCleanup := func(string) string {
		return "=== RUN   gatewitness/X\n" +
			"    apply.go:216: 2026-11-28T08:48:18.1Z: Creating mesh-probe-http HTTPRoute\n" +
			"    probe_helpers.go:267: no mesh intercepts the readiness probes\n" +
			"    apply.go:279: 2026-11-28T08:48:38.2Z: Deleting mesh-probe-http-proxied Deployment\n" +
			"    apply.go:279: 2026-11-28T08:48:38.6Z: Deleting mesh-probe-http HTTPRoute\n" +
			"--- SKIP: gatewitness/X (20.67s)\n"
	}
	if got, _ := skipReason(plannedTest{test: ct, runs: true}, nil, withCleanup); got != "the test skipped itself: probe_helpers.go:267: no mesh intercepts the readiness probes" {
		t.Errorf("self-skip with the Applier's cleanup after it: %q", got)
	}
}

// errNoAPIServer is what a request to the fake cluster's REST API gets:
// there is none, as on the in-process target before it served pod logs.
var errNoAPIServer = errors.New("the in-process cluster has no Kubernetes REST API (pod logs, exec and the like); run this test against a cluster with --kubeconfig")

// noAPIServer fails every request, with errNoAPIServer.
type noAPIServer struct{}

func (noAPIServer) RoundTrip(*http.Request) (*http.Response, error) { return nil, errNoAPIServer }

// TestUncountedNotesWhatNoProfileCanCount: an upstream test no upstream
// profile at all has the features for is run and noted, not refused; one
// that a profile not requested would count is refused, naming it.
func TestUncountedNotesWhatNoProfileCanCount(t *testing.T) {
	useTestProfiles(t)
	mk := func(name string, fs ...features.FeatureName) plannedTest {
		ct := suite.ConformanceTest{ShortName: name, Features: fs}
		return plannedTest{test: ct, runs: true, source: reports.Upstream, profiles: countingProfiles(ct, []string{testUpstreamProfile})}
	}
	s := &side{source: reports.Upstream, run: true, profiles: []string{testUpstreamProfile}, planned: []plannedTest{
		mk("Counted", gwfeatures.SupportHTTPRoute),
		mk("NoProfileCan", gwfeatures.SupportGateway, gwfeatures.SupportGRPCRoute, gwfeatures.SupportGRPCRouteNamedRouteRule),
	}}
	// --run-test runs a test whatever the claims; upstream counts it
	// nowhere when its features are not claimed.
	s.planned = append(s.planned, plannedTest{test: suite.ConformanceTest{ShortName: "RunAlone", Features: []features.FeatureName{gwfeatures.SupportHTTPRoute, features.SupportHTTPRouteRetry}},
		runs: true, source: reports.Upstream, unclaimed: []features.FeatureName{features.SupportHTTPRouteRetry}})
	notes, err := uncounted([]*side{s})
	if err != nil || len(notes) != 2 || !strings.Contains(notes[0], "NoProfileCan runs, but no upstream profile has all its features") ||
		!strings.Contains(notes[1], "RunAlone runs because --run-test names it, but the run does not claim HTTPRouteRetry") {
		t.Errorf("uncounted = %q, %v; want notes for NoProfileCan and RunAlone and no error", notes, err)
	}
	s.planned = append(s.planned, mk("InGRPC", gwfeatures.SupportGateway, gwfeatures.SupportGRPCRoute))
	_, err = uncounted([]*side{s})
	if err == nil || !strings.Contains(err.Error(), "InGRPC: "+testUpstreamProfile+" lacks Gateway, GRPCRoute (it counts in GATEWAY-GRPC, which was not requested)") {
		t.Errorf("uncounted = %v, want a refusal naming InGRPC and GATEWAY-GRPC", err)
	}
}

// TestRunTestHeaderCountsWhatIsRecorded: with --run-test naming a test of
// one side, the other side does not run, and the header's count of tests
// is the count the run records and the summary prints.
func TestRunTestHeaderCountsWhatIsRecorded(t *testing.T) {
	useTestProfiles(t)
	o := testOptions(t.TempDir(), nil)
	o.RunTest = "Passes"
	core := []features.FeatureName{gwfeatures.SupportHTTPRoute}
	pass := func(*testing.T, *suite.ConformanceTestSuite) {}
	upTests := []suite.ConformanceTest{
		{ShortName: "Passes", Features: core, Test: pass},
		{ShortName: "NotNamed", Features: core, Test: pass},
	}
	gcTests := []suite.ConformanceTest{
		{ShortName: "GatewitnessOne", Features: core, Test: pass},
		{ShortName: "GatewitnessTwo", Features: core, Test: pass},
		{ShortName: "GatewitnessThree", Features: core, Test: pass},
	}
	runPlumbing(t, o, upTests, gcTests, func(res *Result, progress string) {
		want := "tests:        1 of 2 will run (1 upstream); 1 skipped: --run-test names one test\n"
		if !strings.Contains(progress, want) {
			t.Errorf("progress lacks %q:\n%s", want, progress)
		}
		if got := len(res.Run.Tests); got != 2 {
			t.Errorf("the run recorded %d tests, want the 2 of the side that ran: %+v", got, res.Run.Tests)
		}
	})
}

// checkPhases checks that the phases are timed in order, each counting
// the work done in it: the serial test's in "serial tests", the parallel
// test's in "parallel tests", which run after every serial test.
func checkPhases(t *testing.T, res *Result) {
	t.Helper()
	var names []string
	took := map[string]time.Duration{}
	for _, p := range res.Phases {
		names = append(names, p.Name)
		took[p.Name] = p.Duration
		if p.Duration < 0 {
			t.Errorf("phase %s took %v", p.Name, p.Duration)
		}
	}
	want := []string{"start", "set-up", "serial tests", "parallel tests", "clean-up", "reports"}
	if !slices.Equal(names, want) {
		t.Fatalf("phases %v, want %v", names, want)
	}
	for _, name := range []string{"serial tests", "parallel tests"} {
		if took[name] < phaseWork {
			t.Errorf("phase %q took %v; its test alone worked %v", name, took[name], phaseWork)
		}
	}
	if !slices.Equal(res.Run.Phases, res.Phases[:len(want)-1]) {
		t.Errorf("the run record's phases %v, want those before the reports: %v", res.Run.Phases, res.Phases[:len(want)-1])
	}
}

// TestInProcessPollInterval: an in-process run polls status at
// InProcessPollInterval unless the timeout config names another interval
// than upstream's default.
func TestInProcessPollInterval(t *testing.T) {
	upstream := config.DefaultTimeoutConfig().DefaultPollInterval
	for _, tt := range []struct {
		name      string
		set, want time.Duration
	}{
		{"upstream's default", upstream, InProcessPollInterval},
		{"unset", 0, InProcessPollInterval},
		{"chosen", 250 * time.Millisecond, 250 * time.Millisecond},
	} {
		o := DefaultOptions()
		o.TimeoutConfig.DefaultPollInterval = tt.set
		setInProcessDefaults(&o, features.ChannelExperimental)
		if got := o.TimeoutConfig.DefaultPollInterval; got != tt.want {
			t.Errorf("%s (%v): in-process poll interval %v, want %v", tt.name, tt.set, got, tt.want)
		}
	}
	if InProcessPollInterval >= upstream {
		t.Errorf("InProcessPollInterval %v is not shorter than upstream's %v", InProcessPollInterval, upstream)
	}
}

// TestSerialTestsOfBothSidesOverlap: an upstream serial test and a
// gatewitness serial test run at the same time (each waits for the other to
// have started), and the parallel tests of both sides start after both
// have ended; with DisableParallelTests the sides run one after the other.
func TestSerialTestsOfBothSidesOverlap(t *testing.T) {
	for _, sequential := range []bool{false, true} {
		t.Run(fmt.Sprintf("sequential=%v", sequential), func(t *testing.T) {
			useTestProfiles(t)
			c := fakeCluster(t)
			var progress bytes.Buffer
			o := testOptions(t.TempDir(), &progress)
			o.DisableParallelTests = sequential
			core := []features.FeatureName{gwfeatures.SupportHTTPRoute}
			upStarted, gcStarted := make(chan struct{}), make(chan struct{})
			var serialDone atomic.Int32
			// meet announces that one serial test started and waits up to
			// 5s for the other: it reports whether the other had started
			// by then.
			meet := func(mine, other chan struct{}) bool {
				close(mine)
				defer serialDone.Add(1)
				select {
				case <-other:
					return true
				case <-time.After(5 * time.Second):
					return false
				}
			}
			var met [2]bool
			afterSerial := func(t *testing.T, _ *suite.ConformanceTestSuite) {
				if n := serialDone.Load(); n != 2 && !sequential {
					t.Errorf("a parallel test started when %d of the 2 serial tests had ended", n)
				}
			}
			upTests := []suite.ConformanceTest{
				{ShortName: "UpSerial", Features: core, Test: func(*testing.T, *suite.ConformanceTestSuite) { met[0] = meet(upStarted, gcStarted) }},
				{ShortName: "UpParallel", Features: core, Parallel: true, Test: afterSerial},
			}
			gcTests := []suite.ConformanceTest{
				{ShortName: "GatewitnessParallel", Features: core, Parallel: true, Test: afterSerial},
				{ShortName: "GatewitnessSerial", Features: core, Test: func(*testing.T, *suite.ConformanceTestSuite) { met[1] = meet(gcStarted, upStarted) }},
			}
			co := suite.ConformanceOptions{
				ConfigurableOptions: o.ConfigurableOptions,
				Client:              c,
				RestConfig:          &rest.Config{Host: "http://in-process.invalid", Transport: noAPIServer{}},
			}
			tgt := &target{restoreClient: c, info: reports.Target{InProcess: true}, claimsSource: "--supported-features"}
			observe.Reset()
			var res *Result
			t.Cleanup(func() {
				if res == nil || res.Run == nil {
					t.Fatal("the run left no record")
				}
				for _, tr := range res.Run.Tests {
					if tr.Result != reports.Pass {
						t.Errorf("%s: %s, want pass: %s", tr.ShortName, tr.Result, tr.Message)
					}
				}
				if sequential {
					// The first side's serial test waited for the
					// second's in vain: it ends first.
					if met[0] {
						t.Error("with DisableParallelTests, upstream's serial test ran beside gatewitness's")
					}
					return
				}
				if !met[0] || !met[1] {
					t.Errorf("the serial tests did not run side by side (upstream's saw gatewitness's start: %v; gatewitness's saw upstream's: %v)", met[0], met[1])
				}
			})
			var err error
			if res, err = runSuites(t, &o, co, tgt, upTests, gcTests); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// runPlumbing runs upTests and gcTests through runSuites on a fake
// cluster with options o (whose Progress it sets), as the in-process
// target sets the suites up, and calls check with the finished run and
// its progress output once t's cleanups have run the tests.
func runPlumbing(t *testing.T, o Options, upTests, gcTests []suite.ConformanceTest, check func(res *Result, progress string)) {
	t.Helper()
	c := fakeCluster(t)
	var progress bytes.Buffer
	o.Progress = &progress
	co, tgt := pluggedInProcess(&o, c)
	observe.Reset()
	var res *Result
	t.Cleanup(func() {
		if res == nil || res.Run == nil {
			t.Fatalf("the run left no record; progress:\n%s", progress.String())
		}
		check(res, progress.String())
	})
	var err error
	if res, err = runSuites(t, &o, co, tgt, upTests, gcTests); err != nil {
		t.Fatal(err)
	}
}

// resultsByName returns the run's results by ShortName.
func resultsByName(run *reports.Run) map[string]reports.TestResult {
	out := map[string]reports.TestResult{}
	for _, tr := range run.Tests {
		out[tr.ShortName] = tr
	}
	return out
}

// mustNotRun is a test body that fails the run if it is called.
func mustNotRun(t *testing.T, _ *suite.ConformanceTestSuite) {
	t.Error("ran a test the run should have left out")
}

// TestRunTestListRunsExactlyThose: --run-test naming two tests, one of
// each side, runs exactly those two; the others are skipped as not
// selected, and upstream's report holds what upstream's runner writes
// when --skip-tests names the others: the skipped test in its profile's
// skipped tests.
func TestRunTestListRunsExactlyThose(t *testing.T) {
	useTestProfiles(t)
	o := testOptions(t.TempDir(), nil)
	o.RunTest = "Passes,GatewitnessOne"
	core := []features.FeatureName{gwfeatures.SupportHTTPRoute}
	pass := func(*testing.T, *suite.ConformanceTestSuite) {}
	upTests := []suite.ConformanceTest{
		{ShortName: "Passes", Features: core, Test: pass},
		{ShortName: "NotNamed", Features: core, Test: mustNotRun},
	}
	gcTests := []suite.ConformanceTest{
		{ShortName: "GatewitnessOne", Features: core, Test: pass},
		{ShortName: "GatewitnessTwo", Features: core, Parallel: true, Test: mustNotRun},
	}
	runPlumbing(t, o, upTests, gcTests, func(res *Result, progress string) {
		want := "tests:        2 of 4 will run (1 upstream, 1 gatewitness); 2 skipped: --run-test names 2 tests\n"
		if !strings.Contains(progress, want) {
			t.Errorf("progress lacks %q:\n%s", want, progress)
		}
		got := resultsByName(res.Run)
		for name, want := range map[string]reports.Result{"Passes": reports.Pass, "GatewitnessOne": reports.Pass, "NotNamed": reports.Skip, "GatewitnessTwo": reports.Skip} {
			if got[name].Result != want {
				t.Errorf("%s: %s, want %s", name, got[name].Result, want)
			}
		}
		if msg := got["NotNamed"].Message; msg != "not selected: --run-test names Passes, GatewitnessOne" {
			t.Errorf("NotNamed: message %q", msg)
		}
		up := res.Run.Conformance
		if up == nil || len(up.ProfileReports) != 1 {
			t.Fatalf("upstream report: %+v", up)
		}
		if p := up.ProfileReports[0]; p.Core.Passed != 1 || p.Core.Skipped != 1 || !slices.Equal(p.Core.SkippedTests, []string{"NotNamed"}) {
			t.Errorf("upstream profile %+v, want 1 passed and NotNamed skipped", p.Core)
		}
	})
}

// TestRunTestListRefusesUnclaimed: upstream's suite runs a test whatever
// the claims only when RunTest names it alone; among several, a test
// whose features are not claimed stops the run before it starts.
func TestRunTestListRefusesUnclaimed(t *testing.T) {
	useTestProfiles(t)
	c := fakeCluster(t)
	o := testOptions(t.TempDir(), &bytes.Buffer{})
	o.RunTest = "Passes,NeedsRetry"
	co := suite.ConformanceOptions{ConfigurableOptions: o.ConfigurableOptions, Client: c, RestConfig: &rest.Config{Host: "http://x.invalid", Transport: noAPIServer{}}}
	upTests := []suite.ConformanceTest{
		{ShortName: "Passes", Features: []features.FeatureName{gwfeatures.SupportHTTPRoute}, Test: mustNotRun},
		{ShortName: "NeedsRetry", Features: []features.FeatureName{gwfeatures.SupportHTTPRoute, features.SupportHTTPRouteRetry}, Test: mustNotRun},
	}
	_, err := runSuites(t, &o, co, &target{info: reports.Target{InProcess: true}}, upTests, nil)
	if err == nil || !strings.Contains(err.Error(), "NeedsRetry needs HTTPRouteRetry") || !strings.Contains(err.Error(), "--supported-features") {
		t.Fatalf("runSuites = %v, want a refusal naming NeedsRetry and HTTPRouteRetry", err)
	}
}

// TestNamedProfilesLeaveOutUncounted: with profiles named, a test whose
// features are claimed but that counts in none of them does not run, and
// the header says so; a side none of whose tests counts does not run at
// all.
func TestNamedProfilesLeaveOutUncounted(t *testing.T) {
	useTestProfiles(t)
	o := testOptions(t.TempDir(), nil)
	o.SupportedFeatures = append(o.SupportedFeatures, gwfeatures.SupportHTTPRouteCORS)
	o.ConformanceProfiles = []suite.ConformanceProfileName{testGatewitnessProfile}
	core := []features.FeatureName{gwfeatures.SupportHTTPRoute}
	upTests := []suite.ConformanceTest{{ShortName: "UpstreamCounted", Features: core, Test: mustNotRun}}
	gcTests := []suite.ConformanceTest{
		{ShortName: "Counted", Features: core, Test: func(*testing.T, *suite.ConformanceTestSuite) {}},
		{ShortName: "NeedsCORS", Features: []features.FeatureName{gwfeatures.SupportHTTPRoute, gwfeatures.SupportHTTPRouteCORS}, Test: mustNotRun},
	}
	runPlumbing(t, o, upTests, gcTests, func(res *Result, progress string) {
		for _, want := range []string{
			"profiles:     upstream report: none (not run: none of its tests counts in the profiles named); gatewitness report: " + testGatewitnessProfile,
			"tests:        1 of 2 will run (1 gatewitness); 1 skipped",
			"note:         2 test(s) whose features are claimed count in none of the profiles named, so they do not run: UpstreamCounted, NeedsCORS",
		} {
			if !strings.Contains(progress, want) {
				t.Errorf("progress lacks %q:\n%s", want, progress)
			}
		}
		got := resultsByName(res.Run)
		if got["Counted"].Result != reports.Pass || got["NeedsCORS"].Result != reports.Skip {
			t.Errorf("results %+v, want Counted passed and NeedsCORS skipped", res.Run.Tests)
		}
		if msg := got["NeedsCORS"].Message; msg != "not run: it counts in none of the profiles named" {
			t.Errorf("NeedsCORS: message %q", msg)
		}
		if res.Run.Conformance != nil {
			t.Errorf("an upstream report from a run that named no upstream profile: %+v", res.Run.Conformance)
		}
	})
}

// TestHeaderCountsClaimsByOrigin: upstream's suite claims the core
// features of each requested profile besides those given, so the header's
// count of claimed features says how many were given and which a profile
// added, and the count adds up.
func TestHeaderCountsClaimsByOrigin(t *testing.T) {
	useTestProfiles(t)
	o := testOptions(t.TempDir(), nil)
	// The test profiles' core is HTTPRoute; give only an extended feature,
	// twice, and one exempted.
	o.SupportedFeatures = []features.FeatureName{features.SupportHTTPRouteRetry, features.SupportHTTPRouteRetry, gwfeatures.SupportHTTPRouteCORS}
	o.ExemptFeatures = []features.FeatureName{gwfeatures.SupportHTTPRouteCORS}
	pass := func(*testing.T, *suite.ConformanceTestSuite) {}
	upTests := []suite.ConformanceTest{{ShortName: "Passes", Features: []features.FeatureName{gwfeatures.SupportHTTPRoute}, Test: pass}}
	runPlumbing(t, o, upTests, nil, func(res *Result, progress string) {
		want := "features:     2 claimed (--supported-features (1), and the core of the profiles requested (1: HTTPRoute)): HTTPRoute, HTTPRouteRetry\n"
		if !strings.Contains(progress, want) {
			t.Errorf("progress lacks %q:\n%s", want, progress)
		}
		if len(res.Run.Claims.Features) != 2 {
			t.Errorf("claims %v, want the 2 the header counts", res.Run.Claims.Features)
		}
	})
}
