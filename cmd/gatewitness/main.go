// Command gatewitness runs the Gateway API conformance suite, upstream's
// tests and gatewitness's, against the in-process reference gateway or a
// cluster, and writes the reports.
//
// Usage:
//
//	gatewitness run [flags]              run the suite (see gatewitness run -help)
//	gatewitness verify-report PATH...    check reports against upstream's submission rules
//	gatewitness report PATH              write every output of a run again from its run.json
//	gatewitness publish [flags]          build the report site from a history of runs
//	gatewitness gateway [flags]          run the reference gateway against a cluster (see gatewitness gateway -help)
//	gatewitness features [-o json] [NAME...]  list the features tests can depend on
//	gatewitness tests                    list the tests, with the features each needs
//	gatewitness version                  print the versions of gatewitness and the Gateway API suite
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	upstream "sigs.k8s.io/gateway-api/conformance/tests"
	"sigs.k8s.io/gateway-api/conformance/utils/suite"
	"sigs.k8s.io/gateway-api/pkg/consts"

	"github.com/gatewitness/gatewitness/conformance/runner"
	gctests "github.com/gatewitness/gatewitness/conformance/tests"
	"github.com/gatewitness/gatewitness/features"
	"github.com/gatewitness/gatewitness/internal/gcpace"
	"github.com/gatewitness/gatewitness/internal/version"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "run" {
		// A run is short and allocates fast; the collector at Go's
		// default pace was a quarter of its CPU at scale.
		gcpace.Run()
	}
	os.Exit(gatewitness(os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `gatewitness runs the Gateway API conformance suite (upstream's tests and
gatewitness's) against the in-process reference gateway or a cluster.

Usage:
  gatewitness run [flags]             run the suite and write the reports (gatewitness run -help)
  gatewitness verify-report PATH...   check ConformanceReports (files, or folders laid out as
                                    upstream's conformance/reports) as upstream's
                                    hack/verify-reports.sh does (gatewitness verify-report -help)
  gatewitness report PATH             write every output of a run (reports, HTML) again from
                                    its run.json (gatewitness report -help)
  gatewitness publish [flags]         build the report site from a history of runs
                                    (gatewitness publish -help)
  gatewitness gateway ...             run the reference gateway against a cluster (gatewitness gateway -help)
  gatewitness features [NAME...]      list the features tests can depend on (-o wide, -o json)
  gatewitness tests                   list the tests and the features each needs
  gatewitness version                 print gatewitness's version and the Gateway API suite's
`

// gatewitness runs the command line args and returns the exit status: 0 on
// success, 1 if tests failed or reports could not be written, 2 for a
// usage error.
func gatewitness(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "run":
		return runCommand(rest, stdout, stderr)
	case "gateway":
		return gatewayCommand(rest, stdout, stderr)
	case "verify-report":
		return verifyReportCommand(rest, stdout, stderr)
	case "report":
		return reportCommand(rest, stdout, stderr)
	case "publish":
		return publishCommand(rest, stdout, stderr)
	case "features":
		return featuresCommand(rest, stdout, stderr)
	case "tests", "version":
		if len(rest) == 1 && isHelp(rest[0]) {
			fmt.Fprint(stdout, simpleUsage[cmd])
			return 0
		}
		if len(rest) > 0 {
			fmt.Fprintf(stderr, "gatewitness %s: takes no arguments, got %q (gatewitness %s -help)\n", cmd, rest, cmd)
			return 2
		}
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "gatewitness: unknown command %q%s; want run, verify-report, report, publish, gateway, features, tests or version\n\n%s",
			cmd, didYouMean(cmd), usage)
		return 2
	}
	var err error
	switch cmd {
	case "tests":
		err = testTable(stdout)
	case "version":
		_, err = fmt.Fprintf(stdout, "gatewitness %s\nGateway API conformance suite %s\n", version.Gatewitness(), consts.BundleVersion)
	}
	if err != nil {
		fmt.Fprintf(stderr, "gatewitness %s: %v\n", cmd, err)
		return 1
	}
	return 0
}

// simpleUsage is the help of the commands that take no flags.
var simpleUsage = map[string]string{
	"tests": `Usage: gatewitness tests

Lists every test gatewitness runs, upstream's first, with whose it is and
the features it needs: the ShortNames --run-test and --skip-tests take.
`,
	"version": `Usage: gatewitness version

Prints gatewitness's version (a release, or a development build's Go
pseudo-version naming its commit) and that of the Gateway API conformance
suite it is built with.
`,
}

func isHelp(a string) bool { return a == "-h" || a == "-help" || a == "--help" }

const featuresUsage = `Usage: gatewitness features [-o table|wide|json] [NAME...]

Lists the features tests can depend on, upstream's and gatewitness's: the
names --supported-features and --exempt-features take. With NAMEs, only
those (an unknown name is an error that suggests the closest one).
-o wide adds each feature's profiles and dependencies; -o json prints
every field, the description too.

Flags:
`

// featuresCommand is gatewitness features.
func featuresCommand(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gatewitness features", flag.ContinueOnError)
	output := fs.String("o", "table", "the output: table, wide or json")
	names, code, done := parseFlags(fs, args, featuresUsage, stdout, stderr)
	if done {
		return code
	}
	var list []features.Feature
	var all []string
	for _, f := range features.All() {
		all = append(all, string(f.Name))
	}
	for _, n := range names {
		f, ok := features.Lookup(features.FeatureName(n))
		if !ok {
			hint := ""
			if s := runner.Suggest(n, all); s != "" {
				hint = fmt.Sprintf(" (did you mean %s?)", s)
			}
			fmt.Fprintf(stderr, "gatewitness features: no feature %q%s; gatewitness features lists them all\n", n, hint)
			return 2
		}
		list = append(list, f)
	}
	var err error
	switch *output {
	case "table":
		err = features.Table(stdout, list)
	case "wide":
		err = features.WideTable(stdout, list)
	case "json":
		err = features.JSON(stdout, list)
	default:
		fmt.Fprintf(stderr, "gatewitness features: -o %q: want table, wide or json\n", *output)
		return 2
	}
	if err != nil {
		fmt.Fprintf(stderr, "gatewitness features: %v\n", err)
		return 1
	}
	return 0
}

// testTable lists every test the runner knows, upstream's first.
func testTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TEST\tFROM\tFEATURES")
	for _, set := range []struct {
		from  string
		tests []suite.ConformanceTest
	}{{"upstream", upstream.ConformanceTests}, {"gatewitness", gctests.ConformanceTests}} {
		for _, t := range set.tests {
			names := make([]string, len(t.Features))
			for j, f := range t.Features {
				names[j] = string(f)
			}
			slices.Sort(names)
			fmt.Fprintf(tw, "%s\t%s\t%s\n", t.ShortName, set.from, strings.Join(names, ","))
		}
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("writing the table: %w", err)
	}
	return nil
}

// didYouMean suggests the command closest to a mistyped one.
func didYouMean(cmd string) string {
	if s := runner.Suggest(cmd, []string{"run", "verify-report", "report", "publish", "gateway", "features", "tests", "version", "help"}); s != "" {
		return fmt.Sprintf(" (did you mean %s?)", s)
	}
	return ""
}
