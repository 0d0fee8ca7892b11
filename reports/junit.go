package reports

import (
	"encoding/xml"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// JUnit elements, in the shape CI systems (Jenkins, GitLab, GitHub
// actions that read test reports) accept: testsuites > testsuite >
// properties, testcase > failure | skipped, system-out.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr"`
	Timestamp  string          `xml:"timestamp,attr,omitempty"`
	Properties []junitProperty `xml:"properties>property"`
	Cases      []junitCase     `xml:"testcase"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitMessage `xml:"failure"`
	Skipped   *junitMessage `xml:"skipped"`
	SystemOut *junitText    `xml:"system-out"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",cdata"`
}

// junitText is element text kept as CDATA, so line breaks stay readable.
type junitText struct {
	Text string `xml:",cdata"`
}

// WriteJUnit writes run as JUnit XML: one testsuite per source
// ("upstream" and "gatewitness", the class name of their cases), with the
// implementation, target, environment and profiles as properties, and one
// testcase per test. A failed test's failure element has the failing
// assertions as its text and the first of them as its message; its
// system-out has the test's log. A skipped test has a skipped element with
// the reason. Observations follow the log in system-out, one
// "key = value" a line.
func WriteJUnit(w io.Writer, run *Run) error {
	if err := run.Validate(); err != nil {
		return err
	}
	doc := junitSuites{Name: "gatewitness", Time: seconds(run.Duration)}
	props := junitProperties(run)
	for _, src := range []Source{Upstream, Gatewitness} {
		tests := run.bySource(src)
		if src == Upstream {
			// Records without a source count as upstream's.
			tests = append(run.bySource(""), tests...)
		}
		if len(tests) == 0 {
			continue
		}
		s := junitSuite{Name: string(src), Properties: props}
		if !run.Started.IsZero() {
			s.Timestamp = run.Started.UTC().Format("2006-01-02T15:04:05")
		}
		for _, t := range tests {
			s.Cases = append(s.Cases, junitTestCase(t, string(src)))
			s.Tests++
			switch t.Result {
			case Fail:
				s.Failures++
			case Skip, Inconclusive, Interrupted:
				s.Skipped++
			}
		}
		s.Time = seconds(wallTime(tests, run.Duration))
		doc.Tests += s.Tests
		doc.Failures += s.Failures
		doc.Suites = append(doc.Suites, s)
	}
	if len(doc.Suites) == 0 {
		doc.Suites = []junitSuite{{Name: "gatewitness", Time: seconds(0), Properties: props}}
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return fmt.Errorf("reports: writing JUnit XML: %w", err)
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("reports: writing JUnit XML: %w", err)
	}
	if _, err := io.WriteString(w, "\n"); err != nil {
		return fmt.Errorf("reports: writing JUnit XML: %w", err)
	}
	return nil
}

func junitProperties(run *Run) []junitProperty {
	impl, env := run.Implementation, run.Environment
	props := []junitProperty{
		{"status", run.StatusLine()},
		{"implementation.organization", impl.Organization},
		{"implementation.project", impl.Project},
		{"implementation.version", impl.Version},
		{"implementation.url", impl.URL},
		{"implementation.contact", strings.Join(impl.Contact, ", ")},
		{"mode", run.Mode},
		{"profiles", strings.Join(run.Profiles, ", ")},
		{"target", run.Target.String()},
		{"gatewayClass", run.Target.GatewayClass},
		{"gatewayAPIVersion", env.GatewayAPIVersion},
		{"gatewayAPIChannel", env.GatewayAPIChannel},
		{"kubernetesVersion", env.KubernetesVersion},
		{"gatewitnessVersion", env.GatewitnessVersion},
		{"timingTolerance", run.TimingTolerance.String()},
		{"retryBudgetLoad", run.RetryBudgetLoad.String()},
	}
	out := props[:0]
	for _, p := range props {
		if p.Value != "" {
			out = append(out, p)
		}
	}
	return out
}

func junitTestCase(t TestResult, class string) junitCase {
	c := junitCase{Name: t.ShortName, Classname: class, Time: seconds(t.Duration)}
	msg := clean(truncate(t.Message, MaxMessageLen))
	switch t.Result {
	case Fail:
		c.Failure = &junitMessage{Message: firstLine(msg), Type: "failure", Text: msg}
	case Skip:
		c.Skipped = &junitMessage{Message: firstLine(msg)}
	case Inconclusive:
		// JUnit has no such result: a skip (never a pass) whose type and
		// message say so, with both figures.
		c.Skipped = &junitMessage{Message: "inconclusive: " + firstLine(msg), Type: "inconclusive", Text: msg}
	case Interrupted:
		// Not a failure: a skip whose type says the run stopped first.
		c.Skipped = &junitMessage{Message: "interrupted: " + firstLine(msg), Type: "interrupted", Text: msg}
	}
	var out strings.Builder
	if t.Log != "" {
		out.WriteString(clean(tail(t.Log, MaxLogLen)))
		if !strings.HasSuffix(t.Log, "\n") {
			out.WriteByte('\n')
		}
	}
	if obs := observationLines(t); obs != "" {
		if out.Len() > 0 {
			out.WriteString("observations:\n")
		}
		out.WriteString(clean(obs))
	}
	if out.Len() > 0 {
		c.SystemOut = &junitText{Text: out.String()}
	}
	return c
}

// seconds formats d as JUnit wants time: decimal seconds.
func seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', 3, 64)
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return strings.TrimSpace(line)
}

// observationLines renders a test's observations as text, one a line.
func observationLines(t TestResult) string {
	if len(t.Observations) == 0 && t.DroppedObservations == 0 {
		return ""
	}
	var b strings.Builder
	obs, more := capObservations(t)
	for _, o := range obs {
		if o.Subtest != "" {
			fmt.Fprintf(&b, "%s: ", o.Subtest)
		}
		fmt.Fprintf(&b, "%s = %s\n", o.Key, o.Value)
	}
	if more > 0 {
		fmt.Fprintf(&b, "(%d more observations not shown)\n", more)
	}
	return b.String()
}

// wallTime is how long tests took on the clock: from the first start to
// the last end, when every test that ran records its start. Otherwise
// (older records) it is the sum of the durations, which counts tests that
// ran in parallel more than once, capped at the run's duration.
func wallTime(tests []TestResult, run time.Duration) time.Duration {
	var first, last time.Time
	var sum time.Duration
	missing := false
	for _, t := range tests {
		sum += t.Duration
		switch {
		case t.Duration == 0 && t.Started.IsZero():
			// did not run
		case t.Started.IsZero():
			missing = true
		default:
			if first.IsZero() || t.Started.Before(first) {
				first = t.Started
			}
			if end := t.Started.Add(t.Duration); end.After(last) {
				last = end
			}
		}
	}
	if !missing && !first.IsZero() {
		return last.Sub(first)
	}
	if run > 0 {
		return min(sum, run)
	}
	return sum
}
