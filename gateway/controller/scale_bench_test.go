package controller

import (
	"context"
	"fmt"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatewitness/gatewitness/cluster/store"
	"github.com/gatewitness/gatewitness/gateway/dataplane"
	"github.com/gatewitness/gatewitness/gateway/ir"
	"github.com/gatewitness/gatewitness/internal/gcpace"
)

// BenchmarkRoutesReady measures the control path at scale, in-process: N
// HTTPRoutes are created in the embedded cluster's store (validated and
// defaulted with the real CRDs), and the clock stops when every route is
// Accepted and ResolvedRefs at its generation and the data plane has taken
// a snapshot that serves all N. The controller and the real data plane run
// as they do in `gatewitness run`. One op is one such apply; its ns/op is the
// time from the first Create to ready. apply-s/op is the part the Creates
// took (each is validated with the CRD's OpenAPI schema and CEL rules, as
// an API server does), ready-after-apply-s/op what the control path took
// after the last one, cpu-s/op the CPU time of the whole process and
// cpu-ms/route that divided by N: the figure to compare on a shared
// machine, where the wall time follows the neighbours.
//
// The Creates are made two ways. apply=sequential makes them one after
// another from one goroutine, as one client applying one manifest does
// (upstream's applier creates a test's objects in turn). apply=workers
// makes them from createWorkers goroutines at once, as many clients do
// (the suite's parallel tests each applying their manifests, or a
// controller that generates routes with several workers): an API server
// serves such requests concurrently, and so does the store, which
// decodes, defaults and validates a write outside its lock. With two or
// more cores the Creates then overlap with each other and with the
// controller's status writes; the CPU they cost is the same.
//
// The garbage collector is paced as `gatewitness run` paces it
// (gcpace.Run: GOGC=400 unless $GOGC is set, a memory limit of half the
// machine's memory unless $GOMEMLIMIT is), so the figures are the run's;
// GOGC=100 in the environment measures Go's default.
//
//	go test -run '^$' -bench RoutesReady -benchtime 1x -timeout 60m ./gateway/controller/
func BenchmarkRoutesReady(b *testing.B) {
	defer gcpace.Run()()
	for _, n := range []int{1000, 10000} {
		for _, workers := range []int{1, createWorkers} {
			name := fmt.Sprintf("routes=%d/apply=sequential", n)
			if workers > 1 {
				name = fmt.Sprintf("routes=%d/apply=workers", n)
			}
			b.Run(name, func(b *testing.B) {
				b.StopTimer()
				var applied, lag, cpu time.Duration
				for range b.N {
					a, l, c := routesReady(b, n, workers)
					applied += a
					lag += l
					cpu += c
				}
				b.ReportMetric(applied.Seconds()/float64(b.N), "apply-s/op")
				b.ReportMetric(lag.Seconds()/float64(b.N), "ready-after-apply-s/op")
				b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
				b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N*n), "cpu-ms/route")
			})
		}
	}
}

// createWorkers is how many goroutines create the routes in
// apply=workers.
const createWorkers = 4

