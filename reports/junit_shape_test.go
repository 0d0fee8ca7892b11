package reports

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// junitShape is the common JUnit XML shape that CI systems parse (the
// Jenkins/Surefire dialect of the Ant format), described element by
// element: the attributes each may have and must have, the elements it may
// contain, and whether it may contain text.
var junitShape = map[string]struct {
	allowed, required []string
	children          []string
	text              bool
}{
	"testsuites": {allowed: []string{"name", "time", "tests", "failures", "errors", "disabled"}, children: []string{"testsuite"}},
	"testsuite": {
		allowed:  []string{"name", "tests", "failures", "errors", "skipped", "disabled", "time", "timestamp", "hostname", "id", "package", "file"},
		required: []string{"name", "tests"},
		children: []string{"properties", "testcase", "system-out", "system-err"},
	},
	"properties": {children: []string{"property"}},
	"property":   {allowed: []string{"name", "value"}, required: []string{"name", "value"}},
	"testcase": {
		allowed:  []string{"name", "classname", "time", "assertions", "status", "file", "line"},
		required: []string{"name"},
		children: []string{"skipped", "error", "failure", "system-out", "system-err"},
	},
	"skipped":    {allowed: []string{"message"}, text: true},
	"failure":    {allowed: []string{"message", "type"}, text: true},
	"error":      {allowed: []string{"message", "type"}, text: true},
	"system-out": {text: true},
	"system-err": {text: true},
}

var (
	decimalRE   = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?$`)
	timestampRE = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}$`)
)

// node is an element as checkJUnit sees it.
type node struct {
	name     string
	attrs    map[string]string
	children []*node
}

func (n *node) count(child string) int {
	c := 0
	for _, ch := range n.children {
		if ch.name == child {
			c++
		}
	}
	return c
}

// checkJUnit reports how data departs from the common JUnit shape: the
// element structure, attribute names and formats, and whether the counts on
// testsuite and testsuites agree with the test cases.
func checkJUnit(data []byte) error {
	dec := xml.NewDecoder(bytes.NewReader(data))
	var stack []*node
	var root *node
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("not well-formed XML: %w", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			name := tok.Name.Local
			shape, ok := junitShape[name]
			if !ok {
				return fmt.Errorf("unknown element <%s>", name)
			}
			n := &node{name: name, attrs: map[string]string{}}
			for _, a := range tok.Attr {
				if !contains(shape.allowed, a.Name.Local) {
					return fmt.Errorf("<%s> has unknown attribute %q", name, a.Name.Local)
				}
				n.attrs[a.Name.Local] = a.Value
			}
			for _, r := range shape.required {
				if _, ok := n.attrs[r]; !ok {
					return fmt.Errorf("<%s> lacks required attribute %q", name, r)
				}
			}
			if err := checkAttrFormats(n); err != nil {
				return err
			}
			if len(stack) == 0 {
				if name != "testsuites" && name != "testsuite" {
					return fmt.Errorf("root element is <%s>; want <testsuites> or <testsuite>", name)
				}
				root = n
			} else {
				parent := stack[len(stack)-1]
				if !contains(junitShape[parent.name].children, name) {
					return fmt.Errorf("<%s> may not contain <%s>", parent.name, name)
				}
				parent.children = append(parent.children, n)
			}
			stack = append(stack, n)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if len(stack) > 0 && !junitShape[stack[len(stack)-1].name].text && len(bytes.TrimSpace(tok)) > 0 {
				return fmt.Errorf("<%s> may not contain text, has %q", stack[len(stack)-1].name, tok)
			}
		}
	}
	if root == nil {
		return errors.New("no root element")
	}
	suites := []*node{root}
	if root.name == "testsuites" {
		suites = root.children
	}
	var tests, failures, errs int
	for _, s := range suites {
		var t, f, e, sk int
		for _, c := range s.children {
			if c.name != "testcase" {
				continue
			}
			t++
			f += c.count("failure")
			e += c.count("error")
			sk += c.count("skipped")
			if c.count("failure")+c.count("error")+c.count("skipped") > 1 {
				return fmt.Errorf("testcase %q has more than one result element", c.attrs["name"])
			}
		}
		for attr, want := range map[string]int{"tests": t, "failures": f, "errors": e, "skipped": sk} {
			if v, ok := s.attrs[attr]; ok && v != strconv.Itoa(want) {
				return fmt.Errorf("testsuite %q has %s=%q but %d such test cases", s.attrs["name"], attr, v, want)
			}
		}
		tests, failures, errs = tests+t, failures+f, errs+e
	}
	if root.name == "testsuites" {
		for attr, want := range map[string]int{"tests": tests, "failures": failures, "errors": errs} {
			if v, ok := root.attrs[attr]; ok && v != strconv.Itoa(want) {
				return fmt.Errorf("testsuites has %s=%q but its suites total %d", attr, v, want)
			}
		}
	}
	return nil
}

