// Package gotestout reads the verbose output (go test -v) of a child test
// process: the lines a test and its subtests logged, to quote why it
// failed.
package gotestout

import "strings"

// Options say which of a test's lines FailureLines keeps.
type Options struct {
	// Keep is how many of the last lines to return.
	Keep int
	// DropResults leaves out the "--- PASS/FAIL/SKIP" result lines.
	DropResults bool
}

// FailureLines returns the last o.Keep lines that test (a full test
// name, such as "TestHelper/HTTPRouteRetryCodes") and its subtests logged
// in out, under their "=== RUN/CONT/PAUSE" headers, leaving out blank
// lines, observations ("observe: ") and the applier's "apply.go:" lines.
// With none, it says so.
func FailureLines(out []byte, test string, o Options) string {
	var current string
	var lines []string
	for line := range strings.Lines(string(out)) {
		line = strings.TrimRight(line, "\n")
		if f := strings.Fields(line); len(f) == 3 && f[0] == "===" {
			current = f[2]
			continue
		}
		if current != test && !strings.HasPrefix(current, test+"/") {
			continue
		}
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.Contains(line, "observe: ") || strings.HasPrefix(trimmed, "apply.go:") ||
			o.DropResults && strings.HasPrefix(trimmed, "--- ") {
			continue
		}
		lines = append(lines, trimmed)
	}
	if len(lines) == 0 {
		return "(no failure text in the child's output)"
	}
	return strings.Join(lines[max(0, len(lines)-o.Keep):], "\n")
}
