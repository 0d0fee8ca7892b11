package site

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/gatewitness/gatewitness/reports"
)

// Breakage is a test that failed in a run: a claimed test (a test runs
// only when the run claims its features) that a nightly alerts on, with
// one issue per Key.
type Breakage struct {
	// Key names the breakage night after night: the series and the test.
	Key string `json:"key"`
	// Series is the series' slug; Target what it ran against
	// (TargetLabel); Implementation its organization, project and version.
	Series         string `json:"series"`
	Target         string `json:"target"`
	Implementation string `json:"implementation"`
	// Test is the failed test's ShortName.
	Test string `json:"test"`
	// Kind is "broken" when the test passed in the series' run before,
	// "failing" when it failed there too (or was skipped since it last
	// failed), "new" when the series has no result of it before; or
	// HistoryProblem for a run of the history that cannot be read (Run
	// and Test name its folder, Target is "the history", Message says
	// why; no series).
	Kind string `json:"kind"`
	// Since is the night of the first failure of the failures that end
	// at this run; LastPassed the night it last passed, "" if never.
	Since      string `json:"since"`
	LastPassed string `json:"lastPassed,omitempty"`
	// Message is the failure's first line.
	Message string `json:"message"`
	// Run is the run's ID; Page the test's page, relative to the site.
	Run  string `json:"run"`
	Page string `json:"page"`
}

// HistoryProblem is the Kind of a Breakage that is no test's failure but
// a run of the history that cannot be read (History.Problems).
const HistoryProblem = "history-problem"

// Breakages returns the failed tests of the runs ids of history h (all
// series' newest runs when ids is empty), in series order and then by
// test name, then the history's problems. Runs that are not complete
// (interrupted, incomplete) raise none.
func Breakages(h *History, ids []string) ([]Breakage, error) {
	all := groupSeries(h)
	var out []Breakage
	for _, s := range all {
		for i, e := range s.Entries {
			if !(len(ids) == 0 && i == len(s.Entries)-1 || slices.Contains(ids, e.ID)) {
				continue
			}
			if e.Run.Status != reports.RunComplete {
				// An interrupted or incomplete run says nothing of the
				// tests it cut short, and is no night to alert on.
				continue
			}
			for _, t := range e.Run.Tests {
				if t.Result != reports.Fail {
					continue
				}
				th := s.history(t.ShortName, i, i+1)
				b := Breakage{
					Key:            s.Slug + "/" + t.ShortName,
					Series:         s.Slug,
					Target:         s.Label,
					Implementation: strings.TrimSpace(strings.Join([]string{e.Run.Implementation.Organization, e.Run.Implementation.Project, e.Run.Implementation.Version}, " ")),
					Test:           t.ShortName,
					Kind:           breakageKind(s.results[t.ShortName], i),
					Since:          night(th.FirstFailed.Run.Started),
					Message:        firstLine(t.Message),
					Run:            e.ID,
					Page:           testURL("", e.ID, t.ShortName),
				}
				if th.LastPassed != nil {
					b.LastPassed = night(th.LastPassed.Run.Started)
				}
				out = append(out, b)
			}
		}
	}
	for _, p := range h.Problems {
		// Test and Target read as "<folder> on the history" where a
		// nightly names a failure "<test> on <target>".
		out = append(out, Breakage{Key: "history/" + p.ID, Kind: HistoryProblem, Test: p.ID, Target: "the history", Run: p.ID, Message: p.Err})
	}
	for _, id := range ids {
		if !slices.ContainsFunc(h.Entries, func(e *Entry) bool { return e.ID == id }) {
			return out, fmt.Errorf("no run %s in the history", id)
		}
	}
	return out, nil
}

// breakageKind says how a failure at i relates to the nights before it:
// the last result before it that is a pass or a fail (skips and nights
// without the test are passed over).
func breakageKind(res []reports.Result, i int) string {
	for j := i - 1; j >= 0; j-- {
		switch res[j] {
		case reports.Pass:
			return "broken"
		case reports.Fail:
			return "failing"
		}
	}
	return "new"
}

// WriteBreakages writes breakages as a JSON array (an empty one when
// none).
func WriteBreakages(w io.Writer, breakages []Breakage) error {
	if breakages == nil {
		breakages = []Breakage{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(breakages); err != nil {
		return fmt.Errorf("writing the breakages: %w", err)
	}
	return nil
}
