package reports

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	confv1 "sigs.k8s.io/gateway-api/conformance/apis/v1"

	"github.com/gatewitness/gatewitness/features/upstreamnames"
)

// testNames are the names verify-report uses: each release's, and
// gatewitness's own (its profiles and features from the registry; a few of
// its tests, named here: this package does not import the suite, and
// cmd/gatewitness's test checks the whole list).
func testNames() Names {
	g := upstreamnames.Gatewitness([]string{"HTTPRouteRetryBackoffGaps", "HTTPRouteRetryCodesAndAttempts"})
	return Names{
		Release: func(v string) (UpstreamNames, string, bool) {
			n, _, ok := upstreamnames.ForRelease(v)
			return UpstreamNames{n.Profiles, n.Features, n.Tests}, n.Version, ok
		},
		Gatewitness: UpstreamNames{g.Profiles, g.Features, g.Tests},
	}
}

// testOptions verify with testNames and fetch links to the web from a
// web where every page is found.
func testOptions() VerifyOptions {
	return VerifyOptions{Names: testNames(), CheckLinks: true, Client: &http.Client{Transport: webOf(nil)}}
}

// webOf is a web in which the pages dead answer with their status and
// every other page with 200 OK.
type webOf map[string]int

func (w webOf) RoundTrip(req *http.Request) (*http.Response, error) {
	status := http.StatusOK
	if s, ok := w[req.URL.String()]; ok {
		status = s
	}
	return &http.Response{StatusCode: status, Body: http.NoBody, Request: req, Header: http.Header{}}, nil
}

// submittable gives run the installation steps a run with a ready README
// has.
func submittable(run *Run) *Run {
	run.InstallSteps = "Installed with `helm install acme ./chart`."
	return run
}

// writeSubmission writes run's reports to a new directory and returns the
// path of its upstream report.
func writeSubmission(t *testing.T, run *Run) string {
	t.Helper()
	dir := t.TempDir()
	files, err := WriteAll(dir, run)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "-report.yaml") && !strings.HasSuffix(f, GatewitnessReportFileName) {
			return f
		}
	}
	t.Fatalf("WriteAll wrote no upstream report: %v", files)
	return ""
}

func TestWriteAllLaysOutASubmission(t *testing.T) {
	dir := t.TempDir()
	files, err := WriteAll(dir, goldenRun())
	if err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "upstream", "v1.6", "gatewitness-reference-gateway")
	want := []string{"run.json", "junit.xml", "summary.md", "summary-short.md", "gatewitness-report.yaml",
		filepath.Join(sub, "experimental-v0.1.0-default-report.yaml"), filepath.Join(sub, "README.md")}
	for i := range want {
		if !filepath.IsAbs(want[i]) {
			want[i] = filepath.Join(dir, want[i])
		}
	}
	if !reflect.DeepEqual(files, want) {
		t.Fatalf("WriteAll wrote %v, want %v", files, want)
	}
	// The golden run was given no installation steps: the README says so,
	// and verify warns of it; nothing else.
	findings, err := VerifySubmission(want[5], testOptions())
	if err != nil || len(findings) != 1 || !strings.Contains(findings[0].Message, "still says **To do before submitting:**") {
		t.Errorf("the written submission breaks upstream's rules: %v %v", findings, err)
	}
	// A run with no upstream side writes no upstream report.
	run := goldenRun()
	run.Conformance = nil
	files, err = WriteAll(t.TempDir(), run)
	if err != nil || len(files) != 5 {
		t.Errorf("without an upstream report: %v, %v", files, err)
	}
}

func TestWriteAllUsesTheReportFolder(t *testing.T) {
	dir := t.TempDir()
	run := goldenRun()
	run.ReportFolder = "envoy-gateway"
	files, err := WriteAll(dir, run)
	if err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "upstream", "v1.6", "envoy-gateway")
	if !slices.Contains(files, filepath.Join(sub, "experimental-v0.1.0-default-report.yaml")) || !slices.Contains(files, filepath.Join(sub, "README.md")) {
		t.Errorf("with ReportFolder envoy-gateway, WriteAll wrote %v; want the report and README under %s", files, sub)
	}
	if _, err := os.Stat(filepath.Join(dir, "upstream", "v1.6", "gatewitness-reference-gateway")); !os.IsNotExist(err) {
		t.Errorf("the default folder was written too (%v)", err)
	}
	for _, bad := range []string{"Envoy", "envoy_gateway", "-envoy", "envoy-", "a--b", "v1.6/x", strings.Repeat("a", 101)} {
		run.ReportFolder = bad
		if _, err := WriteAll(t.TempDir(), run); err == nil || !strings.Contains(err.Error(), "ReportFolder") {
			t.Errorf("ReportFolder %q: WriteAll error %v; want one naming ReportFolder", bad, err)
		}
	}
}

func TestRunJSONRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteRunJSON(&buf, goldenRun()); err != nil {
		t.Fatal(err)
	}
	back, err := ReadRunJSON(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, goldenRun()) {
		t.Errorf("the run record changed in a round trip:\n got %+v\nwant %+v", back, goldenRun())
	}
	// Every file written from the record read back is the same.
	a, b := t.TempDir(), t.TempDir()
	fa, errA := WriteAll(a, goldenRun())
	fb, errB := WriteAll(b, back)
	if errA != nil || errB != nil || len(fa) != len(fb) {
		t.Fatalf("WriteAll: %v %v", errA, errB)
	}
	for i := range fa {
		x, _ := os.ReadFile(fa[i])
		y, _ := os.ReadFile(fb[i])
		if !bytes.Equal(x, y) {
			t.Errorf("%s differs when written from the record read back", filepath.Base(fa[i]))
		}
	}
	defer func(n int) { runJSONLimit = n }(runJSONLimit)
	runJSONLimit = 4 << 10
	for _, bad := range []struct{ in, want string }{
		{`{"schema":"gatewitness.github.io/run/v9"}`, `schema is "gatewitness.github.io/run/v9"`},
		{`{"schema":"` + RunSchema + `","tests":[{"shortName":"A","result":"maybe"}]}`, `Result is "maybe"`},
		{`[1,2]`, "decoding the run record"},
		{``, "the run record is empty"},
		{`{"schema":"` + RunSchema + `"}`, "the run record is truncated: it has no implementation, mode, started, duration, target, environment, claims, tests"},
		{`{"schema":"` + RunSchema + `","implementation":{"organ`, "truncated, or not a run record?"},
		{`{"schema":"` + RunSchema + `","x":"` + strings.Repeat("a", 4<<10) + `"}`, "larger than 4096 bytes"},
	} {
		if _, err := ReadRunJSON(strings.NewReader(bad.in)); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("ReadRunJSON(%.60q) = %v, want an error containing %q", bad.in, err, bad.want)
		}
	}
}

