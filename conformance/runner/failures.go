package runner

import (
	"regexp"
	"strings"
)

// FailedAssertions picks the failing assertions out of a conformance
// test's log, as the CLI captures it: the testing package's output in
// verbose form, with its framing lines ("=== RUN   name",
// "--- FAIL: name (1.00s)") kept. The result has one assertion per line
// (continuation lines indented), each prefixed by the subtest that made
// it; it is empty if the log shows none.
//
// The testing package prints t.Error and t.Log alike, so the assertions
// are found by shape, in each failed subtest that has no failed subtest
// of its own:
//   - testify's failure blocks ("Error Trace:", "Error:", "Messages:"),
//     summarised to the error and message;
//   - entries that are neither progress lines (upstream's tlog stamps
//     those with a time) nor observations ("observe: key = value"): the
//     t.Errorf and t.Fatalf of gatewitness's tests, which log nothing else;
//   - failing that, the subtest's last entry (before upstream's cleanup
//     lines), which for t.Fatal and tlog.Fatalf is the assertion.
func FailedAssertions(log string) string {
	p := parseTestLog(log)
	var out []string
	for _, name := range p.failOrder {
		if p.hasFailedChild(name) {
			continue
		}
		entries := p.entries[name]
		if len(entries) == 0 {
			entries = p.entries[""] // its start was cut from the log
		}
		var picked []logEntry
		for _, e := range entries {
			if e.testify() || !e.progress() && !e.observation() {
				picked = append(picked, e)
			}
		}
		if len(picked) == 0 {
			for i := len(entries) - 1; i >= 0; i-- {
				if !entries[i].observation() && !entries[i].cleanup() {
					picked = append(picked, entries[i])
					break
				}
			}
		}
		prefix := subtestOf(name)
		if prefix != "" {
			prefix += ": "
		}
		for _, e := range picked {
			out = append(out, prefix+e.summary())
		}
	}
	return strings.Join(out, "\n")
}

// testLog is a log split into entries by the (sub)test that wrote them.
type testLog struct {
	entries   map[string][]logEntry
	failed    map[string]bool
	failOrder []string
	root      string // the first test the log runs: the conformance test
}

// logEntry is one t.Log or t.Error call: "file.go:12: text" and its
// continuation lines.
type logEntry struct {
	head string   // "file.go:12: text"
	more []string // continuation lines, without the indentation
}

func parseTestLog(log string) *testLog {
	p := &testLog{entries: map[string][]logEntry{}, failed: map[string]bool{}}
	current := ""
	for _, line := range strings.Split(log, "\n") {
		trimmed := strings.TrimLeft(line, " ")
		switch {
		case strings.HasPrefix(trimmed, "=== "):
			if len(trimmed) > 10 {
				current = strings.TrimSpace(trimmed[10:])
				if p.root == "" {
					p.root = current
				}
			}
			continue
		case strings.HasPrefix(trimmed, "--- FAIL: "):
			name, _, _ := strings.Cut(strings.TrimPrefix(trimmed, "--- FAIL: "), " (")
			if !p.failed[name] {
				p.failed[name] = true
				p.failOrder = append(p.failOrder, name)
			}
			continue
		case strings.HasPrefix(trimmed, "--- "):
			continue
		case strings.HasPrefix(line, "        "):
			if es := p.entries[current]; len(es) > 0 {
				es[len(es)-1].more = append(es[len(es)-1].more, strings.TrimPrefix(line, "        "))
			}
			continue
		case strings.HasPrefix(line, "    ") && trimmed != "":
			p.entries[current] = append(p.entries[current], logEntry{head: trimmed})
		}
	}
	// The log is taken while the conformance test ends, before testing
	// prints its own "--- FAIL" line: it failed (it is asked about because
	// it did), so it counts as failed, and as the failure itself when no
	// subtest of it failed. A log whose start was cut may name no test.
	if p.root != "" && !p.failed[p.root] {
		p.failed[p.root] = true
		p.failOrder = append(p.failOrder, p.root)
	}
	if len(p.failOrder) == 0 && len(p.entries[""]) > 0 {
		p.failOrder = append(p.failOrder, "")
	}
	return p
}

func (p *testLog) hasFailedChild(name string) bool {
	for n := range p.failed {
		if strings.HasPrefix(n, name+"/") {
			return true
		}
	}
	return false
}

// subtestOf returns the part of a test name below the conformance test:
// "gatewitness/HTTPRouteRetry/codes/500" gives "codes/500".
func subtestOf(name string) string {
	parts := strings.SplitN(name, "/", 3)
	if len(parts) < 3 {
		return ""
	}
	return parts[2]
}

// tlogStamp matches the time upstream's tlog puts before each message.
var tlogStamp = regexp.MustCompile(`^[^:\s]+:\d+: \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d): `)

func (e logEntry) progress() bool { return tlogStamp.MatchString(e.head) }

// cleanupStamp matches upstream's applier deleting a test's resources,
// which it logs after the test's own lines.
var cleanupStamp = regexp.MustCompile(`^apply\.go:\d+: \S+: Deleting `)

func (e logEntry) cleanup() bool { return cleanupStamp.MatchString(e.head) }

func (e logEntry) observation() bool {
	_, text, ok := strings.Cut(e.head, ": ")
	return ok && strings.HasPrefix(text, "observe: ")
}

func (e logEntry) testify() bool {
	for _, l := range e.more {
		if strings.HasPrefix(strings.TrimSpace(l), "Error Trace:") {
			return true
		}
	}
	return false
}

// summary renders an entry as an assertion: a testify block as its
// location, error and message; anything else as written.
func (e logEntry) summary() string {
	if !e.testify() {
		if len(e.more) == 0 {
			return e.head
		}
		return e.head + "\n    " + strings.Join(e.more, "\n    ")
	}
	fields := map[string][]string{}
	key := ""
	for _, l := range e.more {
		l = strings.TrimPrefix(l, "\t")
		if k, v, ok := strings.Cut(l, ":"); ok && !strings.HasPrefix(l, " ") && !strings.HasPrefix(l, "\t") {
			key = strings.TrimSpace(k)
			fields[key] = append(fields[key], strings.TrimSpace(v))
			continue
		}
		if key != "" {
			fields[key] = append(fields[key], strings.TrimSpace(l))
		}
	}
	// The entry's own location is the test's line (testify marks its
	// helpers); the trace's first frame is the helper that asserted.
	loc := strings.TrimSuffix(strings.TrimSpace(e.head), ":")
	if trace := fields["Error Trace"]; loc == "" && len(trace) > 0 && trace[0] != "" {
		loc = lastPathElements(trace[0])
	}
	s := loc + ": " + strings.Join(nonEmpty(fields["Error"]), " ")
	if m := nonEmpty(fields["Messages"]); len(m) > 0 {
		s += " (" + strings.Join(m, " ") + ")"
	}
	return s
}

// lastPathElements shortens /a/b/c/file.go:12 to c/file.go:12.
func lastPathElements(p string) string {
	parts := strings.Split(p, "/")
	if len(parts) > 2 {
		parts = parts[len(parts)-2:]
	}
	return strings.Join(parts, "/")
}

func nonEmpty(s []string) []string {
	var out []string
	for _, v := range s {
		if v != "" {
			out = append(out, v)
		}
	}
	return out
}
