package workflows

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestNightlyIssues runs hack/nightly-issues.sh with a stand-in for the gh
// CLI that records its calls: a test that fails again gets a comment on
// its open issue, a new failure a new issue, and the open issue of a test
// that ran tonight and passed is closed; an issue of a series that did
// not run tonight is left open.
func TestNightlyIssues(t *testing.T) {
	got := runNightlyIssues(t, "", twoAlerts, "")
	for _, want := range []string{
		"issue comment 7 --body **StillFails** still fails on in-process (acme gw v1).",
		"issue create --label nightly-failure --title Broke fails on in-process --body **Broke** broke tonight",
		"last passed 2026-11-01",
		"the test page: https://acme.github.io/gw/runs/x/tests/Broke.html",
		"<!-- gatewitness-key: s1/Broke -->",
		"issue close 8 --comment",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("gh was not called with %q; its calls:\n%s", want, got)
		}
	}
	for _, not := range []string{"issue close 9", "issue close 7", "issue create --label nightly-failure --title StillFails"} {
		if strings.Contains(got, not) {
			t.Errorf("gh was called with %q; its calls:\n%s", not, got)
		}
	}
}

// twoAlerts are two failed tests of the series s1: one failing again, one
// broken tonight.
const twoAlerts = `[
 {"key": "s1/StillFails", "series": "s1", "target": "in-process", "implementation": "acme gw v1", "test": "StillFails", "kind": "failing", "since": "2026-11-01", "message": "want 200, got 503", "page": "runs/x/tests/StillFails.html"},
 {"key": "s1/Broke", "series": "s1", "target": "in-process", "implementation": "acme gw v1", "test": "Broke", "kind": "broken", "since": "2026-11-02", "lastPassed": "2026-11-01", "message": "timeout", "page": "runs/x/tests/Broke.html"}
]`

// openIssues are the open issues gh lists: three of tests, and the
// night's summary when withSummary.
func openIssues(withSummary bool) string {
	s := `[{"number": 7, "body": "x\n<!-- gatewitness-key: s1/StillFails -->"},
 {"number": 8, "body": "y\n<!-- gatewitness-key: s1/Fixed -->"},
 {"number": 9, "body": "z\n<!-- gatewitness-key: s2/NotRun -->"}`
	if withSummary {
		s += `, {"number": 10, "body": "w\n<!-- gatewitness-key: nightly-summary -->"}`
	}
	return s + "]"
}

// runNightlyIssues runs hack/nightly-issues.sh on alerts, with a stand-in
// for the gh CLI that lists open (openIssues(false) when "") and records
// its calls, and returns them; maxIssues sets MAX_ISSUES unless "".
func runNightlyIssues(t *testing.T, open, alerts, maxIssues string) string {
	t.Helper()
	for _, tool := range []string{"bash", "jq"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
	if open == "" {
		open = openIssues(false)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	calls := filepath.Join(dir, "calls")
	gh := `#!/usr/bin/env bash
echo "$*" >> "` + calls + `"
if [ "$1 $2" = "issue list" ]; then
  cat <<'JSON'
` + open + `
JSON
fi
`
	if err := os.WriteFile(filepath.Join(bin, "gh"), []byte(gh), 0o755); err != nil {
		t.Fatal(err)
	}
	alertsFile := filepath.Join(dir, "alerts.json")
	if err := os.WriteFile(alertsFile, []byte(alerts), 0o644); err != nil {
		t.Fatal(err)
	}
	series := filepath.Join(dir, "series")
	if err := os.WriteFile(series, []byte("s1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(root, "hack", "nightly-issues.sh"), alertsFile, series)
	cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "ISSUE_LABEL=nightly-failure",
		"SITE_URL=https://acme.github.io/gw/", "RUN_URL=https://github.com/acme/gw/actions/runs/1")
	if maxIssues != "" {
		cmd.Env = append(cmd.Env, "MAX_ISSUES="+maxIssues)
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("nightly-issues.sh: %v\n%s", err, out)
	}
	data, err := os.ReadFile(calls)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestNightlyIssuesSummarisesABadNight: with more than MAX_ISSUES failed
// tests, one summary issue lists them and no issue is opened or
// commented on per test (the passed test's issue is still closed); the
// next night with fewer failures closes the summary.
func TestNightlyIssuesSummarisesABadNight(t *testing.T) {
	got := runNightlyIssues(t, "", twoAlerts, "1")
	for _, want := range []string{
		"issue create --label nightly-failure --title 2 tests failed in the nightly of ",
		"**2 tests failed tonight**, more than 1",
		"- StillFails on in-process (failing): want 200, got 503",
		"- Broke on in-process (broken): timeout",
		"<!-- gatewitness-key: nightly-summary -->",
		"issue close 8 --comment",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("gh was not called with %q; its calls:\n%s", want, got)
		}
	}
	for _, not := range []string{"issue comment 7", "--title Broke fails", "issue close 10"} {
		if strings.Contains(got, not) {
			t.Errorf("a night of more than MAX_ISSUES failures called gh with %q; its calls:\n%s", not, got)
		}
	}
	// Open already: commented on, not opened again.
	got = runNightlyIssues(t, openIssues(true), twoAlerts, "1")
	if !strings.Contains(got, "issue comment 10 --body **2 tests failed tonight**") || strings.Contains(got, "--title 2 tests failed") {
		t.Errorf("with the summary issue open, gh's calls:\n%s\nwant a comment on issue 10 and no new issue", got)
	}
	// A night back to two failures: per test again, the summary closed.
	got = runNightlyIssues(t, openIssues(true), twoAlerts, "")
	if !strings.Contains(got, "issue close 10 --comment 2 tests failed") || !strings.Contains(got, "issue comment 7") {
		t.Errorf("a night of MAX_ISSUES or fewer failures, gh's calls:\n%s\nwant issue 10 closed and issue 7 commented on", got)
	}
}
