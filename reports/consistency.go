package reports

import (
	"cmp"
	"slices"
	"time"

	"github.com/gatewitness/gatewitness/contract/observe"
)

// Time to consistency: each test that configures routes records, per
// configuration step, when the suite saw its routes accepted, first
// served and served on every path it measured (observe.Consistency).
// The reports show their distribution over a run, per kind of step, and
// the slowest steps with the tests that took them.

// slowestSteps is how many of a kind's slowest steps the reports name.
const slowestSteps = 5

// ConsistencyStats is the distribution, over a run's configuration steps
// of one kind ("served": routes added; "deleted": routes taken away), of
// the time from the step's start to the data plane serving it on every
// path measured.
type ConsistencyStats struct {
	Step  string `json:"step"`
	Steps int    `json:"steps"`
	// P50, P95 and Max are of the steps' Served times, nearest-rank.
	P50 time.Duration `json:"p50"`
	P95 time.Duration `json:"p95"`
	Max time.Duration `json:"max"`
	// Slowest are the slowest steps, slowest first.
	Slowest []ConsistencyStep `json:"slowest,omitempty"`
}

// ConsistencyStep is one configuration step of a test.
type ConsistencyStep struct {
	Test string `json:"test"`
	observe.Consistency
}

// TimeToConsistency returns the distributions of run's configuration
// steps, one per kind of step ("served" first), or nil when no test
// recorded one.
func TimeToConsistency(run *Run) []ConsistencyStats {
	byStep := map[string][]ConsistencyStep{}
	for _, t := range run.Tests {
		for _, o := range t.Observations {
			if c := o.Consistency; c != nil {
				byStep[c.Step] = append(byStep[c.Step], ConsistencyStep{Test: t.ShortName, Consistency: *c})
			}
		}
	}
	var out []ConsistencyStats
	for step, steps := range byStep {
		slices.SortStableFunc(steps, func(a, b ConsistencyStep) int { return cmp.Compare(b.Served, a.Served) })
		rank := func(p int) time.Duration { // nearest rank of the p-th percentile, steps sorted slowest first
			n := (p*len(steps) + 99) / 100
			return steps[len(steps)-max(n, 1)].Served
		}
		out = append(out, ConsistencyStats{
			Step: step, Steps: len(steps),
			P50: rank(50), P95: rank(95), Max: steps[0].Served,
			Slowest: slices.Clone(steps[:min(slowestSteps, len(steps))]),
		})
	}
	slices.SortFunc(out, func(a, b ConsistencyStats) int {
		if (a.Step == "served") != (b.Step == "served") {
			if a.Step == "served" {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.Step, b.Step)
	})
	return out
}
