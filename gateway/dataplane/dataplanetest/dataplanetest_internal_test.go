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

// TestLaggingReplicaTakesTheNewestAtItsReload: a snapshot replaced before
// its reload is due is never applied, however far apart the two came
// (here 150 ms, beyond a debounce of 100 ms, within the lag), also after a
// pause, and the newest is applied no sooner than the lag after the change
// that scheduled the reload. (A debounce of 100 ms was tried first; under
// CI's load the controller's snapshot with the endpoints came more than
// 100 ms after the one without, and the late replica bound a new Gateway's
// port with the latter: 503 "no ready endpoints" for 4 of 240 requests.)
func TestLaggingReplicaTakesTheNewestAtItsReload(t *testing.T) {
	const lag = 400 * time.Millisecond
	got := make(chan string, 16)
	apply := LaggingReplica(func(cfg *ir.Config) error {
		got <- cfg.Gateways[0].Name
		return nil
	}, lag, logr.Discard())
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
	pause := func(d time.Duration) { // the scenario's gaps, not a wait for another goroutine
		for end := time.Now().Add(d); time.Now().Before(end); {
			<-time.After(time.Until(end))
		}
	}

	_ = apply(snapshot("a"))
	if n := next(); n != "a" {
		t.Fatalf("applied %q first, want a", n)
	}
	pause(2 * lag)
	start := time.Now()
	_ = apply(snapshot("b"))
	pause(150 * time.Millisecond)
	_ = apply(snapshot("c"))
	if n := next(); n != "c" {
		t.Errorf("applied %q after b, then c 150ms later; want only c, the newest at the reload b scheduled", n)
	}
	if took := time.Since(start); took < lag {
		t.Errorf("c applied %v after the change, want no sooner than the lag %v", took, lag)
	}
	select {
	case n := <-got:
		t.Errorf("applied %q again at the reload c scheduled; want nothing new", n)
	case <-time.After(lag + 200*time.Millisecond):
	}
}
