package reports

import (
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/gatewitness/gatewitness/internal/project"

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
	env := run.Environment
	target := "the cluster at " + orUnknown(run.Target.Server)
	if run.Target.Context != "" {
		target += " (kubeconfig context " + run.Target.Context + ")"
	}
	if run.Target.InProcess {
		target = "gatewitness's reference gateway, in-process (an embedded API store, no cluster)"
	}
	fmt.Fprintf(&b, "The report was written by gatewitness %s, which runs upstream's conformance suite %s, "+
		"against %s, with the Gateway API %s CRDs of the %s channel installed",
		text(orUnknown(env.GatewitnessVersion)), text(orUnknown(env.SuiteVersion)), text(target),
		text(orUnknown(report.GatewayAPIVersion)), text(orUnknown(report.GatewayAPIChannel)))
	if run.Target.GatewayClass != "" {
		fmt.Fprintf(&b, " and the GatewayClass %s", text(run.Target.GatewayClass))
		if run.Target.Controller != "" {
			fmt.Fprintf(&b, " (controller %s)", text(run.Target.Controller))
		}
	}
	b.WriteString(". ")
	if len(run.CommandLine) > 0 {
		b.WriteString("The command was:\n\n")
		fmt.Fprintf(&b, "```sh\n%s\n```\n\n", ShellQuote(run.CommandLine))
	} else {
		b.WriteString("A Go program ran it through gatewitness's runner package, not the command line.\n\n")
	}
	b.WriteString(project.Name + " is at " + project.RepositoryURL + "; `go run ./cmd/" + project.Name + "` in a checkout of the version above runs it.")
	if report.Mode != "" && report.Mode != "default" {
		fmt.Fprintf(&b, " The mode %s is a setup of the implementation that this section must describe before the report is submitted.", text(report.Mode))
	}
	b.WriteString("\n")
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("reports: writing the README: %w", err)
	}
	return nil
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
