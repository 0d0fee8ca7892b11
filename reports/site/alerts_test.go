package site

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gatewitness/gatewitness/reports"
)

// TestBreakages: every failed test of a night is a breakage, named the
// same night after night, and says whether it broke tonight (it passed
// the last time it ran), was failing already, or is new.
func TestBreakages(t *testing.T) {
	names := []string{"Broke", "StillFails", "BrokeAfterSkip", "New", "Passes"}
	nights := [][]reports.Result{
		{P, F, P, "", P},
		{P, F, S, "", P},
		{F, F, F, F, P},
	}
	var runs []*reports.Run
	for n, res := range nights {
		m := map[string]reports.Result{}
		for i, name := range names {
			m[name] = res[i]
		}
		r := nightRun(n, m)
		for i := range r.Tests {
			if r.Tests[i].Result == F {
				r.Tests[i].Message = r.Tests[i].ShortName + " failed\nmore detail"
			}
		}
		runs = append(runs, r)
	}
	h, err := NewHistory(runs...)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Breakages(h, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"Broke": "broken", "StillFails": "failing", "BrokeAfterSkip": "broken", "New": "new"}
	if len(got) != len(want) {
		t.Fatalf("%d breakages, want %d: %+v", len(got), len(want), got)
	}
	for _, b := range got {
		if want[b.Test] != b.Kind {
			t.Errorf("%s: kind %q, want %q", b.Test, b.Kind, want[b.Test])
		}
		if b.Key != "gatewitness-reference-gateway-default-in-process/"+b.Test || !strings.HasPrefix(b.Message, b.Test+" failed") || strings.Contains(b.Message, "more detail") ||
			!strings.HasPrefix(b.Page, "runs/"+h.Entries[2].ID+"/tests/"+b.Test) {
			t.Errorf("breakage %+v", b)
		}
	}
	if b := got[slices0(got, "StillFails")]; b.Since != night(runs[0].Started) || b.LastPassed != "" {
		t.Errorf("StillFails: since %q, last passed %q; want the first night, never", b.Since, b.LastPassed)
	}
	// The breakages of an older run, named by its ID.
	old, err := Breakages(h, []string{h.Entries[1].ID})
	if err != nil || len(old) != 1 || old[0].Test != "StillFails" {
		t.Errorf("breakages of night 1: %+v, %v", old, err)
	}
	if _, err := Breakages(h, []string{"20990101T000000Z-none"}); err == nil {
		t.Error("a run not in the history: no error")
	}
	var buf bytes.Buffer
	if err := WriteBreakages(&buf, nil); err != nil || strings.TrimSpace(buf.String()) != "[]" {
		t.Errorf("no breakages: %q, %v; want []", buf.String(), err)
	}
	buf.Reset()
	if err := WriteBreakages(&buf, got); err != nil {
		t.Fatal(err)
	}
	var back []Breakage
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil || len(back) != 4 {
		t.Errorf("round trip: %v, %d", err, len(back))
	}
}

func slices0(bs []Breakage, test string) int {
	for i, b := range bs {
		if b.Test == test {
			return i
		}
	}
	return -1
}

// TestSeriesPerReleaseAndChannel: runs of one implementation and target
// against other Gateway API releases or channels (a nightly's matrix)
// are series of their own, named so.
func TestSeriesPerReleaseAndChannel(t *testing.T) {
	var runs []*reports.Run
	for _, env := range []reports.Environment{
		{GatewayAPIVersion: "v1.6.3", GatewayAPIChannel: "experimental"},
		{GatewayAPIVersion: "v1.6.3", GatewayAPIChannel: "standard"},
		{GatewayAPIVersion: "v1.7.0", GatewayAPIChannel: "standard"},
	} {
		r := nightRun(0, map[string]reports.Result{"A": P})
		r.Environment = env
		runs = append(runs, r)
	}
	cluster := nightRun(1, map[string]reports.Result{"A": P})
	cluster.Target = reports.Target{Context: "kind-gw-v1.7.0-standard", GatewayClass: "acme"}
	cluster.Environment = reports.Environment{GatewayAPIVersion: "v1.7.0", GatewayAPIChannel: "standard"}
	runs = append(runs, cluster)
	h, err := NewHistory(runs...)
	if err != nil {
		t.Fatal(err)
	}
	var labels []string
	for _, s := range groupSeries(h) {
		labels = append(labels, s.Label)
	}
	want := []string{"in-process · v1.6 experimental", "in-process · v1.6 standard", "in-process · v1.7 standard", "kind-gw-v1.7.0-standard · acme · v1.7 standard"}
	slices.Sort(labels)
	if !slices.Equal(labels, want) {
		t.Errorf("series %q, want %q", labels, want)
	}
}

// TestNoBreakagesOfAnInterruptedRun: the failed test of an interrupted
// (or incomplete) run raises no alert, and a run of the history that
// cannot be read is an alert of its own kind; the site shows both.
func TestNoBreakagesOfAnInterruptedRun(t *testing.T) {
	first := nightRun(0, map[string]reports.Result{"A": P, "B": P})
	stopped := nightRun(1, map[string]reports.Result{"A": F, "B": P})
	stopped.Status = reports.RunInterrupted
	stopped.Interruption = &reports.Interruption{At: stopped.Started.Add(time.Minute), Signal: "SIGTERM"}
	stopped.Tests[1].Result = reports.Interrupted
	h, err := NewHistory(first, stopped)
	if err != nil {
		t.Fatal(err)
	}
	h.Problems = []Problem{{ID: "20261103T020000Z-x", Err: "run.json: no such file or directory"}}
	got, err := Breakages(h, []string{h.Entries[1].ID})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Kind != HistoryProblem || got[0].Run != "20261103T020000Z-x" {
		t.Fatalf("breakages %+v; want only the history problem", got)
	}
	out, index := buildIndex(t, h)
	for _, want := range []string{"History problems (1)", "20261103T020000Z-x", `class="run-status">interrupted<`} {
		if !strings.Contains(index, want) {
			t.Errorf("index.html does not show %q", want)
		}
	}
	page, err := os.ReadFile(filepath.Join(out, "runs", h.Entries[1].ID, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(page, []byte("INTERRUPTED: the run was stopped by SIGTERM 1m0s after it started")) {
		t.Error("the interrupted run's page does not say it was interrupted, by what and when")
	}
}

// buildIndex builds h's site in a temporary folder and returns the folder
// and its index page.
func buildIndex(t *testing.T, h *History) (string, string) {
	t.Helper()
	out := t.TempDir()
	if _, err := Build(out, h, Options{}); err != nil {
		t.Fatal(err)
	}
	index, err := os.ReadFile(filepath.Join(out, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	return out, string(index)
}
