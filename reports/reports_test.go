package reports

import (
	"bytes"
	"encoding/xml"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gatewitness/gatewitness/contract/observe"
	"github.com/gatewitness/gatewitness/features"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	confv1 "sigs.k8s.io/gateway-api/conformance/apis/v1"
	"sigs.k8s.io/gateway-api/conformance/utils/suite"
	"sigs.k8s.io/gateway-api/pkg/consts"
	gwfeatures "sigs.k8s.io/gateway-api/pkg/features"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

var testImplementation = confv1.Implementation{
	Organization: "gatewitness",
	Project:      "reference-gateway",
	URL:          "https://github.com/gatewitness/gatewitness",
	Version:      "v0.1.0",
	Contact:      []string{"@gatewitness/maintainers"},
}

// goldenRun is a run with every kind of result, from both sources,
// messages that need escaping in each format, and observations.
func goldenRun() *Run {
	http := []gwfeatures.FeatureName{gwfeatures.SupportGateway, gwfeatures.SupportHTTPRoute}
	return &Run{
		Schema:         RunSchema,
		Implementation: testImplementation,
		Mode:           "default",
		Profiles:       []string{"GATEWAY-HTTP", features.ProfileHTTPResilience},
		Started:        time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC),
		Duration:       42*time.Second + 517*time.Millisecond,
		Target:         Target{Server: "https://127.0.0.1:6443", Context: "kind-gatewitness", GatewayClass: "acme", Controller: "acme.example/gateway"},
		Environment: Environment{
			KubernetesVersion: "v1.36.3", GatewayAPIVersion: "v1.6.3", GatewayAPIChannel: "experimental",
			SuiteVersion: "v1.6.3", GatewitnessVersion: "v0.1.0", GoVersion: "go1.26.8",
		},
		Claims:          Claims{Features: append(http[:2:2], features.SupportHTTPRouteRetry, features.SupportHTTPRouteRetryCodes), Source: "--supported-features"},
		TimingTolerance: 500 * time.Millisecond,
		RetryBudgetLoad: &RetryBudgetLoad{QPS: 40, Requests: 240, ShareSlack: 0.05},
		CommandLine:     []string{"gatewitness", "run", "--kubeconfig", "/home/me/kind config", "--report-dir", "out"},
		Phases: []Phase{
			{Name: "start", Duration: 1234 * time.Millisecond}, {Name: "set-up", Duration: 310 * time.Millisecond},
			{Name: "serial tests", Duration: 14*time.Second + 149*time.Millisecond}, {Name: "parallel tests", Duration: 26 * time.Second},
			{Name: "clean-up", Duration: 824 * time.Millisecond},
		},
		Tests: []TestResult{
			{
				ShortName:   "HTTPRouteSimpleSameNamespace",
				Source:      Upstream,
				Description: "A single HTTPRoute in the gateway-conformance-infra namespace attaches to a Gateway in the same namespace",
				Features:    http,
				Result:      Pass,
				Duration:    1234 * time.Millisecond,
				Profiles:    []string{"GATEWAY-HTTP"},
			},
			{
				ShortName:   "MeshBasic",
				Source:      Upstream,
				Description: "A mesh test",
				Features:    []gwfeatures.FeatureName{gwfeatures.SupportMesh},
				Result:      Skip,
				Message:     "the run does not claim Mesh",
				Unclaimed:   []gwfeatures.FeatureName{gwfeatures.SupportMesh},
			},
			{
				ShortName:   "HTTPRouteRetryCodes",
				Source:      Gatewitness,
				Description: "Retries exactly the codes in retry.codes",
				Features:    append(http[:2:2], features.SupportHTTPRouteRetry, features.SupportHTTPRouteRetryCodes),
				Result:      Pass,
				Duration:    3*time.Second + 4*time.Millisecond,
				Profiles:    []string{features.ProfileHTTPResilience},
				Observations: []observe.Observation{
					{Subtest: "code_500_is_retried", Key: "attempts", Value: "3"},
					{Subtest: "code_500_is_retried", Key: "status", Value: "200"},
					{Subtest: "code_503_is_not_retried", Key: "attempts", Value: "1"},
				},
			},
			{
				ShortName:   "HTTPRouteRetryBackoff",
				Source:      Gatewitness,
				Description: "Waits at least retry.backoff between attempts",
				Features:    append(http[:2:2], features.SupportHTTPRouteRetry, features.SupportHTTPRouteRetryBackoff),
				Result:      Fail,
				Duration:    2500 * time.Millisecond,
				Profiles:    []string{features.ProfileHTTPResilience},
				Message: "gap between attempts 1 and 2 is 12ms; want at least 100ms\n" +
					"ledger: attempt|time\n\x1b[31m<raw>\x1b[0m & ```fenced``` \"quoted\"\n",
				Log: "=== RUN   gatewitness/HTTPRouteRetryBackoff\n    backoff.go:40: observe: gap[1] = 12ms\n" +
					"    backoff.go:41: gap between attempts 1 and 2 is 12ms; want at least 100ms\n--- FAIL: gatewitness/HTTPRouteRetryBackoff (2.50s)\n",
				Observations: []observe.Observation{
					{Key: "gap[1]", Value: "12ms"},
					{Key: "header", Value: "x-a|b `tick`"},
				},
				DroppedObservations: 2,
			},
			{
				ShortName:   "GRPCRouteStrictEnforcement",
				Source:      Gatewitness,
				Description: "DEADLINE_EXCEEDED as a trailers-only response",
				Features:    []gwfeatures.FeatureName{gwfeatures.SupportGateway, gwfeatures.SupportGRPCRoute, features.SupportGRPCRouteStrictEnforcement},
				Result:      Skip,
				Message:     "the run does not claim GRPCRoute, GRPCRouteStrictEnforcement",
				Unclaimed:   []gwfeatures.FeatureName{gwfeatures.SupportGRPCRoute, features.SupportGRPCRouteStrictEnforcement},
			},
			{
				ShortName: "HTTPRouteRequestTimeout",
				Source:    Upstream,
				Features:  append(http[:2:2], gwfeatures.SupportHTTPRouteRequestTimeout),
				Result:    Pass,
				Duration:  850 * time.Millisecond,
				Profiles:  []string{"GATEWAY-HTTP"},
				Observations: []observe.Observation{
					{Key: "elapsed", Value: "1.002s"},
				},
			},
		},
		Conformance: &confv1.ConformanceReport{
			TypeMeta:          metav1.TypeMeta{APIVersion: "gateway.networking.k8s.io/v1", Kind: "ConformanceReport"},
			Implementation:    testImplementation,
			Date:              "2026-03-01T12:00:42Z",
			GatewayAPIVersion: "v1.6.3",
			GatewayAPIChannel: "experimental",
			Mode:              "default",
			ProfileReports: []confv1.ProfileReport{
				{
					Name:    "GATEWAY-HTTP",
					Summary: "Core tests succeeded. Extended tests succeeded.",
					Core:    confv1.Status{Result: confv1.Success, Statistics: confv1.Statistics{Passed: 1}},
					Extended: &confv1.ExtendedStatus{
						Status:              confv1.Status{Result: confv1.Success, Statistics: confv1.Statistics{Passed: 1}},
						SupportedFeatures:   []string{"HTTPRouteRequestTimeout", "HTTPRouteRetry"},
						UnsupportedFeatures: []string{"HTTPRouteCORS"},
					},
				},
			},
		},
		GatewitnessProfiles: []confv1.ProfileReport{
			{
				Name:    features.ProfileHTTPResilience,
				Summary: "Core tests succeeded. Extended tests failed with 1 test failures.",
				Core:    confv1.Status{Result: confv1.Success},
				Extended: &confv1.ExtendedStatus{
					Status: confv1.Status{
						Result:      confv1.Failure,
						Statistics:  confv1.Statistics{Passed: 1, Failed: 1},
						FailedTests: []string{"HTTPRouteRetryBackoff"},
					},
					SupportedFeatures: []string{"HTTPRouteRetry", "HTTPRouteRetryBackoff", "HTTPRouteRetryCodes"},
				},
			},
		},
	}
}