func checkAttrFormats(n *node) error {
	for name, v := range n.attrs {
		switch name {
		case "tests", "failures", "errors", "skipped", "disabled", "assertions":
			if _, err := strconv.ParseUint(v, 10, 32); err != nil {
				return fmt.Errorf("<%s %s=%q>: want a non-negative integer", n.name, name, v)
			}
		case "time":
			if !decimalRE.MatchString(v) {
				return fmt.Errorf("<%s time=%q>: want decimal seconds", n.name, v)
			}
		case "timestamp":
			if !timestampRE.MatchString(v) {
				return fmt.Errorf("<%s timestamp=%q>: want YYYY-MM-DDThh:mm:ss", n.name, v)
			}
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestCheckJUnitCatchesBadShapes shows the checker used above can fail.
func TestCheckJUnitCatchesBadShapes(t *testing.T) {
	const ok = `<testsuites tests="1" failures="0"><testsuite name="s" tests="1" failures="0"><testcase name="a" time="1.5"/></testsuite></testsuites>`
	if err := checkJUnit([]byte(ok)); err != nil {
		t.Fatalf("checkJUnit rejected a good document: %v", err)
	}
	bad := []struct{ doc, want string }{
		{`<testsuites><testsuite name="s" tests="1"><testcase time="1"/></testsuite></testsuites>`, `lacks required attribute "name"`},
		{`<testsuites><testsuite name="s" tests="2"><testcase name="a"/></testsuite></testsuites>`, `tests="2" but 1`},
		{`<testsuites><testsuite name="s" tests="1" failures="0"><testcase name="a"><failure/></testcase></testsuite></testsuites>`, `failures="0" but 1`},
		{`<testsuites tests="3"><testsuite name="s" tests="1"><testcase name="a"/></testsuite></testsuites>`, `suites total 1`},
		{`<testsuites><testsuite name="s" tests="1"><testcase name="a" time="1s"/></testsuite></testsuites>`, "want decimal seconds"},
		{`<testsuites><testsuite name="s" tests="0" timestamp="2026-03-01 12:00"/></testsuites>`, "want YYYY-MM-DDThh:mm:ss"},
		{`<testsuites><testsuite name="s" tests="1"><testcase name="a"><result/></testcase></testsuite></testsuites>`, "unknown element <result>"},
		{`<testsuites><testsuite name="s" tests="1"><testcase name="a" colour="red"/></testsuite></testsuites>`, `unknown attribute "colour"`},
		{`<testsuites><testcase name="a"/></testsuites>`, "<testsuites> may not contain <testcase>"},
		{`<testsuites><testsuite name="s" tests="0">stray</testsuite></testsuites>`, "may not contain text"},
		{`<results/>`, "unknown element <results>"},
		{`<properties/>`, "root element is <properties>"},
		{`<testsuites><testsuite name="s" tests="1"><testcase name="a"><skipped/><failure/></testcase></testsuite></testsuites>`, "more than one result element"},
		{`<testsuites>`, "not well-formed"},
	}
	for _, b := range bad {
		err := checkJUnit([]byte(b.doc))
		if err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("checkJUnit(%s) = %v, want an error containing %q", b.doc, err, b.want)
		}
	}
}

// TestJUnitSuiteTimeIsWall: a suite's time is how long its tests took on
// the clock, not the sum of tests that ran side by side (a run of 39.8 s
// reported 119 s); records without start times fall back to the sum,
// capped at the run's duration.
func TestJUnitSuiteTimeIsWall(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 2, 0, 0, 0, time.UTC)
	parallel := []TestResult{
		{ShortName: "A", Result: Pass, Started: t0, Duration: 10 * time.Second},
		{ShortName: "B", Result: Pass, Started: t0.Add(time.Second), Duration: 10 * time.Second},
		{ShortName: "C", Result: Fail, Started: t0.Add(2 * time.Second), Duration: 10 * time.Second},
		{ShortName: "D", Result: Skip},
	}
	if got := wallTime(parallel, time.Minute); got != 12*time.Second {
		t.Errorf("three 10 s tests started a second apart: %v, want 12s", got)
	}
	old := []TestResult{{ShortName: "A", Result: Pass, Duration: 30 * time.Second}, {ShortName: "B", Result: Pass, Duration: 30 * time.Second}}
	if got := wallTime(old, 40*time.Second); got != 40*time.Second {
		t.Errorf("without start times: %v, want the sum capped at the run's 40s", got)
	}
	run := &Run{Schema: RunSchema, Started: t0, Duration: 39800 * time.Millisecond, Tests: parallel}
	for i := range run.Tests {
		run.Tests[i].Source = Gatewitness
	}
	var buf bytes.Buffer
	if err := WriteJUnit(&buf, run); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `<testsuite name="gatewitness" tests="4" failures="1" errors="0" skipped="1" time="12.000"`) {
		t.Errorf("the gatewitness testsuite's time is not the wall time of its tests:\n%s", buf.String())
	}
}
