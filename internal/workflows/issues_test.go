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
	for _, tool := range []string{"bash", "jq"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
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
[{"number": 7, "body": "x\n<!-- gatewitness-key: s1/StillFails -->"},
 {"number": 8, "body": "y\n<!-- gatewitness-key: s1/Fixed -->"},
 {"number": 9, "body": "z\n<!-- gatewitness-key: s2/NotRun -->"}]
JSON
fi
`
	if err := os.WriteFile(filepath.Join(bin, "gh"), []byte(gh), 0o755); err != nil {
		t.Fatal(err)
	}
	alerts := filepath.Join(dir, "alerts.json")
	if err := os.WriteFile(alerts, []byte(`[
 {"key": "s1/StillFails", "series": "s1", "target": "in-process", "implementation": "acme gw v1", "test": "StillFails", "kind": "failing", "since": "2026-11-01", "message": "want 200, got 503", "page": "runs/x/tests/StillFails.html"},
 {"key": "s1/Broke", "series": "s1", "target": "in-process", "implementation": "acme gw v1", "test": "Broke", "kind": "broken", "since": "2026-11-02", "lastPassed": "2026-11-01", "message": "timeout", "page": "runs/x/tests/Broke.html"}
]`), 0o644); err != nil {
		t.Fatal(err)
	}
	series := filepath.Join(dir, "series")
	if err := os.WriteFile(series, []byte("s1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(root, "hack", "nightly-issues.sh"), alerts, series)
	cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "ISSUE_LABEL=nightly-failure",
		"SITE_URL=https://acme.github.io/gw/", "RUN_URL=https://github.com/acme/gw/actions/runs/1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("nightly-issues.sh: %v\n%s", err, out)
	}
	data, err := os.ReadFile(calls)
	if err != nil {
		t.Fatal(err)
	}
	got := string(data)
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
