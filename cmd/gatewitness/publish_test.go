package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gatewitness/gatewitness/internal/selfexec"
	"github.com/gatewitness/gatewitness/reports/site"
)

// fixture is a recorded run of the site's tests.
func fixture(name string) string {
	return filepath.Join("..", "..", "reports", "site", "testdata", name)
}

// copyRun copies a recorded run to dir/run.json, as gatewitness run writes it.
func copyRun(t *testing.T, src, dir string) string {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "run.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestReportCommand writes every output of a recorded run again, twice:
// in place and into another folder. The run record comes back unchanged,
// and the two renderings are the same, byte for byte.
func TestReportCommand(t *testing.T) {
	dir := t.TempDir()
	src := copyRun(t, fixture("night2-in-process.json"), filepath.Join(dir, "run"))
	recorded, _ := os.ReadFile(src)

	code, out, errs := run("report", filepath.Dir(src))
	if code != 0 || errs != "" {
		t.Fatalf("gatewitness report: exit %d, stderr %q", code, errs)
	}
	for _, want := range []string{"run.json", "junit.xml", "summary.md", "summary-short.md", "gatewitness-report.yaml",
		"-default-report.yaml", "README.md", filepath.Join("html", "index.html")} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("gatewitness report did not list %s:\n%s", want, out)
		}
	}
	if again, _ := os.ReadFile(src); !bytes.Equal(again, recorded) {
		t.Error("gatewitness report changed the run record it read")
	}
	other := filepath.Join(dir, "other")
	if code, _, errs := run("report", "--out", other, src); code != 0 {
		t.Fatalf("gatewitness report --out: exit %d, stderr %q", code, errs)
	}
	for _, f := range []string{"junit.xml", "summary.md", "gatewitness-report.yaml", filepath.Join("html", "index.html")} {
		a, _ := os.ReadFile(filepath.Join(dir, "run", f))
		b, err := os.ReadFile(filepath.Join(other, f))
		if err != nil || !bytes.Equal(a, b) || len(a) == 0 {
			t.Errorf("%s differs between two renderings of the same run (%v)", f, err)
		}
	}
	summary, _ := os.ReadFile(filepath.Join(other, "summary.md"))
	if !bytes.Contains(summary, []byte("HTTPRouteTimeoutsWithoutRetry")) {
		t.Error("summary.md does not name the run's failed test")
	}
}

// TestPublishCommand adds the recorded runs to a history, one call at a
// time as a nightly job does, and builds the site each time.
func TestPublishCommand(t *testing.T) {
	dir := t.TempDir()
	hist, site := filepath.Join(dir, "site", "history"), filepath.Join(dir, "site")
	n1 := copyRun(t, fixture("night1-in-process.json"), filepath.Join(dir, "n1"))
	n2 := copyRun(t, fixture("night2-in-process.json"), filepath.Join(dir, "n2"))
	lcp := copyRun(t, fixture("night2-localcp.json"), filepath.Join(dir, "lcp"))

	added := regexp.MustCompile(`(?m)^history: (\d{8}T\d{6}Z-[a-z0-9-]+)$`)
	code, out, errs := run("publish", "--history", hist, "--out", site, "--add", filepath.Dir(n1))
	if code != 0 || errs != "" || len(added.FindAllString(out, -1)) != 1 || !strings.Contains(out, "(") || !strings.Contains(out, "from 1 runs)") {
		t.Fatalf("first night: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	code, out, errs = run("publish", "--history", hist, "--out", site, "--add", n2, "--add", lcp, "--add", n1)
	if code != 0 || errs != "" || len(added.FindAllString(out, -1)) != 3 || !strings.Contains(out, "from 3 runs)") {
		t.Fatalf("second night: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	index, err := os.ReadFile(filepath.Join(site, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range added.FindAllStringSubmatch(out, -1) {
		if !bytes.Contains(index, []byte("runs/"+id[1]+"/index.html")) {
			t.Errorf("the index does not link run %s", id[1])
		}
	}
	code, out, _ = run("publish", "--history", hist, "--out", site, "--keep", "1")
	if code != 0 || !strings.Contains(out, "history: removed 2026") || !strings.Contains(out, "from 2 runs)") {
		t.Errorf("--keep 1: exit %d, stdout %q; want the older in-process run removed", code, out)
	}
}

func TestPublishAndReportUsage(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"publish"}, 2, "[--history DIR --out SITE] required"},
		{[]string{"publish", "--history", dir}, 2, "[--out SITE] required"},
		{[]string{"publish", "--history", filepath.Join(dir, "runs"), "--out", dir}, 2, "where the site's own files go"},
		{[]string{"publish", "--history", dir, "--out", dir}, 2, "where the site's own files go"},
		{[]string{"publish", "--history", "h", "--out", "s", "--nights", "401"}, 2, "--nights 401: want 1 to 400"},
		{[]string{"publish", "--history", "h", "--out", "s", "--nights", "-1"}, 2, "--nights -1: want 1 to 400"},
		{[]string{"publish", "--history", "h", "--out", "s", "--nights", "0"}, 2, "--nights 0: want 1 to 400"},
		{[]string{"publish", "--history", "h", "--out", "s", "--keep", "-1"}, 2, "--keep -1"},
		{[]string{"publish", "--history", "h", "--out", "s", "extra"}, 2, `unexpected argument "extra"`},
		{[]string{"publish", "--history", filepath.Join(dir, "h"), "--out", filepath.Join(dir, "s"), "--add", filepath.Join(dir, "none")}, 1, "no such file"},
		{[]string{"publish", "--history", filepath.Join(dir, "h"), "--out", filepath.Join(dir, "s"), "--add", dir}, 1, "holds no run.json"},
		{[]string{"publish", "--history", filepath.Join(dir, "empty"), "--out", filepath.Join(dir, "s")}, 1, "holds no run; add one with --add RUN"},
		{[]string{"publish", "--history", filepath.Join(dir, "new"), "--out", filepath.Join(dir, "s"), "--keep", "3"}, 1, "holds no run; add one with --add RUN"},
		{[]string{"publish", "--history", "h", "--out", "s", "--source-url", "x"}, 2, `--source-url "x": want an http or https URL`},
		{[]string{"report", "--source-url", "ftp://x/", "nothing"}, 2, `--source-url "ftp://x/"`},
		{[]string{"publish", "--bogus"}, 2, "flag provided but not defined: -bogus"},
		{[]string{"report"}, 2, "want one PATH"},
		{[]string{"report", "a", "b"}, 2, "want one PATH"},
		{[]string{"report", filepath.Join(dir, "nothing")}, 2, "no such file"},
		{[]string{"report", fixture("README.md")}, 1, "decoding the run record"},
	}
	for _, tt := range tests {
		code, _, errs := run(tt.args...)
		if code != tt.code || !strings.Contains(errs, tt.want) {
			t.Errorf("gatewitness %q: exit %d, stderr %q; want exit %d and %q", tt.args, code, errs, tt.code, tt.want)
		}
	}
	for _, cmd := range []string{"publish", "report"} {
		code, out, errs := run(cmd, "-help")
		if code != 0 || errs != "" || !strings.HasPrefix(out, "Usage: gatewitness "+cmd) || !strings.Contains(out, "-out") {
			t.Errorf("gatewitness %s -help: exit %d, stdout %.80q, stderr %q", cmd, code, out, errs)
		}
	}
}

