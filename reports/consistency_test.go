package reports

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/gatewitness/gatewitness/contract/observe"
)

// TestTimeToConsistency: the steps' Served times are summed up per kind
// of step, served first, with nearest-rank percentiles and the slowest
// steps named by test; the summary and the gatewitness report show them.
func TestTimeToConsistency(t *testing.T) {
	run := goldenRun()
	if got := TimeToConsistency(run); got != nil {
		t.Fatalf("a run whose tests recorded no step: %+v; want nil", got)
	}
	step := func(kind string, ms int) observe.Observation {
		c := observe.Consistency{Step: kind, Routes: "HTTPRoute ns/r", FirstServed: time.Duration(ms) * time.Millisecond / 2,
			Served: time.Duration(ms) * time.Millisecond}
		return observe.Observation{Key: "consistency", Value: c.String(), Consistency: &c}
	}
	for i := range run.Tests {
		run.Tests[i].Observations = nil
	}
	for ms := 1; ms <= 20; ms++ {
		i := ms % len(run.Tests)
		run.Tests[i].Observations = append(run.Tests[i].Observations, step("served", ms*10))
	}
	run.Tests[0].Observations = append(run.Tests[0].Observations, step("deleted", 7))
	got := TimeToConsistency(run)
	if len(got) != 2 || got[0].Step != "served" || got[1].Step != "deleted" {
		t.Fatalf("TimeToConsistency = %+v; want served, then deleted", got)
	}
	s := got[0]
	if s.Steps != 20 || s.P50 != 100*time.Millisecond || s.P95 != 190*time.Millisecond || s.Max != 200*time.Millisecond {
		t.Errorf("served: %d steps, p50 %v, p95 %v, max %v; want 20, 100ms, 190ms, 200ms", s.Steps, s.P50, s.P95, s.Max)
	}
	if len(s.Slowest) != slowestSteps || s.Slowest[0].Served != 200*time.Millisecond || s.Slowest[0].Test != run.Tests[20%len(run.Tests)].ShortName {
		t.Errorf("slowest: %+v; want the 5 slowest, the 200ms step first with its test", s.Slowest)
	}
	if d := got[1]; d.Steps != 1 || d.P50 != 7*time.Millisecond || d.Max != 7*time.Millisecond {
		t.Errorf("deleted: %+v; want one step of 7ms", d)
	}

	var md bytes.Buffer
	if err := WriteMarkdown(&md, run); err != nil {
		t.Fatal(err)
	}
	const head = "\n## Time to consistency\n\nFrom a configuration step's start to the data plane serving it on every path measured (for a deletion: no longer serving it).\n\n" +
		"| Step | Steps | p50 | p95 | Max | Slowest |\n|---|---|---|---|---|---|\n| served | 20 | 100ms | 190ms | 200ms | "
	if !strings.Contains(md.String(), head) {
		t.Errorf("summary.md has no time-to-consistency table:\n%s", md.String())
	}
	var y bytes.Buffer
	if err := WriteGatewitnessYAML(&y, run); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(y.String(), "timeToConsistency:") || !strings.Contains(y.String(), "p95: 190ms") {
		t.Errorf("the gatewitness report has no time to consistency:\n%s", y.String())
	}
}
