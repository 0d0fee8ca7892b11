package reports

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeTwinReport(t *testing.T, dir, org, project string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	body := "apiVersion: gateway.networking.k8s.io/v1\nkind: ConformanceReport\nimplementation:\n  organization: " + org + "\n  project: " + project + "\n"
	if err := os.WriteFile(filepath.Join(dir, "experimental-v1.0.0-default-report.yaml"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A folder whose reports name the organization and project of another
// folder, in the same version or another, gets a warning naming that
// folder; folders of one name across versions, and other implementations,
// get none.
func TestImplementationTwinsWarn(t *testing.T) {
	root := t.TempDir()
	writeTwinReport(t, filepath.Join(root, "v1.5", "envoy-gateway"), "envoyproxy", "envoy-gateway")
	writeTwinReport(t, filepath.Join(root, "v1.6", "envoy-gateway"), "envoyproxy", "envoy-gateway")
	writeTwinReport(t, filepath.Join(root, "v1.6", "envoyproxy-envoy-gateway"), "EnvoyProxy", "Envoy-Gateway")
	writeTwinReport(t, filepath.Join(root, "v1.6", "kgateway"), "kgateway-dev", "kgateway")
	writeTwinReport(t, filepath.Join(root, "v1.5", "acme-gw"), "acme", "gw")
	got := implementationTwins([]string{filepath.Join(root, "v1.5"), filepath.Join(root, "v1.6")})
	var paths []string
	for _, c := range got {
		rel, _ := filepath.Rel(root, c.Path)
		paths = append(paths, rel)
		if len(c.Findings) != 1 || c.Findings[0].Severity != Warning || !strings.Contains(c.Findings[0].Message, "--report-folder") {
			t.Errorf("%s: %v; want one warning naming --report-folder", rel, c.Findings)
		}
	}
	want := []string{"v1.5/envoy-gateway", "v1.6/envoy-gateway", "v1.6/envoyproxy-envoy-gateway"}
	if strings.Join(paths, " ") != strings.Join(want, " ") {
		t.Fatalf("warned about %v; want %v", paths, want)
	}
	if msg := got[2].Findings[0].Message; !strings.Contains(msg, "folder envoy-gateway") || !strings.Contains(msg, "--report-folder envoy-gateway") {
		t.Errorf("the new folder's warning does not name the one to use: %s", msg)
	}
	// Through VerifyPaths, the tree and a version folder both warn.
	for _, p := range []string{root, filepath.Join(root, "v1.6")} {
		checked, _ := VerifyPaths([]string{p}, testOptions())
		n := 0
		for _, c := range checked {
			for _, f := range c.Findings {
				if strings.Contains(f.Message, "upstream keeps one folder per implementation") {
					n++
				}
			}
		}
		if n < 2 {
			t.Errorf("VerifyPaths(%s): %d twin warnings; want at least 2", p, n)
		}
	}
	// One implementation in one folder: no warning.
	if got := implementationTwins([]string{filepath.Join(root, "v1.5")}); len(got) != 0 {
		t.Errorf("v1.5 alone: %v; want no warning", got)
	}
}
