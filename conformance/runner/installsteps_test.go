package runner_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatewitness/gatewitness/reports"
)

// TestInstallSteps: the steps that installed the implementation come from
// --install-steps FILE or the options file's installSteps key (the flag
// wins), bounded, with an error naming the flag or the key.
func TestInstallSteps(t *testing.T) {
	dir := t.TempDir()
	steps := filepath.Join(dir, "steps.md")
	if err := os.WriteFile(steps, []byte("helm install acme ./chart\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	opts := filepath.Join(dir, "opts.yaml")
	if err := os.WriteFile(opts, []byte("installSteps: |\n  kubectl apply -f acme.yaml\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if o, err := parse("--install-steps", steps); err != nil || o.InstallSteps != "helm install acme ./chart\n" {
		t.Errorf("--install-steps: %q, %v", o.InstallSteps, err)
	}
	if o, err := parse("--options-file", opts); err != nil || o.InstallSteps != "kubectl apply -f acme.yaml\n" {
		t.Errorf("installSteps in the options file: %q, %v", o.InstallSteps, err)
	}
	if o, err := parse("--options-file", opts, "--install-steps", steps); err != nil || o.InstallSteps != "helm install acme ./chart\n" {
		t.Errorf("the flag over the file: %q, %v", o.InstallSteps, err)
	}
	if _, err := parse("--install-steps", filepath.Join(dir, "none.md")); err == nil || !strings.Contains(err.Error(), "flag --install-steps:") {
		t.Errorf("a missing file: %v; want an error naming the flag", err)
	}
	big := filepath.Join(dir, "big.md")
	if err := os.WriteFile(big, []byte(strings.Repeat("x", reports.MaxInstallSteps+1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := parse("--install-steps", big); err == nil || !strings.Contains(err.Error(), "larger than 65536 bytes") {
		t.Errorf("a file too large: %v", err)
	}
	if err := os.WriteFile(opts, []byte("installSteps: "+strings.Repeat("x", reports.MaxInstallSteps+1)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := parse("--options-file", opts); err == nil || !strings.Contains(err.Error(), "installSteps:") {
		t.Errorf("installSteps too large: %v; want an error naming the key", err)
	}
}
