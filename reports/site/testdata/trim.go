//go:build ignore

// trim makes a run record small enough to keep as a test fixture: it keeps
// every test that ran, the first skipped test of each suite, the tail of
// each log, and cuts long arguments of the command line. Everything kept is
// as the run recorded it.
//
//	go run ./reports/site/testdata/trim.go < out/run.json > reports/site/testdata/x.json
package main

import (
	"fmt"
	"os"

	"github.com/gatewitness/gatewitness/reports"
)

const (
	maxLog = 4 << 10
	maxArg = 120
)

func main() {
	run, err := reports.ReadRunJSON(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	skipped := map[reports.Source]bool{}
	var kept []reports.TestResult
	for _, t := range run.Tests {
		if t.Result == reports.Skip {
			if skipped[t.Source] {
				continue
			}
			skipped[t.Source] = true
		}
		if len(t.Log) > maxLog {
			t.Log = "(trimmed)\n" + t.Log[len(t.Log)-maxLog:]
		}
		kept = append(kept, t)
	}
	run.Tests = kept
	for i, a := range run.CommandLine {
		if len(a) > maxArg {
			run.CommandLine[i] = a[:maxArg] + ",(trimmed)"
		}
	}
	if err := reports.WriteRunJSON(os.Stdout, run); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