// TestPublishAlerts: --alerts lists the failed tests of the runs added
// tonight, for the nightly to open issues on and fail the job; a night
// with none writes an empty list.
func TestPublishAlerts(t *testing.T) {
	dir := t.TempDir()
	hist, out, alerts := filepath.Join(dir, "site", "history"), filepath.Join(dir, "site"), filepath.Join(dir, "alerts.json")
	n1 := copyRun(t, fixture("night1-in-process.json"), filepath.Join(dir, "n1"))
	n2 := copyRun(t, fixture("night2-in-process.json"), filepath.Join(dir, "n2"))
	read := func() []map[string]any {
		t.Helper()
		data, err := os.ReadFile(alerts)
		if err != nil {
			t.Fatal(err)
		}
		var list []map[string]any
		if err := json.Unmarshal(data, &list); err != nil {
			t.Fatalf("%s: %v", data, err)
		}
		return list
	}
	if code, stdout, errs := run("publish", "--history", hist, "--out", out, "--add", n1, "--alerts", alerts); code != 0 || !strings.Contains(stdout, "(0 failed tests)") {
		t.Fatalf("night 1: exit %d, %q %q", code, stdout, errs)
	}
	if got := read(); len(got) != 0 {
		t.Errorf("night 1 failed no test, alerts %v", got)
	}
	if code, stdout, errs := run("publish", "--history", hist, "--out", out, "--add", n2, "--alerts", alerts); code != 0 || !strings.Contains(stdout, "(1 failed tests)") {
		t.Fatalf("night 2: exit %d, %q %q", code, stdout, errs)
	}
	got := read()
	if len(got) != 1 || got[0]["kind"] == "" || got[0]["test"] == "" || !strings.HasPrefix(got[0]["page"].(string), "runs/") {
		t.Errorf("night 2's alerts: %v; want its one failed test", got)
	}
}

