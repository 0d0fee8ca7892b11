package reports

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gatecheck/gatecheck/conformance/observe"
	confv1 "sigs.k8s.io/gateway-api/conformance/apis/v1"
)

// WriteMarkdown writes run as a Markdown page: the run's particulars, the
// result of each conformance profile, a table of every test (result,
// features, duration), and then, for each test that failed, was skipped or
// recorded observations, its message and observations.
func WriteMarkdown(w io.Writer, run *Run) error {
	if err := run.Validate(); err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	writeMarkdown(bw, run)
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("reports: writing the Markdown summary: %w", err)
	}
	return nil
}

func writeMarkdown(w *bufio.Writer, run *Run) {
	impl := run.Implementation
	title := "unnamed implementation"
	switch {
	case impl.Organization != "" && impl.Project != "":
		title = impl.Organization + "/" + impl.Project
	case impl.Organization != "" || impl.Project != "":
		title = impl.Organization + impl.Project
	}
	fmt.Fprintf(w, "# Conformance: %s %s\n\n", text(title), text(impl.Version))

	fmt.Fprintf(w, "| | |\n|---|---|\n")
	name := text(title)
	if impl.URL != "" {
		name = fmt.Sprintf("[%s](%s)", name, strings.ReplaceAll(impl.URL, ")", "%29"))
	}
	fmt.Fprintf(w, "| Implementation | %s %s |\n", name, cell(impl.Version))
	if len(impl.Contact) > 0 {
		fmt.Fprintf(w, "| Contact | %s |\n", cell(strings.Join(impl.Contact, ", ")))
	}
	fmt.Fprintf(w, "| Mode | %s |\n", cell(run.Mode))
	if c := run.Conformance; c != nil {
		fmt.Fprintf(w, "| Gateway API | %s, %s channel |\n", cell(c.GatewayAPIVersion), cell(c.GatewayAPIChannel))
	}
	if len(run.Profiles) > 0 {
		fmt.Fprintf(w, "| Profiles | %s |\n", cell(strings.Join(run.Profiles, ", ")))
	}
	if !run.Started.IsZero() {
		fmt.Fprintf(w, "| Started | %s |\n", run.Started.UTC().Format(time.RFC3339))
	}
	fmt.Fprintf(w, "| Duration | %s |\n", duration(run.Duration))
	passed, failed, skipped := run.counts()
	fmt.Fprintf(w, "| Tests | %d: %d passed, %d failed, %d skipped |\n", len(run.Tests), passed, failed, skipped)

	if c := run.Conformance; c != nil && len(c.ProfileReports) > 0 {
		fmt.Fprintf(w, "\n## Profiles\n\n")
		fmt.Fprintf(w, "| Profile | Core | Extended | Failed tests |\n|---|---|---|---|\n")
		profiles := slices.Clone(c.ProfileReports)
		slices.SortStableFunc(profiles, func(a, b confv1.ProfileReport) int { return cmp.Compare(a.Name, b.Name) })
		for _, p := range profiles {
			ext, failedTests := "-", slices.Clone(p.Core.FailedTests)
			if p.Extended != nil {
				ext = status(p.Extended.Status)
				failedTests = append(failedTests, p.Extended.FailedTests...)
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s |\n", cell(p.Name), status(p.Core), ext, cell(orDash(failedTests)))
		}
		for _, p := range profiles {
			if p.Extended == nil || len(p.Extended.UnsupportedFeatures) == 0 {
				continue
			}
			fmt.Fprintf(w, "\n%s: extended features not supported: %s.\n", text(p.Name), text(strings.Join(p.Extended.UnsupportedFeatures, ", ")))
		}
	}

	if len(run.Tests) == 0 {
		return
	}
	fmt.Fprintf(w, "\n## Tests\n\n| Test | Result | Features | Duration |\n|---|---|---|---|\n")
	for _, t := range run.Tests {
		testName := cell(t.ShortName)
		if hasDetails(t) {
			testName = fmt.Sprintf("[%s](#%s)", testName, anchor(t.ShortName))
		}
		feats := make([]string, len(t.Features))
		for i, f := range t.Features {
			feats[i] = string(f)
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", testName, strings.ToUpper(string(t.Result)), cell(orDash(feats)), duration(t.Duration))
	}

	for _, t := range run.Tests {
		if !hasDetails(t) {
			continue
		}
		fmt.Fprintf(w, "\n### %s\n\n", text(t.ShortName))
		fmt.Fprintf(w, "%s", strings.ToUpper(string(t.Result)))
		if t.Description != "" {
			fmt.Fprintf(w, ": %s", text(t.Description))
		}
		fmt.Fprintf(w, "\n")
		if t.Message != "" {
			msg := clean(truncate(t.Message, MaxMessageLen))
			fence := codeFence(msg)
			fmt.Fprintf(w, "\n%s\n%s\n%s\n", fence, strings.TrimRight(msg, "\n"), fence)
		}
		obs, more := capObservations(t)
		if len(obs) > 0 {
			fmt.Fprintf(w, "\n| Subtest | Observed | Value |\n|---|---|---|\n")
			for _, o := range obs {
				sub := "-"
				if o.Subtest != "" {
					sub = cell(o.Subtest)
				}
				fmt.Fprintf(w, "| %s | %s | %s |\n", sub, code(o.Key), code(o.Value))
			}
		}
		if more > 0 {
			fmt.Fprintf(w, "\n%d more observations not shown.\n", more)
		}
	}
}

func hasDetails(t TestResult) bool {
	return t.Message != "" || len(t.Observations) > 0 || t.DroppedObservations > 0
}

// capObservations returns the observations to write and how many more
// there were (including those the collector dropped).
func capObservations(t TestResult) (obs []observe.Observation, more int) {
	obs = t.Observations
	if len(obs) > MaxObservationsWritten {
		more = len(obs) - MaxObservationsWritten
		obs = obs[:MaxObservationsWritten]
	}
	return obs, more + t.DroppedObservations
}

// status renders a profile's core or extended status.
func status(s confv1.Status) string {
	return fmt.Sprintf("%s (%d passed, %d failed, %d skipped)", cell(string(s.Result)), s.Passed, s.Failed, s.Skipped)
}

func duration(d time.Duration) string {
	if d >= time.Second {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(time.Microsecond).String()
}

func orDash(s []string) string {
	if len(s) == 0 {
		return "-"
	}
	return strings.Join(s, ", ")
}

// anchor returns the fragment GitHub gives a heading with this text.
func anchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// markdownSpecial are the characters text escapes, so that a name or a
// description cannot turn into markup.
const markdownSpecial = "\\`*_[]<>#|!"

// text escapes s for use in running Markdown text, on one line.
func text(s string) string {
	s = strings.Join(strings.Fields(clean(s)), " ")
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(markdownSpecial, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// cell is text for a table cell.
func cell(s string) string { return text(s) }

// code renders s as a code span that survives inside a table cell.
func code(s string) string {
	s = oneLine(clean(s))
	if s == "" {
		return ""
	}
	longest, run := 0, 0
	for _, r := range s {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	ticks := strings.Repeat("`", longest+1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		s = " " + s + " "
	}
	// In a table, a pipe ends the cell even inside a code span unless escaped.
	return ticks + strings.ReplaceAll(s, "|", `\|`) + ticks
}

// codeFence returns a fence longer than any run of backticks in s.
func codeFence(s string) string {
	longest, run := 0, 0
	for _, r := range s {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return strings.Repeat("`", max(3, longest+1))
}

// oneLine puts s on one line, turning line breaks and tabs into spaces.
func oneLine(s string) string {
	return lineBreaks.Replace(s)
}

var lineBreaks = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ", "\t", " ")

// truncate cuts s to at most n bytes at a rune boundary, saying how much
// was cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s\n… (%d more bytes cut)", s[:cut], len(s)-cut)
}
