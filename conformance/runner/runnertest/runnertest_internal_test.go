package runnertest

import (
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/gatewitness/gatewitness/gateway/dataplane"
	"github.com/gatewitness/gatewitness/gateway/dataplane/dataplanetest"
	"github.com/gatewitness/gatewitness/gateway/ir"
	"github.com/gatewitness/gatewitness/gateway/probeproxy/probeproxytest"
)

func TestZeroReferenceGatewayIsHealthy(t *testing.T) {
	h := ReferenceGateway{}.InProcess().Gateway
	if h.WrapApply != nil || h.NewDataPlane != nil || h.Replica != nil || h.ListenProbeProxy != nil || h.NoMesh {
		t.Errorf("the zero ReferenceGateway breaks something: %+v", h)
	}
}

// TestInProcessMutatesThenAppliesLate: the data plane gets the mutated snapshot,
// and with LateApply only after the delay.
func TestInProcessMutatesThenAppliesLate(t *testing.T) {
	const late = 200 * time.Millisecond
	got := make(chan *ir.Config, 1)
	g := ReferenceGateway{
		MutateConfig: func(c *ir.Config) { c.Gateways = append(c.Gateways, ir.Gateway{Name: "mutated"}) },
		LateApply:    late,
	}
	apply := g.InProcess().Gateway.WrapApply(func(c *ir.Config) error { got <- c; return nil }, logr.Discard())
	start := time.Now()
	if err := apply(&ir.Config{}); err != nil {
		t.Fatal(err)
	}
	select {
	case c := <-got:
		if took := time.Since(start); took < late {
			t.Errorf("applied after %v, want no sooner than %v", took, late)
		}
		if len(c.Gateways) != 1 || c.Gateways[0].Name != "mutated" {
			t.Errorf("the data plane got %+v, want the mutated snapshot", c)
		}
	case <-time.After(late + 10*time.Second):
		t.Fatal("the snapshot never reached the data plane")
	}
}

// TestLaggingReplicaAppliesLate: with LaggingReplica the cluster gets a
// second replica whose snapshots come that long late.
func TestLaggingReplicaAppliesLate(t *testing.T) {
	const lag = 200 * time.Millisecond
	replica := ReferenceGateway{LaggingReplica: lag}.InProcess().Gateway.Replica
	if replica == nil {
		t.Fatal("no second replica")
	}
	got := make(chan *ir.Config, 1)
	apply := replica(func(c *ir.Config) error { got <- c; return nil }, logr.Discard())
	start := time.Now()
	if err := apply(&ir.Config{}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-got:
		if took := time.Since(start); took < lag {
			t.Errorf("the replica applied after %v, want no sooner than %v", took, lag)
		}
	case <-time.After(lag + 10*time.Second):
		t.Fatal("the snapshot never reached the replica")
	}
}

func TestInProcessBuildsBrokenParts(t *testing.T) {
	h := ReferenceGateway{
		DataPlane:  dataplanetest.Hooks{TransportResends: true},
		ProbeProxy: probeproxytest.Hooks{TCPAlwaysUp: true},
		NoMesh:     true,
	}.InProcess().Gateway
	if h.NewDataPlane == nil || h.ListenProbeProxy == nil || !h.NoMesh {
		t.Fatalf("hooks %+v: want a data plane, a probe proxy and no mesh", h)
	}
	if err := h.NewDataPlane(dataplane.Options{}).Close(); err != nil {
		t.Error(err)
	}
}
