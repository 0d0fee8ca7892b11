package reports

import (
	"reflect"
	"strings"
	"testing"

	"github.com/gatewitness/gatewitness/internal/version"
)

// TestSubmissionReadmeIsReadyForReview writes the README of runs an
// implementer makes and checks that its Reproduce section holds nothing
// true of one machine only, has the install steps when given, and says
// plainly which gatewitness wrote it.
func TestSubmissionReadmeIsReadyForReview(t *testing.T) {
	cluster := func(change func(*Run)) *Run {
		run := goldenRun()
		run.Target.Server = "https://127.0.0.1:36679"
		run.CommandLine = []string{"gatewitness", "run", "--kubeconfig", "/tmp/kind-2561/kubeconfig", "--context=kind-x",
			"--report-dir=/tmp/gw-reports-123", "--install-steps", "/tmp/steps.md", "--options-file", "/home/me/acme/options.yaml",
			"--gateway-class", "acme", "--supported-features", "Gateway,HTTPRoute"}
		change(run)
		return run
	}
	tests := []struct {
		name      string
		run       *Run
		want, not []string
	}{
		{"a release with install steps", cluster(func(r *Run) {
			r.InstallSteps = "```sh\nhelm install acme oci://example.com/acme --version 0.1.0\n```"
		}), []string{
			"### 1. Install reference-gateway v0.1.0\n\n```sh\nhelm install acme oci://example.com/acme --version 0.1.0\n```",
			"go install github.com/gatewitness/gatewitness/cmd/gatewitness@v0.1.0",
			"gatewitness run --report-dir reports --options-file options.yaml --gateway-class acme --supported-features Gateway,HTTPRoute",
		}, []string{"To do before submitting"}},
		{"no install steps", cluster(func(r *Run) {}), []string{
			"**To do before submitting:** say how reference-gateway v0.1.0 was installed", "--install-steps FILE", "`installSteps` key",
		}, nil},
		{"a development build at a commit", cluster(func(r *Run) {
			r.Environment.GatewitnessVersion = "v0.0.0-20261127093000-0123456789ab"
		}), []string{
			"a development build of gatewitness, not a release: commit 0123456789ab.",
			"go install github.com/gatewitness/gatewitness/cmd/gatewitness@v0.0.0-20261127093000-0123456789ab",
		}, []string{", a release:"}},
		{"a development build with changes", cluster(func(r *Run) {
			r.Environment.GatewitnessVersion = "v0.0.0-20261127093000-0123456789ab+dirty"
		}), []string{"commit 0123456789ab with changes that were not committed"}, []string{"@v0.0.0-20261127093000-0123456789ab+dirty"}},
		{"a build without version control information", cluster(func(r *Run) {
			r.Environment.GatewitnessVersion = version.Unknown
		}), []string{"a development build of gatewitness, not a release, built without version control information"}, []string{"go install github.com/gatewitness/gatewitness/cmd/gatewitness@v"}},
		{"in-process", cluster(func(r *Run) {
			r.Target = Target{InProcess: true}
			r.CommandLine = []string{"gatewitness", "run", "--in-process", "--report-dir", "out/reports/reference"}
		}), []string{"Nothing to install", "gatewitness run --in-process --report-dir reports"}, []string{"KUBECONFIG"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			if err := WriteSubmissionReadme(&b, tt.run); err != nil {
				t.Fatal(err)
			}
			readme := b.String()
			_, repro, _ := strings.Cut(readme, "## Reproduce")
			for _, local := range []string{"127.0.0.1", "/tmp", "/home", "kind-x", "kubeconfig", "v0.0.0-unknown", "36679"} {
				if strings.Contains(repro, local) {
					t.Errorf("the Reproduce section has %q, true of one machine only:\n%s", local, repro)
				}
			}
			for _, w := range tt.want {
				if !strings.Contains(readme, w) {
					t.Errorf("the README lacks %q:\n%s", w, readme)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(readme, n) {
					t.Errorf("the README has %q:\n%s", n, readme)
				}
			}
			// It is a clean submission still, but for the placeholder of a
			// run given no installation steps.
			findings, err := VerifySubmission(writeSubmission(t, tt.run), testOptions())
			if tt.run.InstallSteps == "" && len(findings) == 1 && strings.Contains(findings[0].Message, readmePlaceholder) {
				findings = nil
			}
			if err != nil || len(findings) != 0 {
				t.Errorf("verify: %v %v", findings, err)
			}
		})
	}
}

func TestReproducibleCommand(t *testing.T) {
	got := ReproducibleCommand([]string{"gatewitness", "run", "--kubeconfig=/k", "-context", "c", "--report-dir", "/tmp/x",
		"--report-output", "/tmp/r/report.yaml", "--mode", "fast", "--in-process"})
	want := []string{"gatewitness", "run", "--report-dir", "reports", "--report-output", "report.yaml", "--mode", "fast", "--in-process"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ReproducibleCommand = %q, want %q", got, want)
	}
}