// TestVerifySubmissionFindsEachBrokenRule breaks one rule at a time in a
// written submission and checks that verify names it in one line, with
// the severity upstream gives it, and finds nothing else.
func TestVerifySubmissionFindsEachBrokenRule(t *testing.T) {
	readme := func(t *testing.T, p string, old, new string) string {
		t.Helper()
		path := filepath.Join(filepath.Dir(p), "README.md")
		data, _ := os.ReadFile(path)
		if !bytes.Contains(data, []byte(old)) {
			t.Fatalf("the README has no %q:\n%s", old, data)
		}
		mustWrite(t, path, bytes.Replace(data, []byte(old), []byte(new), 1))
		return p
	}
	report := func(t *testing.T, p string, old, new string) string {
		t.Helper()
		data, _ := os.ReadFile(p)
		if !bytes.Contains(data, []byte(old)) {
			t.Fatalf("the report has no %q", old)
		}
		mustWrite(t, p, bytes.Replace(data, []byte(old), []byte(new), 1))
		return p
	}
	tests := []struct {
		name string
		run  func(*Run)                             // changes the run before it is written
		file func(t *testing.T, path string) string // changes the files; returns the path to verify
		sev  Severity
		rule string
		want string
	}{
		// Errors: what upstream's hack/verify-reports.sh enforces.
		{"in another release's folder", nil, func(t *testing.T, p string) string {
			impl := filepath.Dir(p)
			q := filepath.Join(filepath.Dir(filepath.Dir(impl)), "v1.5", filepath.Base(impl))
			if err := os.MkdirAll(filepath.Dir(q), 0o755); err != nil {
				t.Fatal(err)
			}
			mustRename(t, impl, q)
			return filepath.Join(q, filepath.Base(p))
		}, Error, "version folder", "its gatewayAPIVersion v1.6.3 does not have the folder's major.minor v1.5"},
		{"a channel of its own", func(run *Run) {
			run.Conformance.GatewayAPIChannel = "beta"
		}, nil, Error, "channel", `gatewayAPIChannel is "beta"; want standard or experimental`},
		{"no mode", nil, func(t *testing.T, p string) string {
			return report(t, p, "mode: default", `mode: ""`)
		}, Error, "mode", "mode is empty"},
		{"empty", nil, func(t *testing.T, p string) string {
			mustWrite(t, p, []byte("\n"))
			return p
		}, Error, "format", "the report is empty"},
		{"truncated", nil, func(t *testing.T, p string) string {
			data, _ := os.ReadFile(p)
			mustWrite(t, p, data[:bytes.Index(data, []byte("profiles:"))])
			return p
		}, Error, "format", "the report is truncated or not a ConformanceReport: it has no profiles"},
		{"no README", nil, func(t *testing.T, p string) string {
			if err := os.Remove(filepath.Join(filepath.Dir(p), "README.md")); err != nil {
				t.Fatal(err)
			}
			return p
		}, Error, "README", "wants a README.md in every implementation folder"},
		{"a README link to no file", nil, func(t *testing.T, p string) string {
			return readme(t, p, "## Reproduce\n", "## Reproduce\n\nSee [the setup](./setup.md).\n")
		}, Error, ruleLinks, "the link ./setup.md leads to no file"},
		// Errors: gatewitness's names in a report for upstream.
		{"a gatewitness profile", func(run *Run) {
			run.Conformance.ProfileReports[0].Name = "GATEWITNESS-HTTP-RESILIENCE"
		}, nil, Error, "gatewitness names", "the profile GATEWITNESS-HTTP-RESILIENCE, which is gatewitness's"},
		{"a gatewitness test", func(run *Run) {
			ext := run.Conformance.ProfileReports[0].Extended
			ext.SkippedTests = []string{"HTTPRouteRetryBackoffGaps"}
			ext.Result, ext.Skipped = confv1.Partial, 1
		}, nil, Error, "gatewitness names", "the test HTTPRouteRetryBackoffGaps, which is gatewitness's"},
		{"a gatewitness feature", func(run *Run) {
			run.Conformance.ProfileReports[0].Extended.SupportedFeatures = []string{"HTTPRouteRetryCodes"}
		}, nil, Error, "gatewitness names", "the feature HTTPRouteRetryCodes, which is gatewitness's"},
		// Warnings: the README's guidance, which upstream has merged reports without.
		{"a folder named with the patch release", nil, func(t *testing.T, p string) string {
			impl := filepath.Dir(p)
			q := filepath.Join(filepath.Dir(filepath.Dir(impl)), "v1.6.3", filepath.Base(impl))
			if err := os.MkdirAll(filepath.Dir(q), 0o755); err != nil {
				t.Fatal(err)
			}
			mustRename(t, impl, q)
			return filepath.Join(q, filepath.Base(p))
		}, Warning, ruleStructure, "upstream's folders are named major.minor: v1.6/"},
		{"file renamed", nil, func(t *testing.T, p string) string {
			q := filepath.Join(filepath.Dir(p), "v0.1.0-report.yaml")
			mustRename(t, p, q)
			readme(t, p, "(./"+filepath.Base(p)+")", "(./v0.1.0-report.yaml)")
			return q
		}, Warning, ruleFileName, "the rule names it experimental-v0.1.0-default-report.yaml"},
		{"a branch as the version", func(run *Run) {
			run.Conformance.Implementation.Version = "main"
		}, nil, Warning, ruleImpl, `version "main" is not a semantic version`},
		{"a failed core test", func(run *Run) {
			run.Conformance.ProfileReports[0].Core = confv1.Status{Result: confv1.Failure, FailedTests: []string{"HTTPRouteSimpleSameNamespace"}, Statistics: confv1.Statistics{Failed: 1}}
		}, nil, Warning, ruleResult, `GATEWAY-HTTP core result is "failure" (failed: HTTPRouteSimpleSameNamespace)`},
		{"no profiles", func(run *Run) {
			run.Conformance.ProfileReports = nil
		}, nil, Warning, ruleResult, "no profiles"},
		{"no contact", func(run *Run) {
			run.Conformance.Implementation.Contact = []string{" "}
		}, nil, Warning, ruleImpl, "contact is empty"},
		{"no url", func(run *Run) {
			run.Conformance.Implementation.URL = "github.com/acme"
		}, nil, Warning, ruleImpl, `url "github.com/acme" is not an http(s) URL`},
		{"a field upstream's report does not have", nil, func(t *testing.T, p string) string {
			data, _ := os.ReadFile(p)
			mustWrite(t, p, append(data, []byte("gatewitnessProfiles: []\n")...))
			return p
		}, Warning, ruleAsCreated, "not a ConformanceReport as upstream's suite writes it"},
		{"a test of another release", func(run *Run) {
			core := &run.Conformance.ProfileReports[0].Core
			core.SkippedTests = []string{"GatewayInfrastructureMetadata"}
			core.Result, core.Skipped = confv1.Partial, 1
			run.Conformance.GatewayAPIVersion = "v1.6.1"
		}, nil, Warning, ruleRelease, "the test GatewayInfrastructureMetadata, which Gateway API v1.6.1 does not have"},
		{"a README row with another mode", nil, func(t *testing.T, p string) string {
			return readme(t, p, "| default |", "| standard |")
		}, Warning, ruleTOC, `says mode "standard"; the report says "default"`},
		{"a README link reading [link]", nil, func(t *testing.T, p string) string {
			return readme(t, p, "[v0.1.0 report](./", "[link](./")
		}, Warning, ruleLinkText, "links it as [link]; the rule asks for [v0.1.0 report](./experimental-v0.1.0-default-report.yaml)"},
		{"a README without Reproduce", nil, func(t *testing.T, p string) string {
			path := filepath.Join(filepath.Dir(p), "README.md")
			data, _ := os.ReadFile(path)
			cut, _, _ := bytes.Cut(data, []byte("## Reproduce"))
			mustWrite(t, path, cut)
			return p
		}, Warning, ruleReproduce, "no Reproduce section"},
		{"the README's placeholder for the installation", func(run *Run) {
			run.InstallSteps = ""
		}, nil, Warning, ruleReproduce, "README.md still says **To do before submitting:**"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run := submittable(goldenRun())
			if tt.run != nil {
				tt.run(run)
			}
			path := writeSubmission(t, run)
			if tt.file != nil {
				path = tt.file(t, path)
			}
			findings, err := VerifySubmission(path, testOptions())
			if err != nil {
				t.Fatal(err)
			}
			if len(findings) != 1 {
				t.Fatalf("%d findings, want exactly one (%s %s %q):\n%v", len(findings), tt.sev, tt.rule, tt.want, findings)
			}
			f := findings[0]
			if f.Severity != tt.sev || f.Rule != tt.rule || !strings.Contains(f.Message, tt.want) {
				t.Errorf("finding %q; want %s: %s: ...%s...", f, tt.sev, tt.rule, tt.want)
			}
			if strings.Contains(f.String(), "\n") {
				t.Errorf("finding %q spans more than one line", f)
			}
		})
	}
}

