package controller

import (
	"context"
	"testing"
	"time"

	"github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatewitness/gatewitness/cluster/store"
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

	g := gomega.NewWithT(t)
	g.SetDefaultEventuallyTimeout(60 * time.Second)
	g.SetDefaultEventuallyPollingInterval(10 * time.Millisecond)
	gwKey := client.ObjectKey{Namespace: infraNS, Name: "gateway-add-listener"}
	g.Eventually(func(g gomega.Gomega) {
		var gws gwv1.GatewayList
		g.Expect(st.List(ctx, &gws)).To(gomega.Succeed())
		for _, gw := range gws.Items {
			for _, typ := range []string{"Accepted", "Programmed"} {
				g.Expect(findCondition(gw.Status.Conditions, typ)).To(gomega.HaveValue(gomega.And(
					gomega.HaveField("Status", metav1.ConditionTrue),
					gomega.HaveField("ObservedGeneration", gw.Generation),
				)), "Gateway %s: %s", gw.Name, typ)
			}
		}
	}).Should(gomega.Succeed(), "every Gateway Accepted and Programmed at its generation")
	g.Eventually(func(g gomega.Gomega) {
		r := &gwv1.HTTPRoute{}
		g.Expect(st.Get(ctx, client.ObjectKey{Namespace: infraNS, Name: "no-intersecting-hosts"}, r)).To(gomega.Succeed())
		g.Expect(r.Status.Parents).To(gomega.HaveLen(1), "route parents")
		g.Expect(conditionIs(r.Status.Parents[0].Conditions, "Accepted", metav1.ConditionFalse, "NoMatchingListenerHostname")).To(gomega.Succeed())
	}).Should(gomega.Succeed(), "no-intersecting-hosts rejected for its hostnames")

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
	g.Eventually(func(g gomega.Gomega) {
		gw := &gwv1.Gateway{}
		g.Expect(st.Get(ctx, gwKey, gw)).To(gomega.Succeed())
		g.Expect(gw.Generation).NotTo(gomega.Equal(original.Generation), "generation")
		g.Expect(gw.Status.Conditions).To(gomega.HaveEach(gomega.HaveField("ObservedGeneration", gw.Generation)), "conditions")
		g.Expect(gw.Status.Listeners).To(gomega.HaveLen(2), "listeners")
		for _, l := range gw.Status.Listeners {
			g.Expect(l.AttachedRoutes).To(gomega.BeEquivalentTo(1), "listener %s attachedRoutes", l.Name)
			g.Expect(conditionIs(l.Conditions, "Programmed", metav1.ConditionTrue, "Programmed")).To(gomega.Succeed(), "listener %s", l.Name)
		}
	}).Should(gomega.Succeed(), "new generation observed, route on both listeners")
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
