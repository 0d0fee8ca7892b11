package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// upstreamReports is the folder of upstream's merged reports kept as
// fixtures (see its SOURCE.md).
var upstreamReports = filepath.Join("..", "..", "reports", "testdata", "upstream-reports")

// TestVerifyReportPassesUpstreamsMergedReports runs the command as an
// implementer would on upstream's own v1.6 folder: every report upstream
// merged has no error, so the command exits 0 and prints the count.
func TestVerifyReportPassesUpstreamsMergedReports(t *testing.T) {
	code, out, errs := run("verify-report", filepath.Join(upstreamReports, "v1.6"))
	if code != 0 || errs != "" {
		t.Fatalf("verify-report v1.6: exit %d, stderr %q\n%s", code, errs, out)
	}
	if !strings.Contains(out, "17 reports: 0 errors,") {
		t.Errorf("verify-report v1.6 printed no count of 17 reports with 0 errors:\n%s", out)
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, ": error: ") {
			t.Errorf("an error on a merged report: %s", line)
		}
	}
	// A report with warnings only fails with --strict.
	agw := filepath.Join(upstreamReports, "v1.6", "agentgateway-agentgateway")
	if code, out, _ := run("verify-report", agw); code != 0 || !strings.Contains(out, `warning: README rule "Table of Contents: Report" (file name)`) {
		t.Errorf("verify-report on agentgateway: exit %d, output\n%s\nwant 0 and the file-name warning", code, out)
	}
	if code, _, _ := run("verify-report", "--strict", agw); code != 1 {
		t.Errorf("verify-report --strict on a report with warnings: exit %d, want 1", code)
	}
}
