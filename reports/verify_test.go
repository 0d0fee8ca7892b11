package reports

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	confv1 "sigs.k8s.io/gateway-api/conformance/apis/v1"
	gwfeatures "sigs.k8s.io/gateway-api/pkg/features"
)

func testNames() UpstreamNames {
	n := UpstreamNames{
		Profiles: []string{"GATEWAY-HTTP", "GATEWAY-GRPC", "GATEWAY-TLS", "MESH-HTTP"},
		Tests:    []string{"HTTPRouteSimpleSameNamespace", "HTTPRouteRequestTimeout", "MeshBasic"},
	}
	for _, f := range gwfeatures.AllFeatures.UnsortedList() {
		n.Features = append(n.Features, string(f.Name))
	}
	return n
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
	sub := filepath.Join(dir, "upstream", "v1.6.3", "gatewitness-reference-gateway")
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
	findings, err := VerifySubmission(want[5], testNames())
	if err != nil || len(findings) != 0 {
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
		{`{"schema":"` + RunSchema + `","x":"` + strings.Repeat("a", 4<<10) + `"}`, "larger than 4096 bytes"},
	} {
		if _, err := ReadRunJSON(strings.NewReader(bad.in)); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("ReadRunJSON(%.60q) = %v, want an error containing %q", bad.in, err, bad.want)
		}
	}
}

// TestVerifySubmissionFindsEachBrokenRule breaks one rule at a time in a
// written submission and checks that verify names it, and only it.
func TestVerifySubmissionFindsEachBrokenRule(t *testing.T) {
	tests := []struct {
		name string
		run  func(*Run)                             // changes the run before it is written
		file func(t *testing.T, path string) string // changes the files; returns the path to verify
		rule string
		want string
	}{
		{"file renamed", nil, func(t *testing.T, p string) string {
			q := filepath.Join(filepath.Dir(p), "report.yaml")
			mustRename(t, p, q)
			return q
		}, "file name", "want experimental-v0.1.0-default-report.yaml"},
		{"outside its version folder", nil, func(t *testing.T, p string) string {
			impl := filepath.Dir(p)
			q := filepath.Join(filepath.Dir(filepath.Dir(impl)), "v1.5.0", "x")
			if err := os.MkdirAll(filepath.Dir(q), 0o755); err != nil {
				t.Fatal(err)
			}
			mustRename(t, impl, q)
			return filepath.Join(q, filepath.Base(p))
		}, "version folder", "want it in v1.6.3/<implementation>/"},
		{"a branch as the version", func(run *Run) {
			run.Conformance.Implementation.Version = "main"
		}, nil, "semver", `implementation.version "main" is not a semantic version`},
		{"a failed core test", func(run *Run) {
			run.Conformance.ProfileReports[0].Core = confv1.Status{Result: confv1.Failure, FailedTests: []string{"HTTPRouteSimpleSameNamespace"}}
		}, nil, "results", `GATEWAY-HTTP core result is "failure" (failed: HTTPRouteSimpleSameNamespace)`},
		{"no profiles", func(run *Run) {
			run.Conformance.ProfileReports = nil
		}, nil, "results", "no profiles"},
		{"a gatewitness profile", func(run *Run) {
			run.Conformance.ProfileReports[0].Name = "GATEWITNESS-HTTP-RESILIENCE"
		}, nil, "profiles", "GATEWITNESS-HTTP-RESILIENCE is not an upstream profile"},
		{"a gatewitness test", func(run *Run) {
			run.Conformance.ProfileReports[0].Extended.SkippedTests = []string{"HTTPRouteRetryCodes"}
			run.Conformance.ProfileReports[0].Extended.Result = confv1.Partial
		}, nil, "tests", "HTTPRouteRetryCodes, which is not an upstream test"},
		{"a gatewitness feature", func(run *Run) {
			run.Conformance.ProfileReports[0].Extended.SupportedFeatures = []string{"HTTPRouteRetryCodes"}
		}, nil, "features", "HTTPRouteRetryCodes, which is not an upstream feature"},
		{"a channel of its own", func(run *Run) {
			run.Conformance.GatewayAPIChannel = "beta"
		}, nil, "channel", `gatewayAPIChannel is "beta"`},
		{"no contact", func(run *Run) {
			run.Conformance.Implementation.Contact = []string{" "}
		}, nil, "implementation", "contact is empty"},
		{"no url", func(run *Run) {
			run.Conformance.Implementation.URL = "github.com/acme"
		}, nil, "implementation", `url "github.com/acme" is not an http(s) URL`},
		{"a field upstream's report does not have", nil, func(t *testing.T, p string) string {
			data, _ := os.ReadFile(p)
			mustWrite(t, p, append(data, []byte("gatewitnessProfiles: []\n")...))
			return p
		}, "format", "not a ConformanceReport as upstream's suite writes it"},
		{"no README", nil, func(t *testing.T, p string) string {
			if err := os.Remove(filepath.Join(filepath.Dir(p), "README.md")); err != nil {
				t.Fatal(err)
			}
			return p
		}, "README", "every implementation folder needs a README.md"},
		{"a README row with another mode", nil, func(t *testing.T, p string) string {
			readme := filepath.Join(filepath.Dir(p), "README.md")
			data, _ := os.ReadFile(readme)
			mustWrite(t, readme, bytes.Replace(data, []byte("| default |"), []byte("| standard |"), 1))
			return p
		}, "README", `says mode "standard"; the report says "default"`},
		{"a README without Reproduce", nil, func(t *testing.T, p string) string {
			readme := filepath.Join(filepath.Dir(p), "README.md")
			data, _ := os.ReadFile(readme)
			cut, _, _ := bytes.Cut(data, []byte("## Reproduce"))
			mustWrite(t, readme, cut)
			return p
		}, "README", "no Reproduce section"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run := goldenRun()
			if tt.run != nil {
				tt.run(run)
			}
			path := writeSubmission(t, run)
			if tt.file != nil {
				path = tt.file(t, path)
			}
			findings, err := VerifySubmission(path, testNames())
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, f := range findings {
				if f.Rule == tt.rule && strings.Contains(f.Message, tt.want) {
					found = true
				}
			}
			if !found {
				t.Errorf("findings %v lack rule %q with %q", findings, tt.rule, tt.want)
			}
		})
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

func TestFindReports(t *testing.T) {
	dir := t.TempDir()
	report := writeSubmission(t, goldenRun())
	mustWrite(t, filepath.Join(dir, GatewitnessReportFileName), []byte("x"))
	got, err := FindReports([]string{filepath.Dir(filepath.Dir(filepath.Dir(report))), report})
	if err != nil || len(got) != 2 || got[0] != report || got[1] != report {
		t.Errorf("FindReports = %v, %v; want the report found in its folder and named", got, err)
	}
	if _, err := FindReports([]string{dir}); err == nil || !strings.Contains(err.Error(), "no file named *-report.yaml") {
		t.Errorf("a folder with only the gatewitness report: %v", err)
	}
}
