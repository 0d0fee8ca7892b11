package site

import (
	"cmp"
	"slices"
	"strings"

	confv1 "sigs.k8s.io/gateway-api/conformance/apis/v1"

	"github.com/gatewitness/gatewitness/features"
	"github.com/gatewitness/gatewitness/reports"
)

// series is the runs of one implementation, mode and target, oldest first,
// with each test's result in each run.
type series struct {
	Slug    string
	Label   string // the target, as TargetLabel says it
	Entries []*Entry
	// results[test][i] is the test's result in Entries[i], "" when the
	// run did not have the test.
	results map[string][]reports.Result
}

// latest is the series' newest run.
func (s *series) latest() *Entry { return s.Entries[len(s.Entries)-1] }

func (s *series) index(e *Entry) int {
	return slices.Index(s.Entries, e)
}

// groupSeries splits a history into its series, ordered by organization,
// project, mode and target.
func groupSeries(h *History) []*series {
	by := map[string]*series{}
	var out []*series
	for _, e := range h.Entries {
		s, ok := by[e.Series]
		if !ok {
			s = &series{Slug: e.Series, Label: TargetLabel(e.Run), results: map[string][]reports.Result{}}
			by[e.Series] = s
			out = append(out, s)
		}
		s.Entries = append(s.Entries, e)
	}
	for _, s := range out {
		for i, e := range s.Entries {
			for _, t := range e.Run.Tests {
				r, ok := s.results[t.ShortName]
				if !ok {
					r = make([]reports.Result, len(s.Entries))
					s.results[t.ShortName] = r
				}
				r[i] = t.Result
			}
		}
	}
	slices.SortFunc(out, func(a, b *series) int {
		ia, ib := a.latest().Run.Implementation, b.latest().Run.Implementation
		return cmp.Or(
			cmp.Compare(strings.ToLower(ia.Organization), strings.ToLower(ib.Organization)),
			cmp.Compare(strings.ToLower(ia.Project), strings.ToLower(ib.Project)),
			cmp.Compare(a.latest().Run.Mode, b.latest().Run.Mode),
			cmp.Compare(a.Label, b.Label))
	})
	return out
}

// A stripCell is one night of a history strip.
type stripCell struct {
	Entry   *Entry
	Result  reports.Result // "" when the run did not have the test
	Current bool           // the night the page is about
}

// State names the cell's look: pass, fail, skip or none.
func (c stripCell) State() string {
	if c.Result == "" {
		return "none"
	}
	return string(c.Result)
}

// testHistory is one test's history in a series, up to one of its runs.
type testHistory struct {
	// Strip is the last nights, oldest first, ending at the run.
	Strip []stripCell
	// FirstFailed is the first run of the failures that end at the run,
	// when the test failed in it; LastPassed is the last run, up to the
	// run, in which the test passed. Skipped nights and nights without
	// the test do not end a streak.
	FirstFailed, LastPassed *Entry
	// Flips counts the nights of the strip whose result (pass or fail)
	// differs from the night run before it; skips are passed over.
	Flips int
	// Flaky is true when the strip flips at least twice: a test that
	// fails and then passes again, or passes and then fails again, within
	// the nights shown. One flip is a change, not a flake.
	Flaky bool
}

// flakyFlips is how many flips within the strip make a test flaky.
const flakyFlips = 2

// history returns test's history in s up to and including run i, with a
// strip of the last nights runs.
func (s *series) history(test string, i, nights int) testHistory {
	res := s.results[test]
	var h testHistory
	if res == nil {
		res = make([]reports.Result, len(s.Entries))
	}
	for j := max(0, i-nights+1); j <= i; j++ {
		h.Strip = append(h.Strip, stripCell{Entry: s.Entries[j], Result: res[j], Current: j == i})
	}
	var prev reports.Result
	for _, c := range h.Strip {
		if c.Result != reports.Pass && c.Result != reports.Fail {
			continue
		}
		if prev != "" && c.Result != prev {
			h.Flips++
		}
		prev = c.Result
	}
	h.Flaky = h.Flips >= flakyFlips
	for j := i; j >= 0; j-- {
		if res[j] == reports.Pass {
			h.LastPassed = s.Entries[j]
			break
		}
	}
	if res[i] == reports.Fail {
		h.FirstFailed = s.Entries[i]
		for j := i - 1; j >= 0 && res[j] != reports.Pass; j-- {
			if res[j] == reports.Fail {
				h.FirstFailed = s.Entries[j]
			}
		}
	}
	return h
}

