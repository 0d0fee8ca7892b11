package controller

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatecheck/gatecheck/cluster/store"
)

// TestAgainstInProcessStore runs the controller against the embedded
// cluster's store, which defaults and validates with the real CRDs and
// manages generations as an API server does. It replays what upstream's
// GatewayModifyListeners and GatewayObservedGenerationBump do: wait until
// the Gateway is ready, add a listener, and wait until the new generation is
// observed with the route attached to both listeners.
func TestAgainstInProcessStore(t *testing.T) {
	st, err := store.New(store.Options{})
	if err != nil {
		t.Fatalf("store.New: %v", err)
	}
	if err := st.Create(context.Background(), testClass()); err != nil {
		t.Fatal(err)
	}
	loadManifests(t, st, "base/manifests.yaml", "tests/gateway-modify-listeners.yaml", "tests/httproute-hostname-intersection.yaml")
	addConformanceSecrets(t, st)

	c, err := New(Options{Client: st, ControllerName: testControllerName, Apply: (&recorder{}).apply, Addresses: loopbackAddresses})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	defer func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("Run did not return after its context was cancelled")
		}
	}()

	const within = 60 * time.Second
	gwKey := client.ObjectKey{Namespace: infraNS, Name: "gateway-add-listener"}
	eventually(t, within, "every Gateway Accepted and Programmed at its generation", func() error {
		var gws gwv1.GatewayList
		if err := st.List(ctx, &gws); err != nil {
			return err
		}
		for _, gw := range gws.Items {
			for _, typ := range []string{"Accepted", "Programmed"} {
				c := findCondition(gw.Status.Conditions, typ)
				if c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != gw.Generation {
					return fmt.Errorf("Gateway %s: %s = %+v at generation %d", gw.Name, typ, c, gw.Generation)
				}
			}
		}
		return nil
	})
	eventually(t, within, "no-intersecting-hosts rejected for its hostnames", func() error {
		r := &gwv1.HTTPRoute{}
		if err := st.Get(ctx, client.ObjectKey{Namespace: infraNS, Name: "no-intersecting-hosts"}, r); err != nil {
			return err
		}
		if len(r.Status.Parents) != 1 {
			return fmt.Errorf("parents %+v", r.Status.Parents)
		}
		return conditionIs(r.Status.Parents[0].Conditions, "Accepted", metav1.ConditionFalse, "NoMatchingListenerHostname")
	})

	original := &gwv1.Gateway{}
	if err := st.Get(ctx, gwKey, original); err != nil {
		t.Fatal(err)
	}
	mutated := original.DeepCopy()
	all := gwv1.NamespacesFromAll
	host := gwv1.Hostname("data.test.com")
	mutated.Spec.Listeners = append(mutated.Spec.Listeners, gwv1.Listener{
		Name: "http", Port: 80, Protocol: gwv1.HTTPProtocolType, Hostname: &host,
		AllowedRoutes: &gwv1.AllowedRoutes{Namespaces: &gwv1.RouteNamespaces{From: &all}},
	})
	if err := st.Patch(ctx, mutated, client.MergeFrom(original)); err != nil {
		t.Fatalf("adding a listener: %v", err)
	}
	eventually(t, within, "new generation observed, route on both listeners", func() error {
		gw := &gwv1.Gateway{}
		if err := st.Get(ctx, gwKey, gw); err != nil {
			return err
		}
		if gw.Generation == original.Generation {
			return fmt.Errorf("generation did not change (%d)", gw.Generation)
		}
		for _, c := range gw.Status.Conditions {
			if c.ObservedGeneration != gw.Generation {
				return fmt.Errorf("%s observed generation %d, want %d", c.Type, c.ObservedGeneration, gw.Generation)
			}
		}
		if len(gw.Status.Listeners) != 2 {
			return fmt.Errorf("listeners %+v", gw.Status.Listeners)
		}
		for _, l := range gw.Status.Listeners {
			if l.AttachedRoutes != 1 {
				return fmt.Errorf("listener %s attachedRoutes %d", l.Name, l.AttachedRoutes)
			}
			if err := conditionIs(l.Conditions, "Programmed", metav1.ConditionTrue, "Programmed"); err != nil {
				return fmt.Errorf("listener %s: %w", l.Name, err)
			}
		}
		return nil
	})
}

// BenchmarkBuild measures one full recompute (attachment, status decisions
// and snapshot compilation, without listing or writing) over the upstream
// base manifests plus the hostname-intersection test's Gateways and routes.
func BenchmarkBuild(b *testing.B) {
	cl := newFakeClient(b, testClass())
	loadManifests(b, cl, "base/manifests.yaml", "tests/httproute-hostname-intersection.yaml", "tests/gateway-with-attached-routes.yaml")
	c := newTestController(b, cl, &recorder{})
	o, err := c.listObjects(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		c.build(o)
	}
}
