package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// TestRouteStatusesWrittenConcurrently shows that a recompute writes route
// statuses from more than one goroutine when no other client is writing,
// that every route still gets its status, and that a failed write is
// reported, in route order, without stopping the others.
func TestRouteStatusesWrittenConcurrently(t *testing.T) {
	const n = 40
	objs := routesOnOneGateway(n)
	failing := map[string]bool{"route-07": true, "route-31": true}

	// The first route write waits until a second one is in flight: with
	// one writer the recompute would wait until the test's deadline.
	var (
		mu       sync.Mutex
		inFlight int
		overlap  = make(chan struct{})
		once     sync.Once
	)
	cl := interceptor.NewClient(newFakeClient(t, objs...).(client.WithWatch), interceptor.Funcs{
		SubResourceUpdate: func(ctx context.Context, cl client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			if _, ok := obj.(*gwv1.HTTPRoute); !ok {
				return cl.SubResource(sub).Update(ctx, obj, opts...)
			}
			mu.Lock()
			inFlight++
			if inFlight >= 2 {
				once.Do(func() { close(overlap) })
			}
			mu.Unlock()
			defer func() {
				mu.Lock()
				inFlight--
				mu.Unlock()
			}()
			select {
			case <-overlap:
			case <-time.After(30 * time.Second):
				t.Error("no second route status write started while the first was in flight")
			}
			if failing[obj.GetName()] {
				return errors.New("injected failure")
			}
			return cl.SubResource(sub).Update(ctx, obj, opts...)
		},
	})
	c := newTestController(t, cl, &recorder{})

	err := c.sync(context.Background())
	if err == nil {
		t.Fatal("sync: no error, want the two injected failures")
	}
	msg := err.Error()
	i07, i31 := strings.Index(msg, "route-07"), strings.Index(msg, "route-31")
	if i07 < 0 || i31 < 0 || i07 > i31 || strings.Count(msg, "injected failure") != 2 {
		t.Errorf("sync error %q: want route-07's failure, then route-31's, and no other", msg)
	}
	for i := range n {
		name := fmt.Sprintf("route-%02d", i)
		r := getHTTPRoute(t, cl, ns, name)
		if failing[name] {
			if len(r.Status.Parents) != 0 {
				t.Errorf("%s: status written although its write failed", name)
			}
			continue
		}
		wantCondition(t, name, ourParent(t, r.Status.Parents, ns, "gw").Conditions, "Accepted", "True", "Accepted", 1)
	}
}

// TestRouteStatusesWrittenAloneWhileOthersWrite shows that while changes
// keep coming (other clients creating routes), a recompute writes route
// statuses from one goroutine and leaves the other cores to the writers.
func TestRouteStatusesWrittenAloneWhileOthersWrite(t *testing.T) {
	const n = 40
	objs := routesOnOneGateway(n)
	var (
		mu             sync.Mutex
		inFlight, most int
		writes         int
	)
	cl := interceptor.NewClient(newFakeClient(t, objs...).(client.WithWatch), interceptor.Funcs{
		SubResourceUpdate: func(ctx context.Context, cl client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			if _, ok := obj.(*gwv1.HTTPRoute); ok {
				mu.Lock()
				inFlight++
				writes++
				most = max(most, inFlight)
				mu.Unlock()
				defer func() {
					mu.Lock()
					inFlight--
					mu.Unlock()
				}()
			}
			return cl.SubResource(sub).Update(ctx, obj, opts...)
		},
	})
	c := newTestController(t, cl, &recorder{})
	// A change "arrives" for the whole of the recompute: the last poke is
	// dated an hour ahead, so the other clients never look quiet.
	c.lastPoke.Store(time.Now().Add(time.Hour).UnixNano())
	if err := c.sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if writes != n || most != 1 {
		t.Errorf("%d route status writes, at most %d at once; want %d, one at a time", writes, most, n)
	}
}

// routesOnOneGateway returns a class, a Gateway with one HTTP listener, a
// Service and n HTTPRoutes attached to the Gateway, route-00 and on.
func routesOnOneGateway(n int) []client.Object {
	objs := []client.Object{
		testClass(), namespace(ns, nil),
		gateway("gw", listener("http", 80, gwv1.HTTPProtocolType, "")),
		service(ns, "svc", corev1.ServicePort{Name: "http", Port: 8080}),
	}
	for i := range n {
		objs = append(objs, httpRoute(ns, fmt.Sprintf("route-%02d", i), t0, []gwv1.ParentReference{parentRef("gw")}, fmt.Sprintf("h%02d.example.com", i)))
	}
	return objs
}
