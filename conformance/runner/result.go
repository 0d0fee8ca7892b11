package runner

import (
	"os"

	"github.com/gatewitness/gatewitness/reports"
)

// Result is what a run produced. Run returns it at once, but it is filled
// in only when the test that called Run has finished (see Run), or, for an
// interrupted run, when Options.OnInterrupt is called.
type Result struct {
	// Run is the record of the run; nil if the suite could not report.
	Run *reports.Run
	// Files lists the report files written, in the order written.
	Files []string
	// Err reports a failure to build or write the reports.
	Err error
	// Phases are how long each phase of the run took, from the call of
	// Run: "start" (the target started or reached, the suites built and
	// planned, the header printed), "set-up" (the base resources),
	// "serial tests" (each suite's, upstream's beside gatewitness's; see
	// runSides), "parallel tests" (those marked Parallel, which run
	// after the serial ones), "clean-up" (the base resources deleted)
	// and "reports" (built and written). The run record holds all but
	// the last.
	Phases []reports.Phase
	// Signal is the signal that interrupted the run; nil if none did.
	Signal os.Signal
}
