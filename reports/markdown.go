package reports

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/gatewitness/gatewitness/contract/observe"
	"github.com/gatewitness/gatewitness/internal/textcut"
	confv1 "sigs.k8s.io/gateway-api/conformance/apis/v1"
)

// WriteMarkdown writes run as a Markdown page, in the order a reader
// needs it: the run's particulars (target, environment, claims), the
// result of each profile, then the failures with their failing assertions
// and what the test observed, the passes with their observations, and
// the skips grouped by the feature that was not claimed, in one table.
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

func title(impl confv1.Implementation) string {
	switch {
	case impl.Organization != "" && impl.Project != "":
		return impl.Organization + "/" + impl.Project
	case impl.Organization != "" || impl.Project != "":
		return impl.Organization + impl.Project
	}
	return "unnamed implementation"
}

func countsLine(run *Run) string {
	passed, failed, skipped := run.Counts()
	line := fmt.Sprintf("%d tests: %d passed, %d failed, %d skipped", len(run.Tests), passed, failed, skipped)
	if n := run.InconclusiveCount(); n > 0 {
		line += fmt.Sprintf(", %d inconclusive", n)
	}
	if n := run.InterruptedCount(); n > 0 || run.Status != RunComplete {
		line += fmt.Sprintf(", %d interrupted", n)
	}
	return line
}

func writeMarkdown(w *bufio.Writer, run *Run) {
	impl, env := run.Implementation, run.Environment
	fmt.Fprintf(w, "# Conformance: %s %s\n\n", text(title(impl)), text(impl.Version))
	if st := run.StatusLine(); st != "" {
		fmt.Fprintf(w, "**%s**\n\n", text(st))
	}
	fmt.Fprintf(w, "%s, in %s.\n\n", countsLine(run), duration(run.Duration))

	fmt.Fprintf(w, "| | |\n|---|---|\n")
	name := text(title(impl))
	if impl.URL != "" {
		name = fmt.Sprintf("[%s](%s)", name, strings.ReplaceAll(impl.URL, ")", "%29"))
	}
	fmt.Fprintf(w, "| Implementation | %s %s |\n", name, cell(impl.Version))
	if len(impl.Contact) > 0 {
		fmt.Fprintf(w, "| Contact | %s |\n", cell(strings.Join(impl.Contact, ", ")))
	}
	fmt.Fprintf(w, "| Mode | %s |\n", cell(run.Mode))
	fmt.Fprintf(w, "| Target | %s |\n", cell(run.Target.String()))
	if tg := run.Target; tg.GatewayClass != "" {
		gc := cell(tg.GatewayClass)
		if tg.Controller != "" {
			gc += ", controller " + cell(tg.Controller)
		}
		fmt.Fprintf(w, "| GatewayClass | %s |\n", gc)
	}
	if env.GatewayAPIVersion != "" || env.GatewayAPIChannel != "" {
		fmt.Fprintf(w, "| Gateway API | %s, %s channel |\n", cell(orUnknown(env.GatewayAPIVersion)), cell(orUnknown(env.GatewayAPIChannel)))
	}
	if env.KubernetesVersion != "" {
		fmt.Fprintf(w, "| Kubernetes | %s |\n", cell(env.KubernetesVersion))
	}
	if env.GatewitnessVersion != "" {
		fmt.Fprintf(w, "| gatewitness | %s (upstream suite %s) |\n", cell(env.GatewitnessVersion), cell(orUnknown(env.SuiteVersion)))
	}
	if run.TimingTolerance > 0 {
		fmt.Fprintf(w, "| Timing tolerance | %s |\n", duration(run.TimingTolerance))
	}
	if run.RetryBudgetLoad != nil {
		fmt.Fprintf(w, "| Retry-budget load | %s |\n", cell(run.RetryBudgetLoad.String()))
	}
	if c := run.Claims; len(c.Features) > 0 {
		src := ""
		if c.Source != "" {
			src = ", from " + cell(c.Source)
		}
		fmt.Fprintf(w, "| Claimed features | %d%s |\n", len(c.Features), src)
	}
	if len(run.Profiles) > 0 {
		fmt.Fprintf(w, "| Profiles requested | %s |\n", cell(strings.Join(run.Profiles, ", ")))
	}
	if !run.Started.IsZero() {
		fmt.Fprintf(w, "| Started | %s |\n", run.Started.UTC().Format(time.RFC3339))
	}
	if len(run.Phases) > 0 {
		fmt.Fprintf(w, "| Phases | %s |\n", cell(PhasesLine(run.Phases)))
	}

	writeProfiles(w, run)
	writeConsistency(w, run)
	writeFailures(w, run)
	writePasses(w, run)
	writeSkips(w, run)
}