// runStrip is a strip of whole runs: a night fails when a test failed.
func (s *series) runStrip(i, nights int) []stripCell {
	var out []stripCell
	for j := max(0, i-nights+1); j <= i; j++ {
		r := reports.Pass
		p, f, _ := s.Entries[j].Run.Counts()
		switch {
		case f > 0:
			r = reports.Fail
		case p == 0:
			r = reports.Skip
		}
		out = append(out, stripCell{Entry: s.Entries[j], Result: r, Current: j == i})
	}
	return out
}

// change is a test whose result differs from the night before.
type change struct {
	Test     string
	From, To reports.Result // "" when the run did not have the test
	// Claimed are the test's features the run claims and the night before
	// did not: the result changed because the claims did.
	Claimed []string
}

// Kind describes the change in a word: fixed, broken, new, gone or
// changed; "newly claimed" when the claims changed, not the behaviour.
func (c change) Kind() string {
	switch {
	case len(c.Claimed) > 0:
		return "newly claimed"
	case c.From == "":
		return "new"
	case c.To == "":
		return "gone"
	case c.From == reports.Fail && c.To == reports.Pass:
		return "fixed"
	case c.To == reports.Fail:
		return "broken"
	}
	return "changed"
}

// changes lists the tests whose result in run i differs from run i-1,
// failures first, then by name. The first run of a series has none.
func (s *series) changes(i int) []change {
	if i == 0 {
		return nil
	}
	added, _ := s.claimChanges(i)
	var out []change
	for name, res := range s.results {
		if res[i] != res[i-1] {
			c := change{Test: name, From: res[i-1], To: res[i]}
			if t := testOf(s.Entries[i].Run, name); t != nil && res[i-1] != reports.Fail {
				for _, f := range t.Features {
					if slices.Contains(added, string(f)) {
						c.Claimed = append(c.Claimed, string(f))
					}
				}
			}
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b change) int {
		return cmp.Or(cmp.Compare(rank(a.To), rank(b.To)), cmp.Compare(a.Test, b.Test))
	})
	return out
}

// claimChanges returns the features run i claims that run i-1 did not
// (added) and those it no longer claims (dropped), sorted.
func (s *series) claimChanges(i int) (added, dropped []string) {
	if i == 0 {
		return nil, nil
	}
	names := func(r *reports.Run) []string {
		var out []string
		for _, f := range r.Claims.Features {
			out = append(out, string(f))
		}
		return out
	}
	now, before := names(s.Entries[i].Run), names(s.Entries[i-1].Run)
	for _, f := range now {
		if !slices.Contains(before, f) {
			added = append(added, f)
		}
	}
	for _, f := range before {
		if !slices.Contains(now, f) {
			dropped = append(dropped, f)
		}
	}
	slices.Sort(added)
	slices.Sort(dropped)
	return added, dropped
}

// rank orders results for lists people read: failures first.
func rank(r reports.Result) int {
	switch r {
	case reports.Fail:
		return 0
	case reports.Pass:
		return 1
	case reports.Inconclusive:
		return 2
	case reports.Skip:
		return 3
	}
	return 4
}

// profileResult is one profile's result in a run.
type profileResult struct {
	Report string // "upstream" or "gatewitness": which report holds it
	confv1.ProfileReport
}

// NotClaimed reports whether the run claimed nothing of the profile and
// ran none of its tests (reports.ProfileNotClaimed): the pages say "not
// claimed" rather than upstream's "success" of 0 tests.
func (p profileResult) NotClaimed() bool { return reports.ProfileNotClaimed(p.ProfileReport) }

// profilesOf lists run's profiles, upstream's first, by name.
func profilesOf(run *reports.Run) []profileResult {
	var out []profileResult
	if run.Conformance != nil {
		for _, p := range run.Conformance.ProfileReports {
			out = append(out, profileResult{"upstream", p})
		}
	}
	for _, p := range run.GatewitnessProfiles {
		out = append(out, profileResult{"gatewitness", p})
	}
	slices.SortStableFunc(out, func(a, b profileResult) int {
		return cmp.Or(cmp.Compare(b.Report, a.Report), cmp.Compare(a.Name, b.Name))
	})
	return out
}

