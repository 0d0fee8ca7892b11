// Package reports turns the results of a conformance run into the files
// people and machines read: the upstream ConformanceReport YAML (the format
// implementations submit to the Gateway API project), JUnit XML for CI
// systems, and a Markdown summary that shows what each test observed.
package reports

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/gatecheck/gatecheck/conformance/observe"
	confv1 "sigs.k8s.io/gateway-api/conformance/apis/v1"
	gwfeatures "sigs.k8s.io/gateway-api/pkg/features"
)

// Result is the outcome of one conformance test.
type Result string

const (
	// Pass means the test ran and passed.
	Pass Result = "pass"
	// Fail means the test ran and failed.
	Fail Result = "fail"
	// Skip means the test did not run to completion: it was not selected,
	// its features are not supported, or it skipped itself.
	Skip Result = "skip"
)

// MaxTests is the most tests a Run may hold.
const MaxTests = 10000

// Run is the record of one conformance run: who was tested, how, and what
// each test did.
type Run struct {
	// Implementation identifies the implementation under test.
	Implementation confv1.Implementation
	// Mode is the implementation's operating mode, "default" unless the
	// implementation was set up specially.
	Mode string
	// Profiles lists the conformance profiles the run was asked to check.
	Profiles []string
	// Started is when the run began.
	Started time.Time
	// Duration is how long the whole run took.
	Duration time.Duration
	// Tests holds one result per test, in the order they ran.
	Tests []TestResult
	// Conformance is the report the upstream suite built for this run
	// (suite.ConformanceTestSuite.Report), or nil if there is none. Its
	// profile results head the Markdown summary, and it is what
	// WriteConformanceYAML writes.
	Conformance *confv1.ConformanceReport
}

// TestResult is the outcome of one conformance test.
type TestResult struct {
	// ShortName is the test's upstream-style ShortName, e.g. "HTTPRouteRetry".
	ShortName string
	// Description says what the test checks.
	Description string
	// Features lists the features the test needs.
	Features []gwfeatures.FeatureName
	// Result is pass, fail or skip.
	Result Result
	// Duration is how long the test took.
	Duration time.Duration
	// Message says why the test failed or was skipped; empty on a pass.
	Message string
	// Observations are what the test recorded with observe.Record.
	Observations []observe.Observation
	// DroppedObservations counts observations the collector did not keep
	// (observe.Dropped).
	DroppedObservations int
}

// Validate checks that r can be written: every test has a unique,
// non-empty ShortName, a known result and a non-negative duration.
func (r *Run) Validate() error {
	if r == nil {
		return errors.New("reports: run is nil")
	}
	if len(r.Tests) > MaxTests {
		return fmt.Errorf("reports: run has %d tests; at most %d are accepted", len(r.Tests), MaxTests)
	}
	if r.Duration < 0 {
		return fmt.Errorf("reports: run Duration is %v; want a duration of zero or more", r.Duration)
	}
	var errs []error
	seen := make(map[string]bool, len(r.Tests))
	for i, t := range r.Tests {
		switch {
		case t.ShortName == "":
			errs = append(errs, fmt.Errorf("reports: Tests[%d]: ShortName is empty; want the test's ShortName, e.g. \"HTTPRouteRetry\"", i))
		case seen[t.ShortName]:
			errs = append(errs, fmt.Errorf("reports: Tests[%d]: ShortName %q appears twice; want one result per test", i, t.ShortName))
		}
		seen[t.ShortName] = true
		switch t.Result {
		case Pass, Fail, Skip:
		default:
			errs = append(errs, fmt.Errorf("reports: Tests[%d] (%s): Result is %q; want %q, %q or %q", i, t.ShortName, t.Result, Pass, Fail, Skip))
		}
		if t.Duration < 0 {
			errs = append(errs, fmt.Errorf("reports: Tests[%d] (%s): Duration is %v; want a duration of zero or more", i, t.ShortName, t.Duration))
		}
		if t.DroppedObservations < 0 {
			errs = append(errs, fmt.Errorf("reports: Tests[%d] (%s): DroppedObservations is %d; want zero or more", i, t.ShortName, t.DroppedObservations))
		}
	}
	return errors.Join(errs...)
}

// counts returns how many tests passed, failed and were skipped.
func (r *Run) counts() (passed, failed, skipped int) {
	for _, t := range r.Tests {
		switch t.Result {
		case Pass:
			passed++
		case Fail:
			failed++
		case Skip:
			skipped++
		}
	}
	return passed, failed, skipped
}

// Limits on what the writers copy from a test into a report, so one
// runaway failure message cannot bloat a report.
const (
	// MaxMessageLen is the longest failure or skip message written, in
	// bytes; longer messages are cut and marked.
	MaxMessageLen = 8 << 10
	// MaxObservationsWritten is the most observations written per test.
	MaxObservationsWritten = observe.MaxPerTest
)

// ansiEscape matches terminal colour and cursor sequences (CSI), which
// test logs often carry.
var ansiEscape = regexp.MustCompile("\x1b\\[[0-9;?]*[ -/]*[@-~]")

// clean makes s safe for every report format: it drops terminal escape
// sequences, turns CRLF into LF, and replaces other control characters and
// anything XML 1.0 forbids with U+FFFD. Tabs and line feeds stay.
func clean(s string) string {
	s = ansiEscape.ReplaceAllString(s, "")
	s = strings.ReplaceAll(s, "\r\n", "\n")
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\t' || r == '\n',
			r >= 0x20 && r < 0x7f,
			r >= 0xa0 && r <= 0xD7FF,
			r >= 0xE000 && r <= 0xFFFD,
			r >= 0x10000 && r <= 0x10FFFF:
			return r
		}
		return '\uFFFD'
	}, s)
}