// profileRow is one profile's result, from either report.
type profileRow struct {
	report string
	p      confv1.ProfileReport
}

// writeTableSection writes a section of the summary that is one table: its
// heading, the paragraph that says what the table counts, and the table's
// head.
func writeTableSection(w io.Writer, heading, intro string, columns ...string) {
	fmt.Fprintf(w, "\n## %s\n\n%s\n\n", heading, intro)
	writeTableHead(w, columns...)
}

// writeTableHead writes the head row of a Markdown table with these columns
// and the delimiter row under it.
func writeTableHead(w io.Writer, columns ...string) {
	fmt.Fprintf(w, "| %s |\n|%s\n", strings.Join(columns, " | "), strings.Repeat("---|", len(columns)))
}

func profileRows(run *Run) []profileRow {
	var rows []profileRow
	if c := run.Conformance; c != nil {
		for _, p := range c.ProfileReports {
			rows = append(rows, profileRow{"upstream", p})
		}
	}
	for _, p := range run.GatewitnessProfiles {
		rows = append(rows, profileRow{"gatewitness", p})
	}
	slices.SortStableFunc(rows, func(a, b profileRow) int {
		return cmp.Or(cmp.Compare(b.report, a.report), cmp.Compare(a.p.Name, b.p.Name))
	})
	return rows
}

