package runner

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/gateway-api/conformance/utils/suite"
	"sigs.k8s.io/gateway-api/pkg/consts"
	gwfeatures "sigs.k8s.io/gateway-api/pkg/features"

	"github.com/gatecheck/gatecheck/conformance/observe"
	"github.com/gatecheck/gatecheck/features"
	"github.com/gatecheck/gatecheck/reports"
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

// TestRunSuiteRecordsAndReports runs tests that need no cluster through
// the runner's suite plumbing, as the in-process target sets it up (a
// RestConfig that reaches nothing, and the client put back), and checks
// the results, the progress lines and the three reports. The checks run
// in a cleanup, since the run completes in t's cleanups.
func TestRunSuiteRecordsAndReports(t *testing.T) {
	dir := t.TempDir()
	c := fakeCluster(t)
	var progress bytes.Buffer
	o := DefaultOptions()
	o.ReportDir = dir
	o.Progress = &progress
	o.SupportedFeatures = []features.FeatureName{gwfeatures.SupportHTTPRoute}
	o.Implementation.Organization, o.Implementation.Project = "acme", "gw"
	o.Implementation.URL, o.Implementation.Version = "https://acme.example", "v1.0.0"
	o.Implementation.Contact = []string{"@acme"}
	// No profile: a profile's core features include Gateway, and with
	// Gateway supported the suite's Setup waits for a GatewayClass.

	// clientSeen records whether each test found the fake client in the
	// suite rather than the per-test client the suite builds.
	var mu sync.Mutex
	clientSeen := map[string]bool{}
	checkClient := func(t *testing.T, s *suite.ConformanceTestSuite) {
		mu.Lock()
		defer mu.Unlock()
		clientSeen[t.Name()] = s.Client == client.Client(c)
	}
	core := []features.FeatureName{gwfeatures.SupportHTTPRoute}
	all := []suite.ConformanceTest{
		{ShortName: "Passes", Description: "records", Features: core, Test: func(t *testing.T, s *suite.ConformanceTestSuite) {
			checkClient(t, s)
			observe.Record(t, "attempts", 3)
		}},
		{ShortName: "ParallelPasses", Description: "parallel", Features: core, Parallel: true, Test: func(t *testing.T, s *suite.ConformanceTestSuite) {
			checkClient(t, s)
			if err := s.Client.List(context.Background(), &apiextensionsv1.CustomResourceDefinitionList{}); err != nil {
				t.Errorf("the client put back does not work: %v", err)
			}
		}},
		{ShortName: "SkipsItself", Description: "skips", Features: core, Test: func(t *testing.T, s *suite.ConformanceTestSuite) {
			t.Skip("not today")
		}},
		{ShortName: "NeedsRetry", Description: "unsupported", Features: []features.FeatureName{gwfeatures.SupportHTTPRoute, features.SupportHTTPRouteRetry},
			Test: func(t *testing.T, s *suite.ConformanceTestSuite) {
				t.Error("ran a test whose feature is not supported")
			}},
	}
	co := suite.ConformanceOptions{
		ConfigurableOptions: o.ConfigurableOptions,
		Client:              c,
		RestConfig:          &rest.Config{Host: "http://in-process.invalid", Transport: noAPIServer{}},
	}
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
	res, err = runSuite(t, &o, co, all, c)
	if err != nil {
		t.Fatal(err)
	}
	if res.Run != nil {
		t.Error("the Result was filled in before the run was over")
	}
}