func TestGoldenFiles(t *testing.T) {
	writers := []struct {
		file  string
		write func(*bytes.Buffer, *Run) error
	}{
		{"golden-report.yaml", func(b *bytes.Buffer, r *Run) error { return WriteConformanceYAML(b, r.Conformance) }},
		{"golden-gatewitness-report.yaml", func(b *bytes.Buffer, r *Run) error { return WriteGatewitnessYAML(b, r) }},
		{"golden-README.md", func(b *bytes.Buffer, r *Run) error { return WriteSubmissionReadme(b, r) }},
		{"golden-junit.xml", func(b *bytes.Buffer, r *Run) error { return WriteJUnit(b, r) }},
		{"golden-summary.md", func(b *bytes.Buffer, r *Run) error { return WriteMarkdown(b, r) }},
		{"golden-summary-short.md", func(b *bytes.Buffer, r *Run) error { return WriteMarkdownShort(b, r) }},
		{"golden-run.json", func(b *bytes.Buffer, r *Run) error { return WriteRunJSON(b, r) }},
	}
	for _, wr := range writers {
		t.Run(wr.file, func(t *testing.T) {
			var got bytes.Buffer
			if err := wr.write(&got, goldenRun()); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", wr.file)
			if *update {
				if err := os.WriteFile(path, got.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(got.Bytes(), want) {
				t.Errorf("%s differs from the golden file (run with -update if the change is intended)\n--- got\n%s\n--- want\n%s", wr.file, got.Bytes(), want)
			}
		})
	}
}

func TestConformanceYAMLRoundTrip(t *testing.T) {
	check := func(t *testing.T, report *confv1.ConformanceReport) {
		t.Helper()
		var buf bytes.Buffer
		if err := WriteConformanceYAML(&buf, report); err != nil {
			t.Fatal(err)
		}
		var back confv1.ConformanceReport
		if err := yaml.UnmarshalStrict(buf.Bytes(), &back); err != nil {
			t.Fatalf("the written YAML does not parse as a ConformanceReport: %v\n%s", err, buf.Bytes())
		}
		// The writer sorts profiles by name and changes nothing else.
		want := *report
		want.ProfileReports = slices.Clone(report.ProfileReports)
		slices.SortFunc(want.ProfileReports, func(a, b confv1.ProfileReport) int { return strings.Compare(a.Name, b.Name) })
		if !reflect.DeepEqual(back, want) {
			t.Errorf("round trip changed the report\n got: %+v\nwant: %+v", back, want)
		}
	}
	t.Run("golden", func(t *testing.T) { check(t, goldenRun().Conformance) })
	t.Run("upstream suite", func(t *testing.T) { check(t, upstreamReport(t)) })
}

// upstreamReport runs the upstream suite against a fake API server with
// tests that need no cluster (passing, skipped, not supported, in two
// profiles) and returns the report it builds.
func upstreamReport(t *testing.T) *confv1.ConformanceReport {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{
		Name: "httproutes.gateway.networking.k8s.io",
		Annotations: map[string]string{
			consts.BundleVersionAnnotation: consts.BundleVersion,
			consts.ChannelAnnotation:       "experimental",
		},
	}}
	s, err := suite.NewConformanceTestSuite(suite.ConformanceOptions{
		Client:     fake.NewClientBuilder().WithScheme(scheme).WithObjects(crd).Build(),
		RestConfig: &rest.Config{Host: "http://127.0.0.1:1"},
		ConfigurableOptions: suite.ConfigurableOptions{
			Implementation:      testImplementation,
			Mode:                "default",
			ConformanceProfiles: []suite.ConformanceProfileName{suite.GatewayHTTPConformanceProfileName, features.ProfileHTTPResilience},
			SupportedFeatures:   []gwfeatures.FeatureName{features.SupportHTTPRouteRetry, features.SupportHTTPRouteRetryCodes},
			SkipTests:           []string{"SkippedCore"},
		},
	})
	if err != nil {
		t.Fatalf("NewConformanceTestSuite: %v", err)
	}
	pass := func(*testing.T, *suite.ConformanceTestSuite) {}
	core := []gwfeatures.FeatureName{gwfeatures.SupportGateway, gwfeatures.SupportHTTPRoute}
	tests := []suite.ConformanceTest{
		{ShortName: "PassingCore", Features: core, Test: pass},
		{ShortName: "SkippedCore", Features: core, Test: pass},
		{ShortName: "PassingRetry", Features: append(core[:2:2], features.SupportHTTPRouteRetry), Test: pass},
		{ShortName: "PassingRetryCodes", Features: append(core[:2:2], features.SupportHTTPRouteRetry, features.SupportHTTPRouteRetryCodes), Test: pass},
		{ShortName: "SkipsItself", Features: append(core[:2:2], features.SupportHTTPRouteRetry), Test: func(t *testing.T, _ *suite.ConformanceTestSuite) {
			t.Skip("needs something this run lacks")
		}},
		{ShortName: "Unsupported", Features: append(core[:2:2], gwfeatures.SupportHTTPRouteCORS), Test: pass},
	}
	t.Run("suite", func(t *testing.T) {
		if err := s.Run(t, tests); err != nil {
			t.Fatal(err)
		}
	})
	report, err := s.Report()
	if err != nil {
		t.Fatal(err)
	}
	// The report is what the fixture intends: core and extended results,
	// with skips, in both profiles, and gatewitness's feature only in
	// gatewitness's profile.
	want := map[string][2]confv1.Statistics{
		"GATEWAY-HTTP":                 {{Passed: 1, Skipped: 1}, {Passed: 1, Skipped: 1}},
		features.ProfileHTTPResilience: {{Passed: 1, Skipped: 1}, {Passed: 2, Skipped: 1}},
	}
	if len(report.ProfileReports) != len(want) {
		t.Fatalf("upstream built %d profile reports, want %d: %+v", len(report.ProfileReports), len(want), report.ProfileReports)
	}
	for _, p := range report.ProfileReports {
		w, ok := want[p.Name]
		if !ok || p.Extended == nil || p.Core.Statistics != w[0] || p.Extended.Statistics != w[1] {
			t.Errorf("profile %s: %+v, want core %+v and extended %+v", p.Name, p, w[0], w[1])
		}
	}
	return report
}

func TestJUnitIsWellFormed(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteJUnit(&buf, goldenRun()); err != nil {
		t.Fatal(err)
	}
	if err := checkJUnit(buf.Bytes()); err != nil {
		t.Fatalf("JUnit output does not have the common JUnit shape: %v\n%s", err, buf.Bytes())
	}
	// Counts and per-case elements follow the run.
	doc := buf.String()
	for _, want := range []string{
		`<testsuites name="gatewitness" tests="6" failures="1" errors="0" time="42.517">`,
		`<testsuite name="upstream" tests="3" failures="0" errors="0" skipped="1" time="2.084" timestamp="2026-03-01T12:00:00">`,
		`<testsuite name="gatewitness" tests="3" failures="1" errors="0" skipped="1" time="5.504" timestamp="2026-03-01T12:00:00">`,
		`<testcase name="HTTPRouteRetryBackoff" classname="gatewitness" time="2.500">`,
		// The failure's message is the failing assertion; the log is in
		// system-out, with the observations after it.
		`<failure message="gap between attempts 1 and 2 is 12ms; want at least 100ms" type="failure">`,
		"<system-out><![CDATA[=== RUN   gatewitness/HTTPRouteRetryBackoff\n",
		"--- FAIL: gatewitness/HTTPRouteRetryBackoff (2.50s)\nobservations:\ngap[1] = 12ms\n",
		`<skipped message="the run does not claim GRPCRoute, GRPCRouteStrictEnforcement"></skipped>`,
		"code_500_is_retried: attempts = 3\n",
		"(2 more observations not shown)",
	} {
		if !strings.Contains(doc, want) {
			t.Errorf("JUnit output lacks %q", want)
		}
	}
	if strings.ContainsRune(doc, 0x1b) {
		t.Error("JUnit output contains ESC, which XML 1.0 forbids")
	}
}

func TestJUnitEmptyRun(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteJUnit(&buf, &Run{}); err != nil {
		t.Fatal(err)
	}
	if err := checkJUnit(buf.Bytes()); err != nil {
		t.Fatalf("JUnit output of an empty run: %v\n%s", err, buf.Bytes())
	}
}

func TestRunValidate(t *testing.T) {
	tests := []struct {
		name string
		run  *Run
		want string
	}{
		{"nil", nil, "run is nil"},
		{"empty name", &Run{Tests: []TestResult{{Result: Pass}}}, "Tests[0]: ShortName is empty"},
		{"duplicate", &Run{Tests: []TestResult{{ShortName: "A", Result: Pass}, {ShortName: "A", Result: Fail}}}, `Tests[1]: ShortName "A" appears twice`},
		{"bad result", &Run{Tests: []TestResult{{ShortName: "A", Result: "PASSED"}}}, `Tests[0] (A): Result is "PASSED"; want "pass", "fail", "skip", "inconclusive" or "interrupted"`},
		{"interrupted test in a complete run", &Run{Tests: []TestResult{{ShortName: "A", Result: Interrupted}}}, `Result is "interrupted" in a complete run`},
		{"interrupted without a signal", &Run{Status: RunInterrupted}, "no Interruption says by which signal"},
		{"interruption of a complete run", &Run{Interruption: &Interruption{Signal: "SIGINT"}}, "Interruption is set but Status is"},
		{"bad status", &Run{Status: "stopped"}, `run Status is "stopped"`},
		{"negative duration", &Run{Tests: []TestResult{{ShortName: "A", Result: Pass, Duration: -1}}}, "Tests[0] (A): Duration is -1ns"},
		{"negative run duration", &Run{Duration: -time.Second}, "run Duration is -1s"},
		{"negative dropped", &Run{Tests: []TestResult{{ShortName: "A", Result: Pass, DroppedObservations: -1}}}, "DroppedObservations is -1"},
		{"too many tests", &Run{Tests: make([]TestResult, MaxTests+1)}, "at most 10000 are accepted"},
		{"unnamed phase", &Run{Phases: []Phase{{Duration: time.Second}}}, "Phases[0]: Name is empty"},
		{"negative phase", &Run{Phases: []Phase{{Name: "set-up", Duration: -time.Second}}}, "Phases[0] (set-up): Duration is -1s"},
		{"too many phases", &Run{Phases: make([]Phase, MaxPhases+1)}, "at most 32 are accepted"},
	}
	for _, tt := range tests {
		err := tt.run.Validate()
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Validate() = %v, want an error containing %q", tt.name, err, tt.want)
		}
		var buf bytes.Buffer
		if WriteJUnit(&buf, tt.run) == nil || WriteMarkdown(&buf, tt.run) == nil {
			t.Errorf("%s: a writer accepted an invalid run", tt.name)
		}
	}
	if err := goldenRun().Validate(); err != nil {
		t.Errorf("Validate() of the golden run = %v", err)
	}
}