func writeProfiles(w *bufio.Writer, run *Run) {
	rows := profileRows(run)
	if len(rows) == 0 {
		return
	}
	writeTableSection(w, "Profiles",
		"Upstream profiles count upstream's tests only (the upstream report); gatewitness's profiles count gatewitness's tests only (the gatewitness report).",
		"Profile", "Report", "Core", "Extended", "Failed tests")
	for _, r := range rows {
		p := r.p
		if ProfileNotClaimed(p) {
			fmt.Fprintf(w, "| %s | %s | %s: no test of it ran | - | - |\n", cell(p.Name), r.report, NotClaimed)
			continue
		}
		ext, failedTests := "-", slices.Clone(p.Core.FailedTests)
		if p.Extended != nil {
			ext = status(p.Extended.Status)
			failedTests = append(failedTests, p.Extended.FailedTests...)
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", cell(p.Name), r.report, status(p.Core), ext, cell(orDash(failedTests)))
	}
	for _, r := range rows {
		if r.p.Extended == nil || len(r.p.Extended.UnsupportedFeatures) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s: extended features not claimed: %s.\n", text(r.p.Name), text(strings.Join(r.p.Extended.UnsupportedFeatures, ", ")))
	}
}

func writeFailures(w *bufio.Writer, run *Run) {
	var failed, inconclusive []TestResult
	for _, t := range run.Tests {
		switch t.Result {
		case Fail:
			failed = append(failed, t)
		case Inconclusive:
			inconclusive = append(inconclusive, t)
		}
	}
	fmt.Fprintf(w, "\n## Failures (%d)\n", len(failed))
	if len(failed) == 0 {
		fmt.Fprintf(w, "\nNo test failed.\n")
	}
	writeResults(w, failed)
	if len(inconclusive) > 0 {
		fmt.Fprintf(w, "\n## Inconclusive (%d)\n\nThese timing tests missed a window by no more than the suite's own timers were late, "+
			"in their run and again when rerun alone: neither a pass nor the implementation's failure.\n", len(inconclusive))
		writeResults(w, inconclusive)
	}
}

// writeResults writes each test's heading, message, observations and
// where its log is.
func writeResults(w *bufio.Writer, tests []TestResult) {
	for _, t := range tests {
		writeTestHeading(w, t)
		if t.Message != "" {
			msg := clean(truncate(t.Message, MaxMessageLen))
			fence := codeFence(msg)
			fmt.Fprintf(w, "\n%s\n%s\n%s\n", fence, strings.TrimRight(msg, "\n"), fence)
		}
		if len(t.Observations) > 0 || t.DroppedObservations > 0 {
			fmt.Fprintf(w, "\nObserved:\n\n")
			writeObservations(w, t)
		}
		if t.Log != "" {
			fmt.Fprintf(w, "\nThe test's log is in junit.xml (system-out of %s) and run.json.\n", text(t.ShortName))
		}
	}
}

func writeTestHeading(w *bufio.Writer, t TestResult) {
	fmt.Fprintf(w, "\n### %s\n\n", text(t.ShortName))
	fmt.Fprintf(w, "%s in %s", strings.ToUpper(string(t.Result)), duration(t.Duration))
	if t.Source != "" {
		fmt.Fprintf(w, " · %s test", t.Source)
	}
	switch {
	case len(t.Profiles) > 0:
		fmt.Fprintf(w, " · counts in %s", text(strings.Join(t.Profiles, ", ")))
	case t.Result != Skip:
		fmt.Fprintf(w, " · counts in no profile requested")
	}
	if t.Description != "" {
		fmt.Fprintf(w, "\n\n%s", text(t.Description))
	}
	fmt.Fprintf(w, "\n")
}

func writePasses(w *bufio.Writer, run *Run) {
	var with, without []TestResult
	for _, t := range run.Tests {
		if t.Result != Pass {
			continue
		}
		if len(t.Observations) > 0 || t.DroppedObservations > 0 {
			with = append(with, t)
		} else {
			without = append(without, t)
		}
	}
	fmt.Fprintf(w, "\n## Passes (%d)\n", len(with)+len(without))
	for _, t := range with {
		writeTestHeading(w, t)
		fmt.Fprintf(w, "\n")
		writeObservations(w, t)
	}
	if len(without) > 0 {
		names := make([]string, len(without))
		for i, t := range without {
			names[i] = text(t.ShortName)
		}
		fmt.Fprintf(w, "\nPassed, with nothing observed to show (%d): %s.\n", len(without), strings.Join(names, ", "))
	}
}

// writeObservations writes a test's observations as a table, one row per
// subtest.
func writeObservations(w *bufio.Writer, t TestResult) {
	obs, more := capObservations(t)
	if len(obs) > 0 {
		writeTableHead(w, "Subtest", "Observed")
		for i := 0; i < len(obs); {
			j := i
			var pairs []string
			for ; j < len(obs) && obs[j].Subtest == obs[i].Subtest; j++ {
				pairs = append(pairs, code(obs[j].Key+" = "+obs[j].Value))
			}
			sub := "-"
			if obs[i].Subtest != "" {
				sub = cell(obs[i].Subtest)
			}
			fmt.Fprintf(w, "| %s | %s |\n", sub, strings.Join(pairs, " "))
			i = j
		}
	}
	if more > 0 {
		fmt.Fprintf(w, "\n%d more observations not shown.\n", more)
	}
}

// skipGroup is one row of the skips table.
type skipGroup struct {
	key       string // the feature not claimed, or the reason
	isFeature bool
	names     []string
}

// skipGroups groups the skipped tests: those skipped for want of claimed
// features by one feature each (the one that most skipped tests lack, so
// the table stays short: every Mesh test under Mesh), the others by their
// reason.
func skipGroups(run *Run) []skipGroup {
	lacking := map[string]int{}
	for _, t := range run.Tests {
		if t.Result == Skip {
			for _, f := range t.Unclaimed {
				lacking[string(f)]++
			}
		}
	}
	index := map[string]int{}
	var groups []skipGroup
	for _, t := range run.Tests {
		if t.Result != Skip {
			continue
		}
		key, isFeature := t.Message, false
		if len(t.Unclaimed) > 0 {
			isFeature = true
			key = string(t.Unclaimed[0])
			for _, f := range t.Unclaimed[1:] {
				if n, best := lacking[string(f)], lacking[key]; n > best || n == best && string(f) < key {
					key = string(f)
				}
			}
		}
		if key == "" {
			key = "no reason recorded"
		}
		id := fmt.Sprint(isFeature, key)
		i, ok := index[id]
		if !ok {
			i = len(groups)
			index[id] = i
			groups = append(groups, skipGroup{key: key, isFeature: isFeature})
		}
		groups[i].names = append(groups[i].names, t.ShortName)
	}
	slices.SortStableFunc(groups, func(a, b skipGroup) int {
		if a.isFeature != b.isFeature {
			if a.isFeature {
				return -1
			}
			return 1
		}
		return cmp.Or(cmp.Compare(len(b.names), len(a.names)), cmp.Compare(a.key, b.key))
	})
	return groups
}

// maxSkipNamesListed is how many test names a skips row lists when the
// skip was the run's selection (--run-test, --skip-tests), not a claim.
const maxSkipNamesListed = 10

func writeSkips(w *bufio.Writer, run *Run) {
	groups := skipGroups(run)
	n := 0
	for _, g := range groups {
		n += len(g.names)
	}
	fmt.Fprintf(w, "\n## Skips (%d)\n", n)
	if n == 0 {
		return
	}
	fmt.Fprintf(w, "\n")
	writeTableHead(w, "Not claimed, or why skipped", "Tests")
	for _, g := range groups {
		key := text(g.key)
		if g.isFeature {
			key = code(g.key)
		}
		names := g.names
		more := 0
		if !g.isFeature && len(names) > maxSkipNamesListed {
			more = len(names) - maxSkipNamesListed
			names = names[:maxSkipNamesListed]
		}
		list := make([]string, len(names))
		for i, s := range names {
			list[i] = text(s)
		}
		cellText := fmt.Sprintf("%d: %s", len(g.names), strings.Join(list, ", "))
		if more > 0 {
			cellText += fmt.Sprintf(" and %d more", more)
		}
		fmt.Fprintf(w, "| %s | %s |\n", key, cellText)
	}
}

// WriteMarkdownShort writes a summary small enough for a pull-request
// comment: the counts, the profiles' results, and each failure's first
// failing assertion.
func WriteMarkdownShort(w io.Writer, run *Run) error {
	if err := run.Validate(); err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	impl, env := run.Implementation, run.Environment
	fmt.Fprintf(bw, "### gatewitness: %s %s\n\n", text(title(impl)), text(impl.Version))
	if st := run.StatusLine(); st != "" {
		fmt.Fprintf(bw, "**%s**\n\n", text(st))
	}
	fmt.Fprintf(bw, "%s, in %s. Target: %s", countsLine(run), duration(run.Duration), text(run.Target.String()))
	if env.GatewayAPIVersion != "" {
		fmt.Fprintf(bw, "; Gateway API %s (%s)", text(env.GatewayAPIVersion), text(orUnknown(env.GatewayAPIChannel)))
	}
	if run.TimingTolerance > 0 {
		fmt.Fprintf(bw, "; timing tolerance %s", duration(run.TimingTolerance))
	}
	fmt.Fprintf(bw, ".\n")
	if rows := profileRows(run); len(rows) > 0 {
		fmt.Fprintf(bw, "\n")
		writeTableHead(bw, "Profile", "Core", "Extended")
		for _, r := range rows {
			if ProfileNotClaimed(r.p) {
				fmt.Fprintf(bw, "| %s | %s | - |\n", cell(r.p.Name), NotClaimed)
				continue
			}
			ext := "-"
			if r.p.Extended != nil {
				ext = shortStatus(r.p.Extended.Status)
			}
			fmt.Fprintf(bw, "| %s | %s | %s |\n", cell(r.p.Name), shortStatus(r.p.Core), ext)
		}
	}
	const maxListed, maxLine = 20, 300
	listed := 0
	for _, t := range run.Tests {
		if t.Result != Fail {
			continue
		}
		if listed == 0 {
			fmt.Fprintf(bw, "\nFailed:\n\n")
		}
		if listed == maxListed {
			_, failed, _ := run.Counts()
			fmt.Fprintf(bw, "- and %d more (see summary.md)\n", failed-maxListed)
			break
		}
		listed++
		line := firstLine(clean(t.Message))
		if len(line) > maxLine {
			line = strings.TrimSuffix(truncate(line, maxLine), "\n") // truncate marks the cut
			line = oneLine(line)
		}
		fmt.Fprintf(bw, "- **%s**: %s\n", text(t.ShortName), code(orDashString(line)))
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("reports: writing the short Markdown summary: %w", err)
	}
	return nil
}

func shortStatus(s confv1.Status) string {
	out := fmt.Sprintf("%s %d/%d", cell(string(s.Result)), s.Passed, s.Passed+s.Failed+s.Skipped)
	if s.Failed > 0 {
		out += fmt.Sprintf(", %d failed", s.Failed)
	}
	return out
}

func orDashString(s string) string {
	if s == "" {
		return "-"
	}
	return s
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

// PhasesLine describes phases in one line, e.g. "start 1.2s, set-up
// 310ms, serial tests 14.1s".
func PhasesLine(phases []Phase) string {
	parts := make([]string, len(phases))
	for i, p := range phases {
		d := p.Duration
		switch {
		case d >= time.Second:
			d = d.Round(100 * time.Millisecond)
		default:
			d = d.Round(time.Millisecond)
		}
		parts[i] = p.Name + " " + d.String()
	}
	return strings.Join(parts, ", ")
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
	kept := textcut.Prefix(s, n)
	if kept == s {
		return s
	}
	return fmt.Sprintf("%s\n… (%d more bytes cut)", kept, len(s)-len(kept))
}

// tail keeps the last n bytes of s (at a rune boundary), saying how much
// was cut before it.
func tail(s string, n int) string {
	kept := textcut.Suffix(s, n)
	if kept == s {
		return s
	}
	return fmt.Sprintf("[%d earlier bytes cut]\n%s", len(s)-len(kept), kept)
}

// writeConsistency writes the run's time to consistency (TimeToConsistency),
// if any test recorded it: per kind of step its distribution, and the
// slowest steps by test.
func writeConsistency(w *bufio.Writer, run *Run) {
	stats := TimeToConsistency(run)
	if len(stats) == 0 {
		return
	}
	writeTableSection(w, "Time to consistency",
		"From a configuration step's start to the data plane serving it on every path measured (for a deletion: no longer serving it).",
		"Step", "Steps", "p50", "p95", "Max", "Slowest")
	for _, c := range stats {
		var slow []string
		for _, st := range c.Slowest {
			slow = append(slow, fmt.Sprintf("%s %s", cell(st.Test), msDuration(st.Served)))
		}
		fmt.Fprintf(w, "| %s | %d | %s | %s | %s | %s |\n", cell(c.Step), c.Steps, msDuration(c.P50), msDuration(c.P95), msDuration(c.Max),
			strings.Join(slow, ", "))
	}
}
