package workflows

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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

	for _, want := range []string{"NIGHTLY_ALERTS=", "NIGHTLY_INPROCESS=no", "NIGHTLY_ADD="} {
		if !strings.Contains(all, want) {
			t.Errorf("nightly.yml's scripts lack %q", want)
		}
	}
	checkAlerts(t, "nightly.yml", nightly, "nightly", "hack/nightly-issues.sh")
	checkMatrix(t, "nightly.yml", nightly, "releases")

	tmpl := parse(t, "docs/workflows/gatewitness-kind-nightly.yml")
	scripts, _ = steps(tmpl)
	all = strings.Join(scripts, "\n")
	for _, want := range []string{"make kind-cluster kind-images", "gatewitness run", "--install-steps", "gatewitness verify-report",
		"gatewitness publish", "git push", "GOTOOLCHAIN=\"$GO_FOR_GWAPI_V17\"", "gateway-api-conformance-images@$CONFORMANCE_IMAGES_COMMIT",
		`go install "github.com/gatewitness/gatewitness/cmd/gatewitness@$GATEWITNESS_VERSION"`} {
		if !strings.Contains(all, want) {
			t.Errorf("the implementers' template lacks %q", want)
		}
	}
	if ev := events(tmpl); !slices.Contains(ev, "schedule") {
		t.Errorf("the implementers' template runs on %q; want a schedule", ev)
	}
	// It tests a release, named by an input, not main.
	src, _ := os.ReadFile(filepath.Join(root, "docs/workflows/gatewitness-kind-nightly.yml"))
	if !strings.Contains(string(src), "gatewitness-version:") || !regexp.MustCompile(`GATEWITNESS_VERSION: \$\{\{ inputs.gatewitness-version \|\| 'v[0-9]+\.[0-9]+\.[0-9]+' \}\}`).Match(src) ||
		strings.Contains(string(src), "ref: main") {
		t.Errorf("the implementers' template does not pin a gatewitness release through the input gatewitness-version")
	}
	checkAlerts(t, "the implementers' template", tmpl, "publish", "nightly-issues.sh")
	checkMatrix(t, "the implementers' template", tmpl, "run")
}

// checkAlerts checks that job of wf alerts after it publishes: the
// publish step runs gatewitness publish with --alerts (or make nightly
// with NIGHTLY_ALERTS), a later step writes the summaries to the job
// summary, another runs the issues script, and the last one fails the job
// when the alerts are not empty.
func checkAlerts(t *testing.T, name string, wf *actionlint.Workflow, job, issues string) {
	t.Helper()
	j := wf.Jobs[job]
	if j == nil {
		t.Fatalf("%s has no job %s", name, job)
	}
	at := func(pred func(string) bool) int {
		for i, s := range j.Steps {
			if r, ok := s.Exec.(*actionlint.ExecRun); ok && r.Run != nil && pred(r.Run.Value) {
				return i
			}
		}
		return -1
	}
	publish := at(func(s string) bool { return strings.Contains(s, "git push") })
	alerts := at(func(s string) bool {
		return strings.Contains(s, "--alerts alerts.json") || strings.Contains(s, "NIGHTLY_ALERTS=")
	})
	summary := at(func(s string) bool {
		return strings.Contains(s, "summary-short.md") && strings.Contains(s, "GITHUB_STEP_SUMMARY")
	})
	issue := at(func(s string) bool { return strings.Contains(s, issues+" alerts.json") })
	fail := at(func(s string) bool {
		return strings.Contains(s, "jq length alerts.json") && strings.Contains(s, "exit 1")
	})
	if alerts < 0 || publish < alerts || summary < publish || issue < publish || fail != len(j.Steps)-1 && fail != len(j.Steps)-2 || fail < issue {
		t.Errorf("%s's %s job: alerts written at step %d, published at %d, summary at %d, issues at %d, failed at %d of %d; "+
			"want the alerts, then publishing, then the summary and the issues, then the failure last (before keeping the reports)",
			name, job, alerts, publish, summary, issue, fail, len(j.Steps))
	}
	if j.If == nil || !strings.Contains(j.If.Value, "!cancelled()") {
		t.Errorf("%s's %s job does not run when a matrix cell failed (if: !cancelled())", name, job)
	}
}

// checkMatrix checks that job of wf runs over Gateway API v1.6.3 and
// v1.7.0 and both channels, without stopping the others when one fails.
func checkMatrix(t *testing.T, name string, wf *actionlint.Workflow, job string) {
	t.Helper()
	j := wf.Jobs[job]
	if j == nil || j.Strategy == nil || j.Strategy.Matrix == nil {
		t.Fatalf("%s has no matrix job %s", name, job)
	}
	values := func(key string) []string {
		row := j.Strategy.Matrix.Rows[key]
		if row == nil {
			return nil
		}
		var out []string
		for _, v := range row.Values {
			if s, ok := v.(*actionlint.RawYAMLString); ok {
				out = append(out, s.Value)
			}
		}
		return out
	}
	if got := values("gateway-api"); !slices.Equal(got, []string{"v1.6.3", "v1.7.0"}) {
		t.Errorf("%s's matrix over gateway-api is %q; want v1.6.3, v1.7.0", name, got)
	}
	if got := values("channel"); !slices.Equal(got, []string{"standard", "experimental"}) {
		t.Errorf("%s's matrix over channel is %q; want standard, experimental", name, got)
	}
	if j.Strategy.FailFast == nil || j.Strategy.FailFast.Value {
		t.Errorf("%s's matrix stops every cell when one fails; want fail-fast: false", name)
	}
}

// TestPinned: every action is pinned by a commit, every runner by an
// image version, and no tool is installed at @latest.
func TestPinned(t *testing.T) {
	sha := regexp.MustCompile(`^[^@]+@[0-9a-f]{40}$`)
	for _, f := range workflowFiles(t) {
		rel, _ := filepath.Rel(root, f)
		wf := parse(t, rel)
		scripts, uses := steps(wf)
		for _, u := range uses {
			if !strings.HasPrefix(u, "./") && !sha.MatchString(u) {
				t.Errorf("%s uses %s; want it pinned by commit (owner/repo@<40 hex digits> # vX.Y.Z)", rel, u)
			}
		}
		for _, s := range scripts {
			if strings.Contains(s, "@latest") {
				t.Errorf("%s installs a tool at @latest: %q", rel, s)
			}
		}
		for name, j := range wf.Jobs {
			if j.RunsOn != nil {
				for _, l := range j.RunsOn.Labels {
					if strings.HasSuffix(l.Value, "-latest") {
						t.Errorf("%s: job %s runs on %s; want a pinned image such as ubuntu-24.04", rel, name, l.Value)
					}
				}
			}
		}
	}
}
