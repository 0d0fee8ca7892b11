package main

import (
	"bytes"
	"os"
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

// TestVerifyReportJudgesAsUpstream runs the command on two of the trees
// reports.TestVerifyReportParity compares with upstream's script: an
// extra *.yaml with a bad channel fails the folder, a missing mode passes
// with a warning; links to the web are named, not fetched.
func TestVerifyReportJudgesAsUpstream(t *testing.T) {
	parity := filepath.Join("..", "..", "reports", "testdata", "verify-parity")
	code, out, _ := run("verify-report", filepath.Join(parity, "02-extra-yaml-bad-channel"))
	if code != 1 || !strings.Contains(out, `notes.yaml: error: channel: gatewayAPIChannel is "beta"`) {
		t.Errorf("an extra yaml with a bad channel: exit %d, output\n%s\nwant 1 and the channel error on notes.yaml", code, out)
	}
	// The tree's README links to {{web}}, which the parity test serves.
	tree := t.TempDir()
	if err := os.CopyFS(tree, os.DirFS(filepath.Join(parity, "05-missing-mode"))); err != nil {
		t.Fatal(err)
	}
	readme := filepath.Join(tree, "v1.6", "acme", "README.md")
	data, _ := os.ReadFile(readme)
	if err := os.WriteFile(readme, bytes.ReplaceAll(data, []byte("{{web}}"), []byte("https://example.invalid")), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ = run("verify-report", filepath.Join(tree, "v1.6", "acme"))
	if code != 0 || !strings.Contains(out, "mode is not set (upstream's script passes it)") || !strings.Contains(out, "links to the web not fetched (no --check-links") {
		t.Errorf("a missing mode: exit %d, output\n%s\nwant 0, the mode warning and the links not fetched", code, out)
	}
}
