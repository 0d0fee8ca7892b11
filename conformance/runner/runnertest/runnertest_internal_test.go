package runnertest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

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

// TestStatusFilterSeesStatusWritesOnly: the controller's client passes
// the objects of its status writes, Update and Patch, through StatusFilter,
// and what the filter changes is what is written; other writes pass it by.
func TestStatusFilterSeesStatusWritesOnly(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := gwv1.Install(scheme); err != nil {
		t.Fatal(err)
	}
	route := &gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "r"}}
	base := fake.NewClientBuilder().WithScheme(scheme).WithObjects(route).WithStatusSubresource(route).Build()
	var filtered []string
	g := ReferenceGateway{StatusFilter: func(obj client.Object) {
		r := obj.(*gwv1.HTTPRoute)
		filtered = append(filtered, string(r.Status.Parents[0].ControllerName))
		r.Status.Parents[0].ControllerName = "filtered"
	}}
	c := g.InProcess().Gateway.WrapControllerClient(base)
	ctx := context.Background()
	key := client.ObjectKeyFromObject(route)

	r := &gwv1.HTTPRoute{}
	if err := c.Get(ctx, key, r); err != nil {
		t.Fatal(err)
	}
	r.Status.Parents = []gwv1.RouteParentStatus{{ParentRef: gwv1.ParentReference{Name: "gw"}, ControllerName: "by-update"}}
	if err := c.Status().Update(ctx, r); err != nil {
		t.Fatal(err)
	}
	before := r.DeepCopy()
	r.Status.Parents[0].ControllerName = "by-patch"
	if err := c.Status().Patch(ctx, r, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	r.Labels = map[string]string{"a": "b"}
	if err := c.Update(ctx, r); err != nil {
		t.Fatal(err)
	}
	if want := []string{"by-update", "by-patch"}; !slices.Equal(filtered, want) {
		t.Errorf("the filter saw %q; want %q (the status Update, then the Patch; not the object's Update)", filtered, want)
	}
	got := &gwv1.HTTPRoute{}
	if err := base.Get(ctx, key, got); err != nil {
		t.Fatal(err)
	}
	if len(got.Status.Parents) != 1 || got.Status.Parents[0].ControllerName != "filtered" {
		t.Errorf("stored status %+v; want the filter's change written", got.Status.Parents)
	}
}
