package reports

import (
	"fmt"
	"io"
	"path"
	"regexp"
	"strings"

	"github.com/gatewitness/gatewitness/internal/project"
	"github.com/gatewitness/gatewitness/internal/version"

	confv1 "sigs.k8s.io/gateway-api/conformance/apis/v1"
)

// The upstream report is written as upstream's conformance/reports folder
// holds submitted reports: <Gateway API version>/<implementation>/ with
// the report and a README.md. Copying that folder into a clone of
// kubernetes-sigs/gateway-api under conformance/reports/ is a submission.

// SubmissionReadmeName is the README every implementation's folder holds.
const SubmissionReadmeName = "README.md"

// UpstreamDirName is the folder of a report directory that holds the
// upstream submission (UpstreamDirName/<version>/<implementation>/).
const UpstreamDirName = "upstream"

// SubmissionDir returns the folder, relative to upstream's
// conformance/reports, that report belongs in: the major.minor of its
// Gateway API version, as upstream names its folders, then a folder named
// after the implementation, e.g. "v1.6/acme-operator" for v1.6.3.
func SubmissionDir(report *confv1.ConformanceReport) (string, error) {
	if report == nil {
		return "", errNoUpstream
	}
	folder := majorMinor(report.GatewayAPIVersion)
	if folder == "" {
		return "", fmt.Errorf("reports: gatewayAPIVersion %q is not a semantic version such as v1.6.3; its major.minor names the report's folder", report.GatewayAPIVersion)
	}
	impl := ImplementationFolder(report.Implementation)
	if impl == "" {
		return "", fmt.Errorf("reports: implementation.organization and implementation.project are empty; they name the report's folder")
	}
	return path.Join(folder, impl), nil
}

// runSubmissionDir is SubmissionDir of run's upstream report, with the
// implementation's folder run.ReportFolder when that is set.
func runSubmissionDir(run *Run) (string, error) {
	dir, err := SubmissionDir(run.Conformance)
	if err != nil || run.ReportFolder == "" {
		return dir, err
	}
	return path.Join(path.Dir(dir), run.ReportFolder), nil
}

// maxReportFolder bounds a report folder's name.
const maxReportFolder = 100

// CheckReportFolder returns an error unless folder is empty (the default,
// ImplementationFolder) or a name upstream's tree uses for an
// implementation's folder: lower-case letters, digits and single inner
// "-" (such as "envoy-gateway" or "kgateway"), at most 100 bytes.
func CheckReportFolder(folder string) error {
	if folder == "" {
		return nil
	}
	const form = `accepted: lower-case letters, digits and inner "-", at most 100 bytes, as upstream names an implementation's folder (e.g. envoy-gateway)`
	ok := len(folder) <= maxReportFolder && folder[0] != '-' && folder[len(folder)-1] != '-' && !strings.Contains(folder, "--")
	for _, r := range folder {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
			ok = false
		}
	}
	if !ok {
		return fmt.Errorf("%q: %s", folder, form)
	}
	return nil
}

// ImplementationFolder returns the folder name upstream's reports use for
// an implementation: "<organization>-<project>" in lower case, with every
// run of other characters than letters and digits turned into one "-".
func ImplementationFolder(impl confv1.Implementation) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(impl.Organization + "-" + impl.Project) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(r)
			dash = false
			continue
		}
		dash = true
	}
	return b.String()
}

// WriteSubmissionReadme writes the README.md upstream asks for beside a
// report: a title, a table of contents with one row for the report (API
// channel, implementation version, mode, link), and a Reproduce section
// with the command that made the run.
func WriteSubmissionReadme(w io.Writer, run *Run) error {
	if err := run.Validate(); err != nil {
		return err
	}
	report := run.Conformance
	if report == nil {
		return errNoUpstream
	}
	file, err := ConformanceFileName(report)
	if err != nil {
		return err
	}
	impl := report.Implementation
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", text(strings.TrimSpace(impl.Organization+" "+impl.Project)))
	fmt.Fprintf(&b, "Gateway API conformance reports of %s (%s), written by gatewitness.\n\n", text(impl.Project), impl.URL)
	b.WriteString("## Table of contents\n\n")
	b.WriteString("| API channel | Implementation version | Mode | Report |\n")
	b.WriteString("|-------------|------------------------|------|--------|\n")
	version := cell(impl.Version)
	if isWebURL(impl.URL) {
		version = "[" + version + "](" + strings.ReplaceAll(impl.URL, ")", "%29") + ")"
	}
	fmt.Fprintf(&b, "| %s | %s | %s | [%s report](./%s) |\n\n",
		cell(report.GatewayAPIChannel), version, cell(report.Mode), cell(impl.Version), file)
	b.WriteString("## Reproduce\n\n")
	writeReproduce(&b, run)
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("reports: writing the README: %w", err)
	}
	return nil
}

