package controller

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/gatewitness/gatewitness/gateway/ir"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

func conditionIs(conds []metav1.Condition, typ string, status metav1.ConditionStatus, reason string) error {
	c := findCondition(conds, typ)
	if c == nil {
		return fmt.Errorf("no %s condition", typ)
	}
	if c.Status != status || c.Reason != reason {
		return fmt.Errorf("%s is %s/%s, want %s/%s", typ, c.Status, c.Reason, status, reason)
	}
	return nil
}

// TestRunConverges runs the controller against the fake client's watches:
// objects created after it started are picked up, a later change (the
// backend Service deleted) is reflected, and Run returns when its context
// is cancelled.
func TestRunConverges(t *testing.T) {
	fc := newFakeClient(t, testClass(), namespace(ns, nil))
	cl := &watchRecorder{WithWatch: fc, watched: map[string]bool{}}
	rec := &recorder{}
	c := newTestController(t, cl, rec)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	defer func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run returned %v, want nil", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("Run did not return after its context was cancelled")
		}
	}()

	// The fake client's watches start when they are called and do not
	// replay what happened since the informers' lists (an API server's
	// do): create nothing before every informer watches.
	g := gomega.NewWithT(t)
	g.SetDefaultEventuallyTimeout(20 * time.Second)
	g.SetDefaultEventuallyPollingInterval(10 * time.Millisecond)
	g.Eventually(cl.count).Should(gomega.BeNumerically(">=", len(watchedKinds())), "kinds watched")

	svc := service(ns, "svc", corev1.ServicePort{Name: "http", Port: 8080})
	for _, o := range []client.Object{gateway("gw", listener("l", 80, gwv1.HTTPProtocolType, "")), svc, httpRoute(ns, "r", t0, []gwv1.ParentReference{parentRef("gw")})} {
		if err := cl.Create(ctx, o); err != nil {
			t.Fatalf("creating %s: %v", o.GetName(), err)
		}
	}

	g.Eventually(func(g gomega.Gomega) {
		gw := &gwv1.Gateway{}
		g.Expect(cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: "gw"}, gw)).To(gomega.Succeed())
		g.Expect(conditionIs(gw.Status.Conditions, "Programmed", metav1.ConditionTrue, "Programmed")).To(gomega.Succeed(), "Gateway")
		r := &gwv1.HTTPRoute{}
		g.Expect(cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: "r"}, r)).To(gomega.Succeed())
		g.Expect(r.Status.Parents).To(gomega.HaveLen(1), "route parents")
		g.Expect(conditionIs(r.Status.Parents[0].Conditions, "Accepted", metav1.ConditionTrue, "Accepted")).To(gomega.Succeed(), "route")
		g.Expect(conditionIs(r.Status.Parents[0].Conditions, "ResolvedRefs", metav1.ConditionTrue, "ResolvedRefs")).To(gomega.Succeed(), "route")
	}).Should(gomega.Succeed(), "route accepted with resolved refs, Gateway programmed")
	if cfg := rec.last(); cfg == nil || len(cfg.Gateways) != 1 || len(cfg.Gateways[0].Listeners[0].HTTPRoutes) != 1 {
		t.Fatalf("last snapshot = %+v, want the route served", cfg)
	}

	if err := cl.Delete(ctx, svc); err != nil {
		t.Fatal(err)
	}
	g.Eventually(func(g gomega.Gomega) {
		r := &gwv1.HTTPRoute{}
		g.Expect(cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: "r"}, r)).To(gomega.Succeed())
		g.Expect(r.Status.Parents).To(gomega.HaveLen(1), "route parents")
		g.Expect(conditionIs(r.Status.Parents[0].Conditions, "ResolvedRefs", metav1.ConditionFalse, "BackendNotFound")).To(gomega.Succeed())
	}).Should(gomega.Succeed(), "route reports the missing backend")
	g.Eventually(func() []ir.HTTPBackend {
		return rec.last().Gateways[0].Listeners[0].HTTPRoutes[0].Rules[0].Backends
	}).Should(gomega.ConsistOf(gomega.HaveField("Invalid", true)), "snapshot marks the backend invalid")
}

// watchRecorder is a client that notes which kinds have been watched.
type watchRecorder struct {
	client.WithWatch
	mu      sync.Mutex
	watched map[string]bool
}

func (w *watchRecorder) Watch(ctx context.Context, list client.ObjectList, opts ...client.ListOption) (watch.Interface, error) {
	wi, err := w.WithWatch.Watch(ctx, list, opts...)
	if err == nil {
		w.mu.Lock()
		w.watched[fmt.Sprintf("%T", list)] = true
		w.mu.Unlock()
	}
	return wi, err
}

func (w *watchRecorder) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.watched)
}
