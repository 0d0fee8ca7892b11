package reports

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// parityCases are the trees of testdata/verify-parity and upstream's
// verdict on each: whether hack/verify-reports.sh fails (as read from the
// script, and as it gave when run here, see TestVerifyReportParity), and
// a finding verify-report must give.
var parityCases = []struct {
	name     string
	fails    bool     // upstream's verdict
	severity Severity // of the finding wanted ("" for none at all)
	want     string   // in that finding's text
}{
	{"01-clean", false, "", ""},
	{"02-extra-yaml-bad-channel", true, Error, `notes.yaml: error: channel: gatewayAPIChannel is "beta"`},
	{"03-dead-web-link", true, Error, "/gone is dead: HTTP status 404"},
	{"04-web-link-redirect-and-head-refused", false, "", ""},
	{"05-missing-mode", false, Warning, "mode is not set (upstream's script passes it)"},
	{"06-empty-mode", true, Error, "mode is empty"},
	{"07-success-with-failed-statistics", false, Warning, `GATEWAY-HTTP core: result "success" with statistics Passed: 33, Failed: 3, Skipped: 0; the suite writes "failure"`},
	{"08-version-of-another-folder", true, Error, "its gatewayAPIVersion v1.5.1 does not have the folder's major.minor v1.6"},
	{"09-version-without-v", true, Error, "its gatewayAPIVersion 1.6.3 does not have the folder's major.minor v1.6"},
	{"10-folder-named-with-patch", false, Warning, "upstream's folders are named major.minor: v1.6/"},
	{"11-bad-channel", true, Error, `gatewayAPIChannel is "beta"`},
	{"12-missing-channel", true, Error, `gatewayAPIChannel is "null"`},
	{"13-invalid-yaml", true, Error, "not YAML that yq reads"},
	{"14-no-readme", true, Error, "wants a README.md in every implementation folder"},
	{"15-link-to-missing-file", true, Error, "the link ./setup.md leads to no file"},
	{"16-link-to-missing-heading", true, Error, "the link #install leads to no heading"},
	{"17-no-yaml-in-folder", true, Error, "no *.yaml in the implementation folder"},
	{"18-file-in-version-folder", true, Error, "NOTES.md is a file in the version folder v1.6"},
	{"19-old-release-folder", false, Warning, "passes over version folders of releases before v1.1.0"},
	{"20-yml-and-subfolder", false, "", ""},
	{"21-bad-mail-address", true, Error, "mailto:maintainers is not a valid mail address"},
	{"22-link-out-of-the-folder", true, Error, "the link ../../README.md leads out of the implementation folder"},
}

