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

// junitClassname is the classname of every test case; CI systems group
// cases by it.
const junitClassname = "gatecheck"

// WriteJUnit writes run as JUnit XML: one testsuite for the run, with the
// implementation, mode and profiles as properties, and one testcase per
// test. A failed test has a failure element whose message is the first
// line of its message; a skipped test has a skipped element. Observations
// go to the test case's system-out, one "key = value" a line.
func WriteJUnit(w io.Writer, run *Run) error {
	if err := run.Validate(); err != nil {
		return err
	}
	_, failed, skipped := run.counts()
	suite := junitSuite{
		Name:     "gatecheck",
		Tests:    len(run.Tests),
		Failures: failed,
		Skipped:  skipped,
		Time:     seconds(run.Duration),
	}
	if !run.Started.IsZero() {
		suite.Timestamp = run.Started.UTC().Format("2006-01-02T15:04:05")
	}
	impl := run.Implementation
	suite.Properties = []junitProperty{
		{"implementation.organization", impl.Organization},
		{"implementation.project", impl.Project},
		{"implementation.version", impl.Version},
		{"implementation.url", impl.URL},
		{"implementation.contact", strings.Join(impl.Contact, ", ")},
		{"mode", run.Mode},
		{"profiles", strings.Join(run.Profiles, ", ")},
	}
	if c := run.Conformance; c != nil {
		suite.Properties = append(suite.Properties,
			junitProperty{"gatewayAPIVersion", c.GatewayAPIVersion},
			junitProperty{"gatewayAPIChannel", c.GatewayAPIChannel})
	}
	for _, t := range run.Tests {
		c := junitCase{Name: t.ShortName, Classname: junitClassname, Time: seconds(t.Duration)}
		msg := clean(truncate(t.Message, MaxMessageLen))
		switch t.Result {
		case Fail:
			c.Failure = &junitMessage{Message: firstLine(msg), Type: "failure", Text: msg}
		case Skip:
			c.Skipped = &junitMessage{Message: firstLine(msg)}
		}
		if out := observationLines(t); out != "" {
			c.SystemOut = &junitText{Text: clean(out)}
		}
		suite.Cases = append(suite.Cases, c)
	}
	doc := junitSuites{
		Name:     "gatecheck",
		Tests:    suite.Tests,
		Failures: suite.Failures,
		Time:     suite.Time,
		Suites:   []junitSuite{suite},
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
