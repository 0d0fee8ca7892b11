package main

import (
	"fmt"
	"io"
	"strings"

	upstream "sigs.k8s.io/gateway-api/conformance/tests"
	gwfeatures "sigs.k8s.io/gateway-api/pkg/features"

	"github.com/gatewitness/gatewitness/features"
	"github.com/gatewitness/gatewitness/reports"
)

const verifyUsage = `Usage: gatewitness verify-report PATH...

Checks each ConformanceReport (a file, or every *-report.yaml in a folder)
against the rules of the Gateway API project's conformance/reports/README.md
for submitted reports: the file name (<channel>-<version>-<mode>-report.yaml),
the channel, the version folder (<gatewayAPIVersion>/<implementation>/), the
mode, the implementation's fields, a semantic version, results of success or
partial in every profile, only upstream's profile, feature and test names,
and a README.md beside it with a table-of-contents row and a Reproduce
section. It exits 0 when every report can be submitted, 1 when one breaks a
rule, 2 when a path cannot be read.
`

// verifyReportCommand is `gatewitness verify-report`.
func verifyReportCommand(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, verifyUsage)
		return 2
	}
	for _, a := range args {
		if a == "-h" || a == "-help" || a == "--help" {
			fmt.Fprint(stdout, verifyUsage)
			return 0
		}
		if strings.HasPrefix(a, "-") {
			fmt.Fprintf(stderr, "gatewitness verify-report: unknown flag %s; it takes paths only\n", a)
			return 2
		}
	}
	paths, err := reports.FindReports(args)
	if err != nil {
		fmt.Fprintf(stderr, "gatewitness verify-report: %v\n", err)
		if len(paths) == 0 {
			return 2
		}
	}
	names := upstreamNames()
	code := 0
	if err != nil {
		code = 2
	}
	for _, p := range paths {
		findings, err := reports.VerifySubmission(p, names)
		if err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", p, err)
			code = 2
			continue
		}
		if len(findings) == 0 {
			fmt.Fprintf(stdout, "%s: ok: follows upstream's rules for submitted reports\n", p)
			continue
		}
		for _, f := range findings {
			fmt.Fprintf(stdout, "%s: %s\n", p, f)
		}
		code = max(code, 1)
	}
	return code
}

// upstreamNames are the profile, feature and test names of upstream's
// suite, the only ones a report for upstream may hold.
func upstreamNames() reports.UpstreamNames {
	var n reports.UpstreamNames
	for _, p := range features.Profiles() {
		if p.Upstream {
			n.Profiles = append(n.Profiles, p.Name)
		}
	}
	for _, f := range gwfeatures.AllFeatures.UnsortedList() {
		n.Features = append(n.Features, string(f.Name))
	}
	for _, t := range upstream.ConformanceTests {
		n.Tests = append(n.Tests, t.ShortName)
	}
	return n
}