// TestPublishHealsTheHistory: a history holding a run folder left empty
// and a truncated run.json (what a failed publish or a full disk used to
// leave) still builds, naming both as history problems on stderr and in
// the alerts; an interrupted run is added and shown, and raises no alert.
func TestPublishHealsTheHistory(t *testing.T) {
	dir := t.TempDir()
	hist, out := filepath.Join(dir, "history"), filepath.Join(dir, "site")
	empty := filepath.Join(hist, "20261101T020000Z-acme-gw-default-in-process")
	truncated := filepath.Join(hist, "20261102T020000Z-acme-gw-default-in-process", "run.json")
	for _, d := range []string{empty, filepath.Dir(truncated)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(truncated, []byte(`{"schema": "gatewitness.github.io/run/v1alpha1", "implementation": {"organ`), 0o644); err != nil {
		t.Fatal(err)
	}
	n1 := copyRun(t, fixture("night1-in-process.json"), filepath.Join(dir, "n1"))
	var rec map[string]any
	data, _ := os.ReadFile(n1)
	json.Unmarshal(data, &rec)
	rec["status"] = "interrupted"
	rec["interruption"] = map[string]any{"at": rec["started"], "signal": "SIGINT"}
	for _, tr := range rec["tests"].([]any) {
		if m := tr.(map[string]any); m["result"] == "fail" {
			m["result"] = "interrupted"
		}
	}
	data, _ = json.Marshal(rec)
	os.WriteFile(n1, data, 0o644)
	alerts := filepath.Join(dir, "alerts.json")

	code, stdout, stderr := run("publish", "--history", hist, "--out", out, "--add", filepath.Dir(n1), "--alerts", alerts)
	if code != 0 {
		t.Fatalf("publish onto a history with two bad folders: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, bad := range []string{filepath.Base(empty), filepath.Base(filepath.Dir(truncated))} {
		if !strings.Contains(stderr, "history problem, left out of the site: "+bad) {
			t.Errorf("stderr does not name %s as a history problem:\n%s", bad, stderr)
		}
	}
	var got []map[string]any
	raw, _ := os.ReadFile(alerts)
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0]["kind"] != "history-problem" || got[1]["kind"] != "history-problem" {
		t.Errorf("alerts %s; want the two history problems and no test of the interrupted run", raw)
	}
	index, _ := os.ReadFile(filepath.Join(out, "index.html"))
	if !bytes.Contains(index, []byte("History problems (2)")) || !bytes.Contains(index, []byte(">interrupted<")) {
		t.Error("the site's index does not list the history problems and the interrupted run")
	}
}

// TestReportRefusesATruncatedRecord: a run.json that holds only its schema
// (a write cut short) is refused, naming what it lacks, and no output is
// written over the folder's.
func TestReportRefusesATruncatedRecord(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "run.json")
	if err := os.WriteFile(path, []byte(`{"schema": "gatewitness.github.io/run/v1alpha1"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs := run("report", dir)
	if code == 0 || !strings.Contains(errs, "the run record is truncated: it has no implementation") {
		t.Errorf("gatewitness report of a truncated run.json: exit %d, stderr %q; want a refusal naming what it lacks", code, errs)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("gatewitness report wrote %d files beside a truncated record", len(ents)-1)
	}
}

// TestRunChecksTheReportFolderFirst: --report-dir naming a file stops the
// run before it starts, not after the suite has run.
func TestRunChecksTheReportFolderFirst(t *testing.T) {
	file := filepath.Join(t.TempDir(), "not-a-folder")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// A process of its own: the command hosts the suite as a test binary.
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(gatewitnessBinary(t), "run", "--in-process", "--report-dir", file)
	cmd.Env = selfexec.Env(envRunMain)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Run()
	code, out, errs := cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
	if code == 0 || !strings.Contains(errs, "reportDir (--report-dir): "+file+" is a file; want a folder") {
		t.Errorf("gatewitness run --report-dir FILE: exit %d, stderr %q; want a refusal naming the flag", code, errs)
	}
	if strings.Contains(out, "tests:") {
		t.Errorf("the run started (its header was printed) before the report folder was checked:\n%s", out)
	}
}

// TestPublishAddsAKilledRunsRecord: a report folder where a run was
// killed holds the previous run's run.json and the killed run's newer
// run.incomplete.json; publish --add adds the incomplete record, shown as
// such, with no alert for its tests.
func TestPublishAddsAKilledRunsRecord(t *testing.T) {
	dir := t.TempDir()
	folder := filepath.Join(dir, "reports")
	copyRun(t, fixture("night1-in-process.json"), folder)
	data, err := os.ReadFile(fixture("night2-in-process.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rec map[string]any
	if err := json.Unmarshal(data, &rec); err != nil {
		t.Fatal(err)
	}
	rec["status"] = "incomplete"
	data, _ = json.Marshal(rec)
	incomplete := filepath.Join(folder, "run.incomplete.json")
	if err := os.WriteFile(incomplete, data, 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	os.Chtimes(filepath.Join(folder, "run.json"), old, old)
	hist, out, alerts := filepath.Join(dir, "history"), filepath.Join(dir, "site"), filepath.Join(dir, "alerts.json")
	code, stdout, stderr := run("publish", "--history", hist, "--out", out, "--add", folder, "--alerts", alerts)
	if code != 0 || !strings.Contains(stdout, "(0 failed tests)") {
		t.Fatalf("publish --add of a killed run's folder: exit %d\n%s%s", code, stdout, stderr)
	}
	h, err := site.ReadHistory(hist)
	if err != nil || len(h.Entries) != 1 || h.Entries[0].Run.Status != "incomplete" {
		t.Fatalf("the history holds %v (%v); want the incomplete record alone", h, err)
	}
}
