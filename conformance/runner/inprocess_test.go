package runner_test

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gatewitness/gatewitness/conformance/runner"
	"github.com/gatewitness/gatewitness/reports"
)

// TestInProcessRun runs a handful of upstream tests, over HTTP and gRPC,
// against the in-process reference gateway and checks the results and
// the three report files. Run registers the run's end on t's cleanups, so
// the checks are in a cleanup registered first, which runs last.
func TestInProcessRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the in-process cluster and runs upstream tests")
	}
	selected := []string{"HTTPRouteSimpleSameNamespace", "HTTPRouteExactPathMatching", "HTTPRouteHeaderMatching", "GRPCExactMethodMatching"}
	o := runner.DefaultOptions()
	o.ReportDir = t.TempDir()
	var progress bytes.Buffer
	o.Progress = &progress
	skipAllBut(&o, func(name string) bool { return slices.Contains(selected, name) })

	runChecked(t, func() (*runner.Result, error) { return runner.Run(t, o) }, func(t *testing.T, res *runner.Result) {
		got := map[string]reports.Result{}
		for _, tr := range res.Run.Tests {
			got[tr.ShortName] = tr.Result
			if tr.Result == reports.Fail {
				t.Errorf("%s failed: %s", tr.ShortName, tr.Message)
			}
		}
		for _, name := range selected {
			if got[name] != reports.Pass {
				t.Errorf("%s: result %q, want pass", name, got[name])
			}
			if !strings.Contains(progress.String(), " PASS "+name+" (") {
				t.Errorf("no progress line for %s in:\n%s", name, progress.String())
			}
		}
		if len(res.Run.Tests) != len(runner.AllTests()) {
			t.Errorf("recorded %d tests, want every test the suite knows (%d)", len(res.Run.Tests), len(runner.AllTests()))
		}
		// Upstream's folders are named by major.minor: v1.6/ for v1.6.3.
		v := res.Run.Environment.GatewayAPIVersion
		upstreamDir := filepath.Join(o.ReportDir, reports.UpstreamDirName, v[:strings.LastIndex(v, ".")], "gatewitness-reference-gateway")
		names := []string{reports.RunFileName, reports.JUnitFileName, reports.MarkdownFileName, reports.MarkdownShortName, reports.GatewitnessReportFileName,
			filepath.Join(upstreamDir, "experimental-"+res.Run.Implementation.Version+"-default-report.yaml"),
			filepath.Join(upstreamDir, reports.SubmissionReadmeName)}
		if len(res.Files) != len(names) {
			t.Fatalf("Files = %v, want %v", res.Files, names)
		}
		for i, name := range names {
			if !filepath.IsAbs(name) {
				name = filepath.Join(o.ReportDir, name)
			}
			if res.Files[i] != name {
				t.Errorf("Files[%d] = %s, want %s", i, res.Files[i], name)
			}
			data, err := os.ReadFile(res.Files[i])
			if err != nil || len(data) == 0 {
				t.Errorf("%s: %d bytes, %v", name, len(data), err)
			}
		}
		if md, _ := os.ReadFile(res.Files[2]); !regexp.MustCompile(`(?s)## Passes \(4\).*HTTPRouteHeaderMatching`).Match(md) {
			t.Errorf("the Markdown summary does not show HTTPRouteHeaderMatching passing:\n%s", md)
		}
		y, _ := os.ReadFile(res.Files[5])
		if !bytes.Contains(y, []byte("name: GATEWAY-GRPC")) || !bytes.Contains(y, []byte("organization: gatewitness")) {
			t.Errorf("the ConformanceReport lacks the GATEWAY-GRPC profile or the implementation:\n%s", y)
		}
		if bytes.Contains(y, []byte("GATEWITNESS")) {
			t.Errorf("the upstream ConformanceReport names a gatewitness profile:\n%s", y)
		}
		g, _ := os.ReadFile(res.Files[4])
		if !bytes.Contains(g, []byte("name: GATEWITNESS-HTTP-RESILIENCE")) || bytes.Contains(g, []byte("name: GATEWAY-HTTP")) {
			t.Errorf("the gatewitness report lacks GATEWITNESS-HTTP-RESILIENCE or has an upstream profile:\n%s", g)
		}
		if !strings.HasPrefix(progress.String(), "target:       in-process") {
			t.Errorf("the progress output does not start with the target:\n%s", progress.String())
		}
	})
}