// profileTable is the matrix of one profile, in the shape of upstream's
// implementations table: a row per implementation and target, the core
// and extended results, and a column per extended feature.
type profileTable struct {
	Name     string
	Report   string
	Features []string
	Rows     []matrixRow
}

// matrixRow is one implementation and target in a profileTable: its
// latest run's result.
type matrixRow struct {
	Series *series
	Entry  *Entry
	profileResult
	Cells []featureCell
}

// featureCell is one extended feature of a matrix row.
type featureCell struct {
	Feature string
	// State is pass (claimed; its tests in the profile passed), fail
	// (claimed; one of them failed), untested (claimed; none of them ran)
	// or unclaimed. Claimed means the run claimed it (Run.Claims), or the
	// profile's report lists it as supported.
	State string
}

// Symbol is what the cell shows.
func (c featureCell) Symbol() string {
	switch c.State {
	case "pass":
		return "✓"
	case "fail":
		return "✗"
	case "untested":
		return "○"
	}
	return "–"
}

// Title says what the cell means, for its tooltip.
func (c featureCell) Title() string {
	switch c.State {
	case "pass":
		return c.Feature + ": claimed, and its tests in this profile passed"
	case "fail":
		return c.Feature + ": claimed, and a test of it in this profile failed"
	case "untested":
		return c.Feature + ": claimed, but none of its tests in this profile ran"
	}
	return c.Feature + ": not claimed"
}

// matrix builds a profileTable for every profile of the series' latest
// runs, upstream's first.
func matrix(all []*series) []profileTable {
	byName := map[string]*profileTable{}
	var tables []*profileTable
	for _, s := range all {
		e := s.latest()
		for _, p := range profilesOf(e.Run) {
			tab, ok := byName[p.Name]
			if !ok {
				tab = &profileTable{Name: p.Name, Report: p.Report}
				byName[p.Name] = tab
				tables = append(tables, tab)
			}
			tab.Rows = append(tab.Rows, matrixRow{Series: s, Entry: e, profileResult: p})
		}
	}
	out := make([]profileTable, 0, len(tables))
	for _, tab := range tables {
		var names []string
		if p, ok := features.LookupProfile(tab.Name); ok {
			for _, f := range p.Extended {
				names = append(names, string(f))
			}
		}
		for _, r := range tab.Rows {
			if r.Extended != nil {
				names = append(names, r.Extended.SupportedFeatures...)
				names = append(names, r.Extended.UnsupportedFeatures...)
			}
		}
		slices.Sort(names)
		tab.Features = slices.Compact(names)
		for i := range tab.Rows {
			tab.Rows[i].Cells = featureCells(tab.Rows[i], tab.Features)
		}
		out = append(out, *tab)
	}
	slices.SortStableFunc(out, func(a, b profileTable) int {
		return cmp.Or(cmp.Compare(b.Report, a.Report), cmp.Compare(a.Name, b.Name))
	})
	return out
}

func featureCells(r matrixRow, names []string) []featureCell {
	// What the run claimed; the report's supported features too, for a
	// record whose claims are not filled in.
	claimed := map[string]bool{}
	for _, f := range r.Entry.Run.Claims.Features {
		claimed[string(f)] = true
	}
	if r.Extended != nil {
		for _, f := range r.Extended.SupportedFeatures {
			claimed[f] = true
		}
	}
	cells := make([]featureCell, len(names))
	for i, f := range names {
		c := featureCell{Feature: f, State: "unclaimed"}
		if claimed[f] {
			c.State = "untested"
			for _, t := range r.Entry.Run.Tests {
				if !slices.Contains(t.Profiles, r.Name) || !slices.Contains(t.Features, features.FeatureName(f)) {
					continue
				}
				if t.Result == reports.Fail {
					c.State = "fail"
					break
				}
				if t.Result == reports.Pass {
					c.State = "pass"
				}
			}
		}
		cells[i] = c
	}
	return cells
}

// testOf returns run's result of the test name, or nil.
func testOf(run *reports.Run, name string) *reports.TestResult {
	for i := range run.Tests {
		if run.Tests[i].ShortName == name {
			return &run.Tests[i]
		}
	}
	return nil
}
