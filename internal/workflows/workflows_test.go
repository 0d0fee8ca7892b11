package workflows

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rhysd/actionlint"
)

// root is the repository's root, from this package's folder.
const root = "../.."

// workflowFiles are every workflow of the repository and the templates
// in docs/workflows.
func workflowFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	for _, pattern := range []string{".github/workflows/*.yml", ".github/workflows/*.yaml", "docs/workflows/*.yml", "docs/workflows/*.yaml"} {
		m, err := filepath.Glob(filepath.Join(root, pattern))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) < 3 {
		t.Fatalf("found %q; want at least ci.yml, nightly.yml and the template for implementers", files)
	}
	return files
}

// lint runs actionlint on files, with shellcheck on the scripts when it is
// installed, and returns its findings as text.
func lint(t *testing.T, files ...string) []string {
	t.Helper()
	opts := &actionlint.LinterOptions{WorkingDir: root}
	if sc, err := exec.LookPath("shellcheck"); err == nil {
		opts.Shellcheck = sc
	} else {
		t.Log("shellcheck is not installed: the workflows' scripts are not checked with it (apt-get install shellcheck)")
	}
	var out bytes.Buffer
	l, err := actionlint.NewLinter(&out, opts)
	if err != nil {
		t.Fatal(err)
	}
	errs, err := l.LintFiles(files, nil)
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, e := range errs {
		found = append(found, e.Error())
	}
	return found
}

// TestActionlint checks every workflow with actionlint (syntax, expressions,
// action inputs, cron, runner labels, and the scripts with shellcheck).
func TestActionlint(t *testing.T) {
	files := workflowFiles(t)
	if found := lint(t, files...); len(found) > 0 {
		t.Errorf("actionlint found:\n%s", strings.Join(found, "\n"))
	}
	t.Logf("checked %d workflows: %q", len(files), files)
}

// TestActionlintFindsMistakes shows the check can fail: a workflow with a
// bad cron, an unknown action input and an unknown context property.
func TestActionlintFindsMistakes(t *testing.T) {
	found := strings.Join(lint(t, "testdata/broken.yml"), "\n")
	for _, want := range []string{"61", "no-such-input", "no_such_property"} {
		if !strings.Contains(found, want) {
			t.Errorf("actionlint did not report %q in testdata/broken.yml; it found:\n%s", want, found)
		}
	}
}

// parse reads a workflow with actionlint's parser.
func parse(t *testing.T, path string) *actionlint.Workflow {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		t.Fatal(err)
	}
	wf, errs := actionlint.Parse(src)
	if len(errs) > 0 {
		t.Fatalf("%s: %v", path, errs)
	}
	return wf
}

// runs returns every step's run script and every action a workflow uses.
func steps(wf *actionlint.Workflow) (scripts, uses []string) {
	for _, j := range wf.Jobs {
		for _, s := range j.Steps {
			switch e := s.Exec.(type) {
			case *actionlint.ExecRun:
				if e.Run != nil {
					scripts = append(scripts, e.Run.Value)
				}
			case *actionlint.ExecAction:
				if e.Uses != nil {
					uses = append(uses, e.Uses.Value)
				}
			}
		}
	}
	return scripts, uses
}

func events(wf *actionlint.Workflow) []string {
	var out []string
	for _, e := range wf.On {
		out = append(out, e.EventName())
	}
	return out
}

// TestWorkflowsDoWhatTheReadmeSays checks what each workflow is for: CI
// runs .ci/run; the nightly runs on a schedule and by hand, caches the
// control plane's binaries, and runs make nightly into the published
// branch; the template for implementers runs on kind and publishes.
func TestWorkflowsDoWhatTheReadmeSays(t *testing.T) {
	ci := parse(t, ".github/workflows/ci.yml")
	scripts, _ := steps(ci)
	if !slices.ContainsFunc(scripts, func(s string) bool { return strings.TrimSpace(s) == ".ci/run" }) {
		t.Errorf("ci.yml runs %q; want a step that runs .ci/run", scripts)
	}

	nightly := parse(t, ".github/workflows/nightly.yml")
	ev := events(nightly)
	if !slices.Contains(ev, "schedule") || !slices.Contains(ev, "workflow_dispatch") {
		t.Errorf("nightly.yml runs on %q; want schedule and workflow_dispatch", ev)
	}
	scripts, uses := steps(nightly)
	all := strings.Join(scripts, "\n")
	for _, want := range []string{"make nightly", "NIGHTLY_LOCALCP=yes", "NIGHTLY_HISTORY=pages/history", "make localcp-build", "git push"} {
		if !strings.Contains(all, want) {
			t.Errorf("nightly.yml's scripts lack %q", want)
		}
	}
	if !slices.ContainsFunc(uses, func(u string) bool { return strings.HasPrefix(u, "actions/cache@") }) {
		t.Errorf("nightly.yml uses %q; want actions/cache for the control plane's binaries", uses)
	}

	tmpl := parse(t, "docs/workflows/gatewitness-kind-nightly.yml")
	scripts, _ = steps(tmpl)
	all = strings.Join(scripts, "\n")
	for _, want := range []string{"make kind-up", "make kind-conformance", "gatewitness publish", "git push"} {
		if !strings.Contains(all, want) {
			t.Errorf("the implementers' template lacks %q", want)
		}
	}
	if ev := events(tmpl); !slices.Contains(ev, "schedule") {
		t.Errorf("the implementers' template runs on %q; want a schedule", ev)
	}
}
