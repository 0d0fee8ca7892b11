package workflows

import (
	"bytes"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rhysd/actionlint"
	utilversion "k8s.io/apimachinery/pkg/util/version"
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
	for _, want := range []string{"make nightly", "make test-cluster", "NIGHTLY_HISTORY=pages/history", "make localcp-build", "git push"} {
		if !strings.Contains(all, want) {
			t.Errorf("nightly.yml's scripts lack %q", want)
		}
	}
	if !slices.ContainsFunc(uses, func(u string) bool { return strings.HasPrefix(u, "actions/cache@") }) {
		t.Errorf("nightly.yml uses %q; want actions/cache for the control plane's binaries", uses)
	}

	for _, want := range []string{"NIGHTLY_ALERTS=", "NIGHTLY_INPROCESS=no", "NIGHTLY_LOCALCP=no", "NIGHTLY_ADD="} {
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
	checkKubernetesAxis(t, tmpl, "run")
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

// checkKubernetesAxis checks that job of the template runs each cell on
// the oldest and the newest Kubernetes of its matrix, each cell on a kind
// node image and a cluster of its own (the site keeps a series per
// cluster).
func checkKubernetesAxis(t *testing.T, wf *actionlint.Workflow, job string) {
	t.Helper()
	j := wf.Jobs[job]
	row := j.Strategy.Matrix.Rows["kubernetes"]
	if row == nil || len(row.Values) != 2 {
		t.Fatalf("the template's matrix has no kubernetes axis of two versions (the oldest and newest supported)")
	}
	var vs []*utilversion.Version
	for _, v := range row.Values {
		s, ok := v.(*actionlint.RawYAMLString)
		if !ok {
			t.Fatalf("kubernetes axis value %v is not a version", v)
		}
		sv, err := utilversion.ParseSemantic(s.Value)
		if err != nil {
			t.Fatalf("kubernetes axis value %q: %v", s.Value, err)
		}
		vs = append(vs, sv)
	}
	if !vs[0].LessThan(vs[1]) || vs[0].Minor()+4 != vs[1].Minor() {
		t.Errorf("kubernetes axis %v, %v; want the oldest and the newest of five minor releases, oldest first", vs[0], vs[1])
	}
	env := map[string]string{}
	if j.Env != nil {
		for k, v := range j.Env.Vars {
			env[k] = v.Value.Value
		}
	}
	if !strings.Contains(env["kind_node_image"], "matrix.kubernetes") || !strings.Contains(env["kind_cluster"], "matrix.kubernetes") {
		t.Errorf("the template's run job env %v; want KIND_NODE_IMAGE and KIND_CLUSTER from matrix.kubernetes", env)
	}
	scripts, _ := steps(wf)
	if !slices.ContainsFunc(scripts, func(s string) bool { return strings.Contains(s, `KIND_NODE_IMAGE="$KIND_NODE_IMAGE"`) }) {
		t.Errorf("no step creates the cluster with KIND_NODE_IMAGE")
	}
}

// writers are what a job's steps do with each write permission: a job
// that has one must have a step that does it, and no other job has it.
var writers = map[string]func(script string) bool{
	"contents": func(s string) bool { return strings.Contains(s, "git push") },
	"issues": func(s string) bool {
		return strings.Contains(s, "nightly-issues.sh") || strings.Contains(s, "gh issue")
	},
}

// TestLeastPrivilege: no workflow grants a permission to all its jobs;
// each job names its own, and writes only what a step of it writes
// (pushes the published branch, files issues). The jobs that run an
// install step or the suite therefore read only.
func TestLeastPrivilege(t *testing.T) {
	for _, f := range workflowFiles(t) {
		rel, _ := filepath.Rel(root, f)
		wf := parse(t, rel)
		if p := wf.Permissions; p == nil || p.All != nil || len(p.Scopes) != 0 {
			t.Errorf("%s: the workflow's permissions are %s; want permissions: {} (each job says what it needs)", rel, describePermissions(p))
		}
		for name, j := range wf.Jobs {
			if j.Permissions == nil {
				t.Errorf("%s: job %s names no permissions", rel, name)
				continue
			}
			if j.Permissions.All != nil {
				t.Errorf("%s: job %s has permissions: %s; want scopes named one by one", rel, name, j.Permissions.All.Value)
			}
			var scripts []string
			for _, s := range j.Steps {
				if r, ok := s.Exec.(*actionlint.ExecRun); ok && r.Run != nil {
					scripts = append(scripts, r.Run.Value)
				}
			}
			for scope, p := range j.Permissions.Scopes {
				if p.Value.Value != "write" {
					continue
				}
				does, known := writers[scope]
				if !known || !slices.ContainsFunc(scripts, does) {
					t.Errorf("%s: job %s can write %s but no step of it does", rel, name, scope)
				}
			}
			for scope, does := range writers {
				p := j.Permissions.Scopes[scope]
				if slices.ContainsFunc(scripts, does) && (p == nil || p.Value.Value != "write") {
					t.Errorf("%s: job %s writes %s without the permission", rel, name, scope)
				}
			}
			suite := slices.ContainsFunc(scripts, func(s string) bool {
				return strings.Contains(s, "gatewitness run") || strings.Contains(s, "test-cluster") || strings.Contains(s, "nightly-gwapi.sh") ||
					strings.Contains(s, "install your implementation")
			})
			if suite && slices.ContainsFunc(slices.Collect(maps.Values(j.Permissions.Scopes)), func(p *actionlint.PermissionScope) bool { return p.Value.Value == "write" }) {
				t.Errorf("%s: job %s runs the suite or the install step with a write token", rel, name)
			}
		}
	}
}

func describePermissions(p *actionlint.Permissions) string {
	if p == nil {
		return "unset (the repository's default, often write-all)"
	}
	if p.All != nil {
		return p.All.Value
	}
	var out []string
	for k, v := range p.Scopes {
		out = append(out, k+": "+v.Value.Value)
	}
	slices.Sort(out)
	return "{" + strings.Join(out, ", ") + "}"
}

// TestCheckoutsKeepNoToken: every checkout sets persist-credentials:
// false, so no later step (the install step, the suite) finds the token
// in .git/config; a step that needs it has it in its environment.
func TestCheckoutsKeepNoToken(t *testing.T) {
	for _, f := range workflowFiles(t) {
		rel, _ := filepath.Rel(root, f)
		wf := parse(t, rel)
		for name, j := range wf.Jobs {
			for i, s := range j.Steps {
				a, ok := s.Exec.(*actionlint.ExecAction)
				if !ok || a.Uses == nil || !strings.HasPrefix(a.Uses.Value, "actions/checkout@") {
					continue
				}
				if in := a.Inputs["persist-credentials"]; in == nil || in.Value.Value != "false" {
					t.Errorf("%s: job %s step %d checks out with the token kept; want persist-credentials: false", rel, name, i)
				}
			}
		}
	}
}

// TestStepsRunBashWithPipefail: each workflow's run steps default to
// shell: bash, which GitHub runs as bash -eo pipefail (its implicit
// default, bash -e, lets `make nightly | tee` hide a failure), and no
// step chooses another shell.
func TestStepsRunBashWithPipefail(t *testing.T) {
	for _, f := range workflowFiles(t) {
		rel, _ := filepath.Rel(root, f)
		wf := parse(t, rel)
		if d := wf.Defaults; d == nil || d.Run == nil || d.Run.Shell == nil || d.Run.Shell.Value != "bash" {
			t.Errorf("%s: no defaults: run: shell: bash", rel)
		}
		for name, j := range wf.Jobs {
			for i, s := range j.Steps {
				if r, ok := s.Exec.(*actionlint.ExecRun); ok && r.Shell != nil && r.Shell.Value != "bash" {
					t.Errorf("%s: job %s step %d runs with shell %s; want bash", rel, name, i, r.Shell.Value)
				}
			}
		}
	}
}

// TestNightliesCapTheirIssues: both nightlies give the issues script a
// MAX_ISSUES (TestNightlyIssuesSummarisesABadNight shows what it does).
func TestNightliesCapTheirIssues(t *testing.T) {
	for _, path := range []string{".github/workflows/nightly.yml", "docs/workflows/gatewitness-kind-nightly.yml"} {
		wf := parse(t, path)
		if wf.Env == nil || wf.Env.Vars["max_issues"] == nil {
			t.Errorf("%s sets no MAX_ISSUES for the issues script", path)
			continue
		}
		if n, err := strconv.Atoi(wf.Env.Vars["max_issues"].Value.Value); err != nil || n < 1 {
			t.Errorf("%s: MAX_ISSUES %q; want a count of at least 1", path, wf.Env.Vars["max_issues"].Value.Value)
		}
	}
}

// TestVersionFromTags: the template names the implementation's version
// with hack/version.sh on a checkout with its tags (fetch-depth: 0), never
// git describe --always (a bare commit hash on a checkout without tags),
// and stamps it into every cell's run; the repository's nightly fetches
// its tags in each job that runs the suite, and both of its cells stamp
// the checkout's version into gatewitness.
func TestVersionFromTags(t *testing.T) {
	tmpl := parse(t, "docs/workflows/gatewitness-kind-nightly.yml")
	run := tmpl.Jobs["run"]
	var scripts []string
	fullClone := false
	for _, s := range run.Steps {
		switch e := s.Exec.(type) {
		case *actionlint.ExecRun:
			scripts = append(scripts, e.Run.Value)
		case *actionlint.ExecAction:
			if in := e.Inputs["path"]; in != nil && in.Value.Value == "impl" {
				d := e.Inputs["fetch-depth"]
				fullClone = d != nil && d.Value.Value == "0"
			}
		}
	}
	if !fullClone {
		t.Errorf("the template checks out the implementation without its tags; want fetch-depth: 0")
	}
	all := strings.Join(scripts, "\n")
	if !strings.Contains(all, `version="$(gatewitness/hack/version.sh impl)"`) || !strings.Contains(all, `--version "$version"`) || strings.Contains(all, "--always") {
		t.Errorf("the template's run does not take --version from hack/version.sh (or uses git describe --always)")
	}

	nightly := parse(t, ".github/workflows/nightly.yml")
	for _, job := range []string{"releases", "localcp"} {
		j := nightly.Jobs[job]
		if j == nil {
			t.Fatalf("nightly.yml has no job %s", job)
		}
		for _, s := range j.Steps {
			if a, ok := s.Exec.(*actionlint.ExecAction); ok && strings.HasPrefix(a.Uses.Value, "actions/checkout@") {
				if d := a.Inputs["fetch-depth"]; d == nil || d.Value.Value != "0" {
					t.Errorf("nightly.yml's job %s checks out without the tags; want fetch-depth: 0", job)
				}
			}
		}
	}
	for _, script := range []string{"hack/nightly-gwapi.sh", "hack/test-gwapi-v1.7.sh"} {
		src, err := os.ReadFile(filepath.Join(root, script))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(src), "internal/version.stamped=") || !strings.Contains(string(src), "hack/version.sh") {
			t.Errorf("%s does not stamp hack/version.sh's version into gatewitness (its cell would report %s)", script, "v0.0.0-unknown")
		}
	}
}

// TestVersionScript runs hack/version.sh on a repository of its own: a
// tag names the version, a commit after it a pseudo-version after it, a
// repository without tags v0.0.0-<time>-<commit>; each is a semantic
// version and none a bare commit hash.
func TestVersionScript(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	dir := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_COMMITTER_DATE=2026-03-01T12:00:00Z", "GIT_AUTHOR_DATE=2026-03-01T12:00:00Z")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	version := func() string {
		t.Helper()
		out, err := exec.Command(filepath.Join(root, "hack", "version.sh"), dir).Output()
		if err != nil {
			t.Fatalf("hack/version.sh: %v", err)
		}
		v := strings.TrimSpace(string(out))
		if _, err := utilversion.ParseSemantic(v); err != nil {
			t.Errorf("hack/version.sh printed %q, not a semantic version: %v", v, err)
		}
		return v
	}
	git("init", "-q")
	git("commit", "-q", "--allow-empty", "-m", "one")
	if v := version(); !regexp.MustCompile(`^v0\.0\.0-20260301120000-[0-9a-f]{12}$`).MatchString(v) {
		t.Errorf("without tags: %q; want v0.0.0-20260301120000-<12 hex>", v)
	}
	git("tag", "v1.2.3")
	if v := version(); v != "v1.2.3" {
		t.Errorf("on the tag v1.2.3: %q", v)
	}
	git("commit", "-q", "--allow-empty", "-m", "two")
	if v := version(); !regexp.MustCompile(`^v1\.2\.4-0\.20260301120000-[0-9a-f]{12}$`).MatchString(v) {
		t.Errorf("a commit after v1.2.3: %q; want v1.2.4-0.20260301120000-<12 hex>", v)
	}
}