func TestConformanceFileName(t *testing.T) {
	r := goldenRun().Conformance
	name, err := ConformanceFileName(r)
	if err != nil || name != "experimental-v0.1.0-default-report.yaml" {
		t.Errorf("ConformanceFileName = %q, %v; want experimental-v0.1.0-default-report.yaml", name, err)
	}
	tests := []struct {
		change func(*confv1.ConformanceReport)
		want   string
	}{
		{func(r *confv1.ConformanceReport) { r.GatewayAPIChannel = "" }, "gatewayAPIChannel is empty"},
		{func(r *confv1.ConformanceReport) { r.Implementation.Version = "../v1" }, `implementation.version is "../v1"`},
		{func(r *confv1.ConformanceReport) { r.Implementation.Version = "v1/2" }, `has '/'`},
		{func(r *confv1.ConformanceReport) { r.Mode = "with the lot" }, `mode is "with the lot", which has ' '`},
	}
	for _, tt := range tests {
		r := *goldenRun().Conformance
		tt.change(&r)
		if _, err := ConformanceFileName(&r); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ConformanceFileName = %v, want an error containing %q", err, tt.want)
		}
	}
	if _, err := ConformanceFileName(nil); err == nil {
		t.Error("ConformanceFileName(nil) succeeded")
	}
	if err := WriteConformanceYAML(&bytes.Buffer{}, nil); err == nil {
		t.Error("WriteConformanceYAML(nil) succeeded")
	}
}

