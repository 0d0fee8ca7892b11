package main

import (
	"fmt"
	"io"
	"strings"

	gctests "github.com/gatewitness/gatewitness/conformance/tests"
	"github.com/gatewitness/gatewitness/features/upstreamnames"
	"github.com/gatewitness/gatewitness/reports"
)

const verifyUsage = `Usage: gatewitness verify-report [--strict] [--check-links] PATH...

Checks ConformanceReports as the Gateway API project's
hack/verify-reports.sh checks its conformance/reports folder. PATH is a
report file (checked with the README.md beside it), an implementation
folder (its README.md and every *.yaml in it), a version folder such as
v1.6/ (each entry in it an implementation folder), or a folder holding
version folders (upstream's conformance/reports, or a run's upstream/).

Errors are what hack/verify-reports.sh fails on, judged as it judges
them: gatewayAPIVersion with the version folder's major.minor (compared
as text), the channel standard or experimental, a mode that is not empty
(a missing mode passes, with a warning), a README.md in each
implementation folder whose links resolve as markdown-link-check has
them (files, headings, mail addresses and, with --check-links, links to
the web), every *.yaml of the folder a report; and names of gatewitness's
profiles, features or tests in a report for upstream. Version folders of
releases before v1.1 are passed over, as the script does. Warnings are
the rest of upstream's conformance/reports/README.md, which reviewers
apply but upstream has merged reports without (the file name, the
README's table row and its [<version> report](./file) link, a Reproduce
section, the implementation's fields, results that agree with their
statistics, names of the report's own Gateway API release), and the
links to the web not fetched without --check-links.

  --check-links  fetch each link to the web (HEAD, then GET; alive when it
                 ends in 200 after redirects), as upstream's CI does
  --strict       exit 1 on a warning too

It exits 0 when nothing has an error, 1 when something has (with
--strict: an error or a warning), 2 when a path cannot be read.
`

// verifyReportCommand is `gatewitness verify-report`.
func verifyReportCommand(args []string, stdout, stderr io.Writer) int {
	strict, checkLinks := false, false
	var paths []string
	for _, a := range args {
		switch {
		case a == "-h" || a == "-help" || a == "--help":
			fmt.Fprint(stdout, verifyUsage)
			return 0
		case a == "-strict" || a == "--strict":
			strict = true
		case a == "-check-links" || a == "--check-links":
			checkLinks = true
		case strings.HasPrefix(a, "-"):
			fmt.Fprintf(stderr, "gatewitness verify-report: unknown flag %s; it takes --strict, --check-links and paths (gatewitness verify-report -help)\n", a)
			return 2
		default:
			paths = append(paths, a)
		}
	}
	if len(paths) == 0 {
		fmt.Fprint(stderr, verifyUsage)
		return 2
	}
	checked, err := reports.VerifyPaths(paths, reports.VerifyOptions{Names: verifyNames(), CheckLinks: checkLinks})
	code := 0
	if err != nil {
		fmt.Fprintf(stderr, "gatewitness verify-report: %v\n", err)
		code = 2
		if len(checked) == 0 {
			return 2
		}
	}
	var nReports, nErr, nWarn, nOK int
	for _, c := range checked {
		isReport := strings.HasSuffix(c.Path, ".yaml")
		if isReport {
			nReports++
		}
		errs := reports.Errors(c.Findings)
		nErr += len(errs)
		nWarn += len(c.Findings) - len(errs)
		if len(c.Findings) == 0 {
			if isReport {
				nOK++
				fmt.Fprintf(stdout, "%s: ok: follows upstream's rules for submitted reports\n", c.Path)
			}
			continue
		}
		for _, f := range c.Findings {
			fmt.Fprintf(stdout, "%s: %s\n", c.Path, f)
		}
		if len(errs) > 0 || strict {
			code = max(code, 1)
		}
	}
	fmt.Fprintf(stdout, "%d reports: %d errors, %d warnings, %d reports without either\n", nReports, nErr, nWarn, nOK)
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
