package dataplanetest_test

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/gatewitness/gatewitness/gateway/dataplane/dataplanetest"
	"github.com/gatewitness/gatewitness/gateway/ir"
)

// recorder is an Apply that records the snapshots it was handed, by the
// name of their only Gateway.
type recorder struct {
	mu   sync.Mutex
	got  []string
	seen chan struct{}
}

func newRecorder() *recorder { return &recorder{seen: make(chan struct{}, 16)} }

func (r *recorder) apply(cfg *ir.Config) error {
	r.mu.Lock()
	r.got = append(r.got, cfg.Gateways[0].Name)
	r.mu.Unlock()
	r.seen <- struct{}{}
	return nil
}

// waitFor waits until the snapshot named name is applied and returns
// every snapshot applied so far, in order.
func (r *recorder) waitFor(t *testing.T, name string) []string {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		r.mu.Lock()
		got := slices.Clone(r.got)
		r.mu.Unlock()
		if slices.Contains(got, name) {
			return got
		}
		select {
		case <-r.seen:
		case <-deadline:
			t.Fatalf("snapshot %q was never applied; applied: %v", name, got)
		}
	}
}

func snapshot(name string) *ir.Config {
	return &ir.Config{Gateways: []ir.Gateway{{Name: name}}}
}

// TestLateApplyAppliesEverySnapshot: a data plane fed late takes the
// snapshots in the order they came, never one older than the last it
// took (two due at once may be taken as the later alone), and each
// snapshot that came alone.
func TestLateApplyAppliesEverySnapshot(t *testing.T) {
	r := newRecorder()
	apply := dataplanetest.LateApply(r.apply, 50*time.Millisecond, logr.Discard())
	for _, n := range []string{"a", "b", "c"} {
		if err := apply(snapshot(n)); err != nil {
			t.Fatal(err)
		}
	}
	got := r.waitFor(t, "c")
	if !slices.IsSorted(got) || len(slices.Compact(slices.Clone(got))) != len(got) || got[len(got)-1] != "c" {
		t.Errorf("applied %v, want a subsequence of [a b c] ending in c", got)
	}
	if err := apply(snapshot("d")); err != nil {
		t.Fatal(err)
	}
	if got := r.waitFor(t, "d"); got[len(got)-1] != "d" || len(got) < 2 {
		t.Errorf("applied %v, want d after the first burst's", got)
	}
}

// TestLaggingReplicaTakesABurstAsOne: a lagging replica applies only the
// last snapshot of a burst (all handed over before its reload), no
// sooner than its lag, and a snapshot that comes after a pause on its own.
func TestLaggingReplicaTakesABurstAsOne(t *testing.T) {
	const lag = 200 * time.Millisecond
	r := newRecorder()
	apply := dataplanetest.LaggingReplica(r.apply, lag, logr.Discard())
	start := time.Now()
	for _, n := range []string{"a", "b", "c"} {
		if err := apply(snapshot(n)); err != nil {
			t.Fatal(err)
		}
	}
	if got := r.waitFor(t, "c"); !slices.Equal(got, []string{"c"}) {
		t.Errorf("applied %v after a burst, want only its last, [c]", got)
	}
	if took := time.Since(start); took < lag {
		t.Errorf("the burst's last snapshot was applied %v after it came, want no sooner than the lag %v", took, lag)
	}
	if err := apply(snapshot("d")); err != nil {
		t.Fatal(err)
	}
	if got := r.waitFor(t, "d"); !slices.Equal(got, []string{"c", "d"}) {
		t.Errorf("applied %v, want [c d]: a snapshot after a pause is applied", got)
	}
}