func TestMarkdownEscaping(t *testing.T) {
	tests := []struct{ in, text, code string }{
		{"plain", "plain", "`plain`"},
		{"a|b", `a\|b`, "`a\\|b`"},
		{"<b>*x*</b>", `\<b\>\*x\*\</b\>`, "`<b>*x*</b>`"},
		{"two\nlines", "two lines", "`two lines`"},
		{"has `tick`", "has \\`tick\\`", "`` has `tick` ``"},
		{"a``b", "a\\`\\`b", "```a``b```"},
		{"`start", "\\`start", "`` `start ``"},
		{"", "", ""},
	}
	for _, tt := range tests {
		if got := text(tt.in); got != tt.text {
			t.Errorf("text(%q) = %q, want %q", tt.in, got, tt.text)
		}
		if got := code(tt.in); got != tt.code {
			t.Errorf("code(%q) = %q, want %q", tt.in, got, tt.code)
		}
	}
	if got := codeFence("a ```` b"); got != "`````" {
		t.Errorf("codeFence = %q, want 5 backticks", got)
	}
}

func TestLongMessagesAndObservationsAreCut(t *testing.T) {
	obs := make([]observe.Observation, MaxObservationsWritten+3)
	for i := range obs {
		obs[i] = observe.Observation{Key: "n", Value: "v"}
	}
	run := &Run{Tests: []TestResult{{
		ShortName:    "Big",
		Result:       Fail,
		Message:      strings.Repeat("x", MaxMessageLen+100),
		Observations: obs,
	}}}
	for _, format := range []struct {
		name  string
		write func(*bytes.Buffer, *Run) error
	}{
		{"junit", func(b *bytes.Buffer, r *Run) error { return WriteJUnit(b, r) }},
		{"markdown", func(b *bytes.Buffer, r *Run) error { return WriteMarkdown(b, r) }},
	} {
		var buf bytes.Buffer
		if err := format.write(&buf, run); err != nil {
			t.Fatal(err)
		}
		out := buf.String()
		if strings.Contains(out, strings.Repeat("x", MaxMessageLen+1)) || !strings.Contains(out, "(100 more bytes cut)") {
			t.Errorf("%s: the message was not cut at %d bytes", format.name, MaxMessageLen)
		}
		if !strings.Contains(out, "3 more observations not shown") {
			t.Errorf("%s: the observations were not capped at %d", format.name, MaxObservationsWritten)
		}
		if n := strings.Count(out, "n = v") + strings.Count(out, "| `n` | `v` |"); n != MaxObservationsWritten {
			t.Errorf("%s: wrote %d observations, want %d", format.name, n, MaxObservationsWritten)
		}
	}
}

func TestJUnitKeepsAwkwardTextIntact(t *testing.T) {
	run := &Run{Tests: []TestResult{{
		ShortName:    "Awkward",
		Result:       Fail,
		Message:      "first]]>second\x00third\x07\r\n\x1b[1;31mred\x1b[0m\tend",
		Observations: []observe.Observation{{Key: "k", Value: "v]]>w"}},
	}}}
	var buf bytes.Buffer
	if err := WriteJUnit(&buf, run); err != nil {
		t.Fatal(err)
	}
	if err := checkJUnit(buf.Bytes()); err != nil {
		t.Fatalf("%v\n%s", err, buf.Bytes())
	}
	var doc struct {
		Suites []struct {
			Cases []struct {
				Failure struct {
					Text string `xml:",chardata"`
				} `xml:"failure"`
				SystemOut string `xml:"system-out"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	c := doc.Suites[0].Cases[0]
	if want := "first]]>second\uFFFDthird\uFFFD\nred\tend"; c.Failure.Text != want {
		t.Errorf("failure text = %q, want %q", c.Failure.Text, want)
	}
	if want := "k = v]]>w\n"; c.SystemOut != want {
		t.Errorf("system-out = %q, want %q", c.SystemOut, want)
	}
}