// writeReproduce writes the Reproduce section's steps: how the
// implementation was installed (the run's InstallSteps), how to install
// the gatewitness that wrote the report, and the command that ran the
// suite, without what is true of one machine only (the API server's
// address, the kubeconfig's and the report folder's paths).
func writeReproduce(b *strings.Builder, run *Run) {
	report := run.Conformance
	impl := report.Implementation
	env := run.Environment

	fmt.Fprintf(b, "### 1. Install %s %s\n\n", text(orUnknown(impl.Project)), text(orUnknown(impl.Version)))
	switch {
	case run.Target.InProcess:
		b.WriteString("Nothing to install: gatewitness runs its reference gateway in-process, with an embedded API store in place of a cluster.\n\n")
	case strings.TrimSpace(run.InstallSteps) != "":
		b.WriteString(strings.TrimSpace(run.InstallSteps) + "\n\n")
	default:
		fmt.Fprintf(b, readmePlaceholder+" say how %s %s was installed and configured", text(orUnknown(impl.Project)), text(orUnknown(impl.Version)))
		if report.Mode != "" && report.Mode != "default" {
			fmt.Fprintf(b, " in the mode %s", text(report.Mode))
		}
		b.WriteString(". gatewitness writes these steps here from `gatewitness run --install-steps FILE` (a Markdown file) or the options file's `installSteps` key.\n\n")
	}

	b.WriteString("### 2. Install gatewitness\n\n")
	gv := env.GatewitnessVersion
	install := project.ModulePath + "/cmd/" + project.Name
	switch {
	case version.IsRelease(gv):
		fmt.Fprintf(b, "The report was written by gatewitness %s, a release:\n\n```sh\ngo install %s@%s\n```\n\n", gv, install, gv)
	case isPseudoVersion(gv):
		commit, dirty := pseudoCommit(gv)
		fmt.Fprintf(b, "The report was written by a development build of gatewitness, not a release: commit %s", commit)
		if dirty {
			b.WriteString(" with changes that were not committed, so the commit alone may not reproduce it")
		}
		fmt.Fprintf(b, ". That commit installs with:\n\n```sh\ngo install %s@%s\n```\n\n", install, strings.TrimSuffix(gv, "+dirty"))
	default:
		fmt.Fprintf(b, "The report was written by a development build of gatewitness, not a release, built without version control information, so its commit is not known. A release installs with `go install %s@<version>` (%s/releases).\n\n", install, project.RepositoryURL)
	}

	b.WriteString("### 3. Run the suite\n\n")
	if run.Target.InProcess {
		b.WriteString("gatewitness ran upstream's conformance suite")
	} else {
		b.WriteString("With `KUBECONFIG` naming the cluster")
		if env.KubernetesVersion != "" {
			fmt.Fprintf(b, " (Kubernetes %s)", text(env.KubernetesVersion))
		}
		fmt.Fprintf(b, " and the Gateway API %s CRDs of the %s channel installed in it, gatewitness ran upstream's conformance suite",
			text(orUnknown(report.GatewayAPIVersion)), text(orUnknown(report.GatewayAPIChannel)))
	}
	fmt.Fprintf(b, " %s", text(orUnknown(env.SuiteVersion)))
	if run.Target.GatewayClass != "" {
		fmt.Fprintf(b, " against the GatewayClass %s", text(run.Target.GatewayClass))
		if run.Target.Controller != "" {
			fmt.Fprintf(b, " (controller %s)", text(run.Target.Controller))
		}
	}
	if len(run.CommandLine) > 0 {
		b.WriteString(" with:\n\n")
		fmt.Fprintf(b, "```sh\n%s\n```\n", ShellQuote(ReproducibleCommand(run.CommandLine)))
	} else {
		b.WriteString(" from a Go program, through gatewitness's runner package, not the command line.\n")
	}
}

// ReproducibleCommand returns a run's command line without what is true
// of one machine only: --kubeconfig and --context (the README says to set
// KUBECONFIG), --install-steps (its steps are in the README), the report
// folder (reports/), and absolute paths, which keep their base name.
func ReproducibleCommand(args []string) []string {
	drop := map[string]bool{"kubeconfig": true, "context": true, "install-steps": true}
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, value, hasValue := "", "", false
		if strings.HasPrefix(a, "-") && i > 0 {
			name, value, hasValue = strings.Cut(strings.TrimLeft(a, "-"), "=")
		}
		takesNext := name != "" && !hasValue && i+1 < len(args) && (drop[name] || name == "report-dir")
		switch {
		case drop[name]:
			if takesNext {
				i++
			}
		case name == "report-dir":
			out = append(out, "--report-dir", "reports")
			if takesNext {
				i++
			}
		case hasValue:
			out = append(out, "--"+name+"="+localPath(value))
		default:
			out = append(out, localPath(a))
		}
	}
	return out
}

// localPath returns the base name of an absolute path, and anything else
// as it is.
func localPath(s string) string {
	if path.IsAbs(s) && s != "/" {
		return path.Base(s)
	}
	return s
}

// isPseudoVersion reports whether v is a Go pseudo-version naming a
// commit (vX.Y.Z-yyyymmddhhmmss-abcdefabcdef, perhaps with +dirty).
func isPseudoVersion(v string) bool { return pseudoRe.MatchString(v) }

var pseudoRe = regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+-(?:.*\.)?[0-9]{14}-([0-9a-f]{12})(\+dirty)?$`)

// pseudoCommit returns the commit a pseudo-version names and whether
// the build had uncommitted changes.
func pseudoCommit(v string) (commit string, dirty bool) {
	m := pseudoRe.FindStringSubmatch(v)
	if m == nil {
		return "", false
	}
	return m[1], m[2] != ""
}

// ShellQuote joins args into one POSIX shell command line, quoting the
// arguments that need it.
func ShellQuote(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = shellQuote(a)
	}
	return strings.Join(out, " ")
}

func shellQuote(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_-./:=,@%+", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