// linkServer is the web the parity cases link to.
func linkServer(t *testing.T) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) {})
	mux.HandleFunc("/gone", http.NotFound)
	mux.Handle("/moved", http.RedirectHandler("/ok", http.StatusMovedPermanently))
	mux.HandleFunc("/get-only", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			http.Error(w, "GET only", http.StatusMethodNotAllowed)
		}
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// parityTree copies a case's tree to a new folder, its READMEs linking
// to web, and returns the folder.
func parityTree(t *testing.T, name, web string) string {
	t.Helper()
	dst := t.TempDir()
	src := filepath.Join("testdata", "verify-parity", name)
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		out := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(out, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(out, bytes.ReplaceAll(data, []byte("{{web}}"), []byte(web)), 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestVerifyReportParity verifies each tree of testdata/verify-parity
// with links fetched and checks verify-report's verdict is upstream's,
// with the finding that says why.
//
// With GATEWITNESS_UPSTREAM_VERIFY_REPORTS naming upstream's
// hack/verify-reports.sh (from a clone of kubernetes-sigs/gateway-api),
// and mikefarah's yq v4 and markdown-link-check on PATH, it also runs the
// script on each tree (its docker run of markdown-link-check replaced by
// the one on PATH) and checks it gives the verdict of the table.
func TestVerifyReportParity(t *testing.T) {
	srv := linkServer(t)
	script := upstreamScript(t)
	entries, _ := os.ReadDir(filepath.Join("testdata", "verify-parity"))
	dirs := 0
	for _, e := range entries {
		if e.IsDir() {
			dirs++
		}
	}
	if dirs != len(parityCases) {
		t.Errorf("testdata/verify-parity has %d cases, the table %d", dirs, len(parityCases))
	}
	agree := 0
	for _, tc := range parityCases {
		t.Run(tc.name, func(t *testing.T) {
			root := parityTree(t, tc.name, srv.URL)
			checked, err := VerifyPaths([]string{root}, VerifyOptions{Names: testNames(), CheckLinks: true})
			if err != nil {
				t.Fatal(err)
			}
			var lines []string
			for _, c := range checked {
				rel, _ := filepath.Rel(root, c.Path)
				for _, f := range c.Findings {
					lines = append(lines, filepath.ToSlash(rel)+": "+f.String())
				}
			}
			all := strings.Join(lines, "\n")
			if got := Failed(checked); got != tc.fails {
				t.Errorf("verify-report fails: %v; upstream's script fails: %v; findings:\n%s", got, tc.fails, all)
			}
			switch {
			case tc.severity == "" && len(lines) != 0:
				t.Errorf("findings on a tree upstream and its README's rules accept:\n%s", all)
			case tc.severity != "" && !strings.Contains(all, string(tc.severity)+": ") || !strings.Contains(all, tc.want):
				t.Errorf("no %s finding %q; findings:\n%s", tc.severity, tc.want, all)
			}
			if script != "" {
				if got := runUpstreamScript(t, script, root); got != tc.fails {
					t.Errorf("upstream's verify-reports.sh fails: %v; the table says %v", got, tc.fails)
				} else {
					agree++
				}
			}
		})
	}
	if script != "" {
		t.Logf("upstream's verify-reports.sh gave the table's verdict on %d of %d trees", agree, len(parityCases))
	}
}

// TestVerifyReportNamesWebLinksOffline checks that without CheckLinks
// the links to the web are not fetched but named, as not checked.
func TestVerifyReportNamesWebLinksOffline(t *testing.T) {
	root := parityTree(t, "03-dead-web-link", "http://example.invalid")
	checked, err := VerifyPaths([]string{root}, VerifyOptions{Names: testNames()})
	if err != nil {
		t.Fatal(err)
	}
	if Failed(checked) {
		t.Errorf("a link not fetched fails the tree: %v", checked)
	}
	var warned bool
	for _, c := range checked {
		for _, f := range c.Findings {
			warned = warned || f.Severity == Warning && f.Rule == ruleWebLinks &&
				strings.Contains(f.Message, "2 links to the web not fetched") && strings.Contains(f.Message, "http://example.invalid/gone")
		}
	}
	if !warned {
		t.Errorf("no warning naming the links not fetched: %v", checked)
	}
}

// upstreamScript returns the path of upstream's verify-reports.sh when
// the environment has it and the tools it runs, or "".
func upstreamScript(t *testing.T) string {
	script := os.Getenv("GATEWITNESS_UPSTREAM_VERIFY_REPORTS")
	if script == "" {
		t.Log("GATEWITNESS_UPSTREAM_VERIFY_REPORTS is not set: upstream's script is not run, its verdicts are the table's")
		return ""
	}
	out, err := exec.Command("yq", "--version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "mikefarah") {
		t.Fatalf("upstream's script needs mikefarah's yq v4 on PATH; yq --version: %s %v", out, err)
	}
	if _, err := exec.LookPath("markdown-link-check"); err != nil {
		t.Fatalf("upstream's script runs markdown-link-check: %v", err)
	}
	return script
}

// dockerShim stands in for the script's `docker run -v DIR:/NAME:ro ...
// IMAGE /NAME/README.md`: it runs markdown-link-check on a copy of DIR
// alone, as the container holds it (a link out of DIR leads nowhere).
const dockerShim = `#!/bin/bash
set -euo pipefail
src="" dst=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    -v) src="${2%%:*}"; dst="${2#*:}"; dst="${dst%%:*}"; shift 2 ;;
    *) last="$1"; shift ;;
  esac
done
root="$(mktemp -d)"
trap 'rm -rf "$root"' EXIT
mkdir -p "$root$(dirname "$dst")"
cp -r "$src" "$root$dst"
markdown-link-check "$root$last"
`

// runUpstreamScript runs upstream's script on the reports tree root and
// reports whether it failed.
func runUpstreamScript(t *testing.T, script, root string) bool {
	t.Helper()
	repo := t.TempDir()
	data, err := os.ReadFile(script)
	if err != nil {
		t.Fatal(err)
	}
	mustMkdir := func(p string) {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	mustMkdir(filepath.Join(repo, "hack"))
	mustMkdir(filepath.Join(repo, "bin"))
	mustMkdir(filepath.Join(repo, "conformance"))
	mustWrite(t, filepath.Join(repo, "hack", "verify-reports.sh"), data)
	if err := os.WriteFile(filepath.Join(repo, "bin", "docker"), []byte(dockerShim), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(root, filepath.Join(repo, "conformance", "reports")); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", filepath.Join(repo, "hack", "verify-reports.sh"))
	cmd.Env = append(os.Environ(), "PATH="+filepath.Join(repo, "bin")+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatalf("running upstream's script: %v", err)
	}
	t.Logf("upstream's verify-reports.sh (failed: %v):\n%s", err != nil, out)
	return err != nil
}
