package store_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatewitness/gatewitness/cluster/store"
)

// next returns the next event, failing the test if none arrives within a
// generous deadline.
func next(t *testing.T, w watch.Interface) watch.Event {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatal("watch channel closed, want an event")
		}
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no watch event within 10s")
	}
	return watch.Event{}
}

// expectClosed waits for the channel to close after draining nothing else.
func expectClosed(t *testing.T, w watch.Interface) {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if ok {
			t.Fatalf("got event %s, want the channel closed", ev.Type)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("watch channel not closed within 10s")
	}
}

func describe(ev watch.Event) string {
	o := ev.Object.(client.Object)
	return fmt.Sprintf("%s %s", ev.Type, o.GetName())
}

func TestWatchOrderAndSelectors(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	mustCreate(t, s, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "pre", Labels: map[string]string{"app": "x"}}})

	all, err := s.Watch(ctx, &corev1.ConfigMapList{})
	if err != nil {
		t.Fatal(err)
	}
	defer all.Stop()
	sel, err := s.Watch(ctx, &corev1.ConfigMapList{}, client.MatchingLabels{"app": "x"}, client.InNamespace("default"))
	if err != nil {
		t.Fatal(err)
	}
	defer sel.Stop()

	a := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "a", Labels: map[string]string{"app": "x"}}}
	mustCreate(t, s, a)
	b := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "b"}}
	mustCreate(t, s, b)
	a.Data = map[string]string{"k": "v"}
	if err := s.Update(ctx, a); err != nil {
		t.Fatal(err)
	}
	a.Labels = nil // leaves the selector
	if err := s.Update(ctx, a); err != nil {
		t.Fatal(err)
	}
	b.Labels = map[string]string{"app": "x"} // enters it
	if err := s.Update(ctx, b); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, b); err != nil {
		t.Fatal(err)
	}

	for _, want := range []string{"ADDED pre", "ADDED a", "ADDED b", "MODIFIED a", "MODIFIED a", "MODIFIED b", "DELETED b"} {
		ev := next(t, all)
		if got := describe(ev); got != want {
			t.Fatalf("all-watch event %q, want %q", got, want)
		}
		if _, ok := ev.Object.(*corev1.ConfigMap); !ok {
			t.Fatalf("event object is %T, want *corev1.ConfigMap", ev.Object)
		}
	}
	for _, want := range []string{"ADDED pre", "ADDED a", "MODIFIED a", "DELETED a", "ADDED b", "DELETED b"} {
		if got := describe(next(t, sel)); got != want {
			t.Fatalf("selector-watch event %q, want %q", got, want)
		}
	}
}

func TestWatchResumeAndUnstructured(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	mustCreate(t, s, httpRoute("default", "before"))
	list := &gatewayv1.HTTPRouteList{}
	if err := s.List(ctx, list); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, s, httpRoute("default", "after"))

	ul := &unstructured.UnstructuredList{}
	ul.SetGroupVersionKind(schema.GroupVersionKind{Group: "gateway.networking.k8s.io", Version: "v1beta1", Kind: "HTTPRouteList"})
	w, err := s.Watch(ctx, ul, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: list.ResourceVersion}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	ev := next(t, w)
	u, ok := ev.Object.(*unstructured.Unstructured)
	if !ok || ev.Type != watch.Added || u.GetName() != "after" || u.GetAPIVersion() != "gateway.networking.k8s.io/v1beta1" {
		t.Fatalf("resumed watch event = %s %T, want ADDED after in v1beta1", ev.Type, ev.Object)
	}
}

func TestWatchTooOldResourceVersion(t *testing.T) {
	s, err := store.New(store.Options{History: 4})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		mustCreate(t, s, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprint("c", i)}})
	}
	_, err = s.Watch(context.Background(), &corev1.ConfigMapList{}, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: "1"}})
	if !apierrors.IsResourceExpired(err) {
		t.Fatalf("watch from a resourceVersion older than the history error = %v, want Expired", err)
	}
}

func TestWatchStop(t *testing.T) {
	s := newStore(t)
	w, err := s.Watch(context.Background(), &corev1.ConfigMapList{}, client.InNamespace("default"))
	if err != nil {
		t.Fatal(err)
	}
	w.Stop()
	expectClosed(t, w)
	w.Stop() // a second Stop is harmless
	// The store keeps working after a watcher stops.
	mustCreate(t, s, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "x"}})

	ctx, cancel := context.WithCancel(context.Background())
	w2, err := s.Watch(ctx, &corev1.NamespaceList{})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 { // default, kube-public, kube-system
		if ev := next(t, w2); ev.Type != watch.Added {
			t.Fatalf("initial event %s, want ADDED", ev.Type)
		}
	}
	cancel()
	expectClosed(t, w2)
}

func TestWatchOverflowClosesWithError(t *testing.T) {
	s, err := store.New(store.Options{WatchBuffer: 3})
	if err != nil {
		t.Fatal(err)
	}
	w, err := s.Watch(context.Background(), &corev1.ConfigMapList{}, client.InNamespace("default"))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	// Nobody reads: the writes must not block, and the watcher is dropped.
	for i := range 10 {
		mustCreate(t, s, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprint("c", i)}})
	}
	var types []string
	for ev := range w.ResultChan() {
		types = append(types, string(ev.Type))
		if ev.Type == watch.Error {
			st := ev.Object.(*metav1.Status)
			if st.Code != 410 || !strings.Contains(st.Message, "list again") {
				t.Fatalf("error event status = %+v", st)
			}
		}
	}
	if got := strings.Join(types, ","); got != "ADDED,ADDED,ADDED,ERROR" {
		t.Fatalf("events of an overflowing watcher = %s, want three ADDED then ERROR", got)
	}
}