// routesReady runs one apply of n routes, created by workers goroutines,
// with the timer stopped around everything but the apply and the wait. It
// returns how long the Creates took, how long after the last Create every
// route was ready, and the CPU time the process used from the first
// Create to ready.
func routesReady(b *testing.B, n, workers int) (applied, lag, cpu time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	st, err := store.New(store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	port := int32(8080)
	for _, o := range []client.Object{
		testClass(), namespace(ns, nil),
		gateway("gw", listener("http", 80, gwv1.HTTPProtocolType, "")),
		service(ns, "svc", corev1.ServicePort{Name: "http", Port: port}),
		endpointSlice(ns, "svc-1", "svc", "http", port, endpoint("127.0.0.1", nil)),
	} {
		o.SetGeneration(0)
		if err := st.Create(ctx, o); err != nil {
			b.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}

	dp := dataplane.New(dataplane.Options{})
	defer dp.Close()
	var served atomic.Int64 // HTTPRoutes in the last snapshot the data plane took
	c, err := New(Options{
		Client:         st,
		ControllerName: testControllerName,
		Addresses:      loopbackAddresses,
		Apply: func(cfg *ir.Config) error {
			if err := dp.Apply(cfg); err != nil {
				return err
			}
			var routes int
			for _, g := range cfg.Gateways {
				for _, l := range g.Listeners {
					routes += len(l.HTTPRoutes)
				}
			}
			served.Store(int64(routes))
			return nil
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Run(runCtx) }()
	defer func() {
		stop()
		<-done
	}()
	waitGatewayProgrammed(ctx, b, st)

	routes := make([]*gwv1.HTTPRoute, n)
	for i := range routes {
		r := httpRoute(ns, fmt.Sprintf("route-%05d", i), time.Time{}, []gwv1.ParentReference{parentRef("gw")}, fmt.Sprintf("host-%05d.example.com", i))
		r.SetGeneration(0)
		routes[i] = r
	}

	cpu0 := processCPU(b)
	start := time.Now()
	b.StartTimer()
	var next atomic.Int64 // index of the next route to create
	errs := make(chan error, workers)
	for range workers {
		go func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(routes) {
					errs <- nil
					return
				}
				if err := st.Create(ctx, routes[i]); err != nil {
					errs <- fmt.Errorf("creating HTTPRoute %s: %w", routes[i].Name, err)
					return
				}
			}
		}()
	}
	for range workers {
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
	}
	applied = time.Since(start)
	waitRoutesReady(ctx, b, st, n, &served)
	b.StopTimer()
	return applied, time.Since(start) - applied, processCPU(b) - cpu0
}

// processCPU returns the user and system CPU time the process has used.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// waitGatewayProgrammed polls until the Gateway "gw" is Programmed.
func waitGatewayProgrammed(ctx context.Context, b *testing.B, st *store.Store) {
	b.Helper()
	for {
		gw := &gwv1.Gateway{}
		if err := st.Get(ctx, client.ObjectKey{Namespace: ns, Name: "gw"}, gw); err != nil {
			b.Fatal(err)
		}
		if c := findCondition(gw.Status.Conditions, "Programmed"); c != nil && c.Status == metav1.ConditionTrue {
			return
		}
		select {
		case <-ctx.Done():
			b.Fatalf("Gateway not Programmed: %v", ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// waitRoutesReady follows the HTTPRoutes through a watch (re-listing when
// the store closes it for falling behind) until all n are Accepted and
// ResolvedRefs at their generation and the data plane serves n routes.
func waitRoutesReady(ctx context.Context, b *testing.B, st *store.Store, n int, served *atomic.Int64) {
	b.Helper()
	ready := map[string]bool{}
	note := func(r *gwv1.HTTPRoute) {
		ready[r.Name] = routeReady(r)
	}
	count := func() int {
		k := 0
		for _, ok := range ready {
			if ok {
				k++
			}
		}
		return k
	}
	for {
		var list gwv1.HTTPRouteList
		if err := st.List(ctx, &list); err != nil {
			b.Fatal(err)
		}
		for i := range list.Items {
			note(&list.Items[i])
		}
		w, err := st.Watch(ctx, &gwv1.HTTPRouteList{}, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: list.ResourceVersion}})
		if err != nil {
			b.Fatal(err)
		}
		tick := time.NewTicker(5 * time.Millisecond)
		k := count()
	events:
		for {
			if k == n && served.Load() == int64(n) {
				tick.Stop()
				w.Stop()
				return
			}
			select {
			case <-ctx.Done():
				b.Fatalf("%d of %d routes ready, data plane serves %d: %v", count(), n, served.Load(), ctx.Err())
			case <-tick.C: // the data plane's count may be what is missing
			case ev, ok := <-w.ResultChan():
				if !ok || ev.Type == watch.Error {
					break events
				}
				if r, ok := ev.Object.(*gwv1.HTTPRoute); ok && ev.Type != watch.Deleted {
					was := ready[r.Name]
					note(r)
					switch now := ready[r.Name]; {
					case now && !was:
						k++
					case was && !now:
						k--
					}
				}
			}
		}
		tick.Stop()
		w.Stop()
	}
}

// routeReady reports whether r's parent of ours has Accepted and
// ResolvedRefs True at r's generation.
func routeReady(r *gwv1.HTTPRoute) bool {
	for _, p := range r.Status.Parents {
		if p.ControllerName != testControllerName {
			continue
		}
		for _, typ := range []string{"Accepted", "ResolvedRefs"} {
			c := findCondition(p.Conditions, typ)
			if c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != r.Generation {
				return false
			}
		}
		return true
	}
	return false
}