// TestUpstreamMergedReportsVerify runs the verifier over every report
// upstream merged for v1.5 and v1.6 (testdata/upstream-reports, see its
// SOURCE.md): a verifier that refuses what upstream accepts fails every
// implementer who uses it. None may have an error; the warnings they have
// are the README's guidance they depart from.
func TestUpstreamMergedReportsVerify(t *testing.T) {
	root := filepath.Join("testdata", "upstream-reports")
	perRelease := map[string]int{}
	checked, err := VerifyPaths([]string{root}, VerifyOptions{Names: testNames()})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range checked {
		for _, e := range Errors(c.Findings) {
			t.Errorf("%s: %s", c.Path, e)
		}
		if strings.HasSuffix(c.Path, ".yaml") {
			rel, _ := filepath.Rel(root, c.Path)
			perRelease[strings.Split(filepath.ToSlash(rel), "/")[0]]++
		}
	}
	// As merged at the fixtures' commit: 17 reports of 13 implementations
	// in v1.6, 21 in v1.5.
	if perRelease["v1.6"] != 17 || perRelease["v1.5"] != 21 {
		t.Errorf("reports per release %v; want v1.6: 17, v1.5: 21", perRelease)
	}
}

// TestOwnReportVerifiesInUpstreamsLayout puts gatewitness's submission
// where upstream keeps reports, beside the implementations upstream
// merged, and verifies the whole folder: gatewitness's report is as clean
// as the cleanest of them, and adding it breaks none of theirs.
func TestOwnReportVerifiesInUpstreamsLayout(t *testing.T) {
	tree := t.TempDir()
	if err := os.CopyFS(tree, os.DirFS(filepath.Join("testdata", "upstream-reports"))); err != nil {
		t.Fatal(err)
	}
	sub, err := SubmissionDir(goldenRun().Conformance)
	if err != nil || sub != "v1.6/gatewitness-reference-gateway" {
		t.Fatalf("SubmissionDir = %q, %v; want v1.6/gatewitness-reference-gateway", sub, err)
	}
	written := writeSubmission(t, submittable(goldenRun()))
	if err := os.CopyFS(filepath.Join(tree, filepath.FromSlash(sub)), os.DirFS(filepath.Dir(written))); err != nil {
		t.Fatal(err)
	}
	checked, err := VerifyPaths([]string{filepath.Join(tree, "v1.6")}, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	own, reports := 0, 0
	for _, c := range checked {
		if strings.HasSuffix(c.Path, ".yaml") {
			reports++
		}
		if strings.Contains(c.Path, "gatewitness-reference-gateway") {
			own++
			if len(c.Findings) != 0 {
				t.Errorf("gatewitness's own submission in upstream's layout: %s: %v", c.Path, c.Findings)
			}
		} else if errs := Errors(c.Findings); len(errs) != 0 {
			t.Errorf("%s: %v", c.Path, errs)
		}
	}
	if own != 2 || reports != 18 {
		t.Errorf("%d reports in v1.6, %d files of gatewitness's checked; want 18 and 2 (its report and README)", reports, own)
	}
}

func mustRename(t *testing.T, from, to string) {
	t.Helper()
	if err := os.Rename(from, to); err != nil {
		t.Fatal(err)
	}
}

func mustWrite(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