func checkRun(t *testing.T, res *Result, dir, progress string) {
	if res.Err != nil {
		t.Fatalf("Result.Err = %v", res.Err)
	}
	want := map[string]reports.Result{"Passes": reports.Pass, "ParallelPasses": reports.Pass, "SkipsItself": reports.Skip, "NeedsRetry": reports.Skip}
	if len(res.Run.Tests) != len(want) {
		t.Fatalf("recorded %d tests, want %d: %+v", len(res.Run.Tests), len(want), res.Run.Tests)
	}
	for i, tr := range res.Run.Tests {
		if tr.Result != want[tr.ShortName] {
			t.Errorf("%s: result %s, want %s", tr.ShortName, tr.Result, want[tr.ShortName])
		}
		if name := []string{"Passes", "ParallelPasses", "SkipsItself", "NeedsRetry"}[i]; tr.ShortName != name {
			t.Errorf("Tests[%d] = %s, want %s: results in the suite's order", i, tr.ShortName, name)
		}
		switch tr.ShortName {
		case "Passes":
			if len(tr.Observations) != 1 || tr.Observations[0].Key != "attempts" || tr.Observations[0].Value != "3" {
				t.Errorf("Passes: observations %+v, want attempts = 3", tr.Observations)
			}
		case "NeedsRetry":
			if tr.Message != "the implementation does not claim HTTPRouteRetry" {
				t.Errorf("NeedsRetry: message %q", tr.Message)
			}
		case "SkipsItself":
			if !strings.Contains(tr.Message, "skipped itself") {
				t.Errorf("SkipsItself: message %q", tr.Message)
			}
		}
	}
	for _, line := range []string{"PASS Passes (", "PASS ParallelPasses (", "SKIP SkipsItself (", "SKIP NeedsRetry ("} {
		if !strings.Contains(progress, line) {
			t.Errorf("progress %q lacks a line starting %q", progress, line)
		}
	}
	if got := strings.Count(progress, "\n"); got != 4 {
		t.Errorf("progress has %d lines, want one per test:\n%s", got, progress)
	}

	wantFiles := []string{
		filepath.Join(dir, "standard-v1.0.0-default-report.yaml"),
		filepath.Join(dir, JUnitFileName),
		filepath.Join(dir, MarkdownFileName),
	}
	if strings.Join(res.Files, " ") != strings.Join(wantFiles, " ") {
		t.Fatalf("Files = %v, want %v", res.Files, wantFiles)
	}
	yaml, err := os.ReadFile(wantFiles[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"kind: ConformanceReport", "mode: default", "organization: acme"} {
		if !bytes.Contains(yaml, []byte(s)) {
			t.Errorf("the ConformanceReport lacks %q:\n%s", s, yaml)
		}
	}
	var junit struct {
		Tests int `xml:"tests,attr"`
		Suite struct {
			Skipped int `xml:"skipped,attr"`
		} `xml:"testsuite"`
	}
	data, err := os.ReadFile(wantFiles[1])
	if err != nil {
		t.Fatal(err)
	}
	if err := xml.Unmarshal(data, &junit); err != nil || junit.Tests != 4 || junit.Suite.Skipped != 2 {
		t.Errorf("JUnit: %d tests, %d skipped (err %v), want 4 and 2:\n%s", junit.Tests, junit.Suite.Skipped, err, data)
	}
	md, err := os.ReadFile(wantFiles[2])
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(md, []byte("4: 2 passed, 0 failed, 2 skipped")) {
		t.Errorf("the Markdown summary lacks the counts:\n%s", md)
	}
}

func TestSkipReasons(t *testing.T) {
	s := &suite.ConformanceTestSuite{SupportedFeatures: suite.FeaturesSet{}, SkipTests: nil}
	s.SupportedFeatures.Insert(gwfeatures.SupportHTTPRoute)
	ct := suite.ConformanceTest{ShortName: "X", Features: []features.FeatureName{gwfeatures.SupportHTTPRoute, gwfeatures.SupportHTTPRouteCORS}, Provisional: true}
	if got := skipReason(ct, s); got != "the implementation does not claim HTTPRouteCORS" {
		t.Errorf("unsupported feature: %q", got)
	}
	s.RunTest = "Y"
	if got := skipReason(ct, s); got != "not selected: --run-test names Y" {
		t.Errorf("--run-test: %q", got)
	}
	s.SkipProvisionalTests = true
	if got := skipReason(ct, s); !strings.Contains(got, "--skip-provisional-tests") {
		t.Errorf("provisional: %q", got)
	}
}

// errNoAPIServer is what a request to the fake cluster's REST API gets:
// there is none, as on the in-process target before it served pod logs.
var errNoAPIServer = errors.New("the in-process cluster has no Kubernetes REST API (pod logs, exec and the like); run this test against a cluster with --kubeconfig")

// noAPIServer fails every request, with errNoAPIServer.
type noAPIServer struct{}

func (noAPIServer) RoundTrip(*http.Request) (*http.Response, error) { return nil, errNoAPIServer }
