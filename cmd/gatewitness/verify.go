package main

import (
	"fmt"
	"io"
	"strings"

	gctests "github.com/gatewitness/gatewitness/conformance/tests"
	"github.com/gatewitness/gatewitness/features/upstreamnames"
	"github.com/gatewitness/gatewitness/reports"
)

const verifyUsage = `Usage: gatewitness verify-report [--strict] PATH...

Checks each ConformanceReport (a file, or every *-report.yaml in a folder)
in its folder of upstream's conformance/reports layout
(<major.minor>/<implementation>/, e.g. v1.6/acme-operator/).

Errors are what the Gateway API project's hack/verify-reports.sh enforces
(gatewayAPIVersion matching the version folder's major.minor, the channel
standard or experimental, a mode, a README.md whose links to files resolve)
and names of gatewitness's profiles, features or tests in a report for
upstream. Warnings are the rest of upstream's conformance/reports/README.md,
which reviewers apply but upstream has merged reports without (the file
name, the README's table row and its [<version> report](./file) link, a
Reproduce section, the implementation's fields, success or partial results,
names of the report's own Gateway API release); each names its README rule.

It exits 0 when no report has an error, 1 when one has (with --strict: an
error or a warning), 2 when a path cannot be read.
`

// verifyReportCommand is `gatewitness verify-report`.
func verifyReportCommand(args []string, stdout, stderr io.Writer) int {
	strict := false
	var paths []string
	for _, a := range args {
		switch {
		case a == "-h" || a == "-help" || a == "--help":
			fmt.Fprint(stdout, verifyUsage)
			return 0
		case a == "-strict" || a == "--strict":
			strict = true
		case strings.HasPrefix(a, "-"):
			fmt.Fprintf(stderr, "gatewitness verify-report: unknown flag %s; it takes --strict and paths (gatewitness verify-report -help)\n", a)
			return 2
		default:
			paths = append(paths, a)
		}
	}
	if len(paths) == 0 {
		fmt.Fprint(stderr, verifyUsage)
		return 2
	}
	files, err := reports.FindReports(paths)
	code := 0
	if err != nil {
		fmt.Fprintf(stderr, "gatewitness verify-report: %v\n", err)
		code = 2
		if len(files) == 0 {
			return 2
		}
	}
	names := verifyNames()
	var nErr, nWarn, nOK int
	for _, p := range files {
		findings, err := reports.VerifySubmission(p, names)
		if err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", p, err)
			code = 2
			continue
		}
		errs := reports.Errors(findings)
		nErr += len(errs)
		nWarn += len(findings) - len(errs)
		if len(findings) == 0 {
			nOK++
			fmt.Fprintf(stdout, "%s: ok: follows upstream's rules for submitted reports\n", p)
			continue
		}
		for _, f := range findings {
			fmt.Fprintf(stdout, "%s: %s\n", p, f)
		}
		if len(errs) > 0 || strict {
			code = max(code, 1)
		}
	}
	fmt.Fprintf(stdout, "%d reports: %d errors, %d warnings, %d without either\n", len(files), nErr, nWarn, nOK)
	return code
}

// verifyNames are the names verify-report checks reports against: each
// Gateway API release's, and gatewitness's own.
func verifyNames() reports.Names {
	var tests []string
	for _, t := range gctests.ConformanceTests {
		tests = append(tests, t.ShortName)
	}
	g := upstreamnames.Gatewitness(tests)
	return reports.Names{
		Release:     releaseNames,
		Gatewitness: reports.UpstreamNames{Profiles: g.Profiles, Features: g.Features, Tests: g.Tests},
	}
}

// releaseNames returns the names of a Gateway API release, or of the
// closest one gatewitness knows of the same minor release.
func releaseNames(gatewayAPIVersion string) (reports.UpstreamNames, string, bool) {
	n, _, ok := upstreamnames.ForRelease(gatewayAPIVersion)
	return reports.UpstreamNames{Profiles: n.Profiles, Features: n.Features, Tests: n.Tests}, n.Version, ok
}
