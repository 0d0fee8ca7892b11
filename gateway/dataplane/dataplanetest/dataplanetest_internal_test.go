package dataplanetest

import (
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/gatewitness/gatewitness/gateway/dataplane"
	"github.com/gatewitness/gatewitness/gateway/ir"
)

func TestNewServerHealthy(t *testing.T) {
	s := NewServer(dataplane.Options{}, Hooks{})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestMergeKeepsBothSides(t *testing.T) {
	got := Merge(Hooks{TransportResends: true}, Hooks{GRPC: GRPCTimeouts{UnavailableOnExpiry: true}})
	if !got.TransportResends || !got.GRPC.UnavailableOnExpiry {
		t.Errorf("Merge = %+v: lost a side", got)
	}
}

// TestLaggingReplicaMergesABurstAfterAPause: a burst that comes long after
// the last applied snapshot (longer than the longest burst) is still taken
// as one change; only a burst itself longer than that has a snapshot of
// its own applied. (The first version bounded the burst from the last
// applied snapshot, so a burst after a pause was applied snapshot by
// snapshot: the late replica bound a new Gateway's port with the snapshot
// made before the controller had its backend's endpoints.)
func TestLaggingReplicaMergesABurstAfterAPause(t *testing.T) {
	const longest = 300 * time.Millisecond
	got := make(chan string, 16)
	apply := lateApply(func(cfg *ir.Config) error {
		got <- cfg.Gateways[0].Name
		return nil
	}, 50*time.Millisecond, ReplicaDebounce, longest, logr.Discard())
	next := func() string {
		t.Helper()
		select {
		case n := <-got:
			return n
		case <-time.After(10 * time.Second):
			t.Fatal("no snapshot applied")
			return ""
		}
	}
	snapshot := func(name string) *ir.Config { return &ir.Config{Gateways: []ir.Gateway{{Name: name}}} }

	_ = apply(snapshot("a"))
	if n := next(); n != "a" {
		t.Fatalf("applied %q first, want a", n)
	}
	// A pause longer than the longest burst, then a burst of two.
	for pause := time.Now().Add(2 * longest); time.Now().Before(pause); {
		<-time.After(time.Until(pause)) // the scenario's pause, not a wait for another goroutine
	}
	_ = apply(snapshot("b"))
	_ = apply(snapshot("c"))
	if n := next(); n != "c" {
		t.Errorf("applied %q after a pause and the burst b, c; want only c", n)
	}
}
