package store_test

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// BenchmarkCreateGetHTTPRoute measures one validated, defaulted HTTPRoute
// Create followed by a typed Get.
func BenchmarkCreateGetHTTPRoute(b *testing.B) {
	s := newStore(b)
	ctx := context.Background()
	got := &gatewayv1.HTTPRoute{}
	b.ReportAllocs()
	defer reportCPU(b)()
	i := 0
	for b.Loop() {
		r := httpRoute("default", fmt.Sprint("r", i))
		i++
		if err := s.Create(ctx, r); err != nil {
			b.Fatal(err)
		}
		if err := s.Get(ctx, client.ObjectKeyFromObject(r), got); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkNew measures creating a store once the CRDs are compiled (the
// compilation is shared by every store of the process).
func BenchmarkNew(b *testing.B) {
	newStore(b)
	b.ReportAllocs()
	for b.Loop() {
		newStore(b)
	}
}

// BenchmarkStatusUpdateHTTPRoute measures one write of an HTTPRoute's
// status subresource (a controller accepting the route), with a typed Get
// of the route before it.
func BenchmarkStatusUpdateHTTPRoute(b *testing.B) {
	s := newStore(b)
	ctx := context.Background()
	r := httpRoute("default", "r")
	if err := s.Create(ctx, r); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	defer reportCPU(b)()
	i := 0
	for b.Loop() {
		if err := s.Get(ctx, client.ObjectKeyFromObject(r), r); err != nil {
			b.Fatal(err)
		}
		i++
		r.Status.Parents = []gatewayv1.RouteParentStatus{{
			ParentRef:      gatewayv1.ParentReference{Name: "gw"},
			ControllerName: "example.com/gateway",
			Conditions: []metav1.Condition{{
				Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted", ObservedGeneration: 1,
				Message: fmt.Sprint("write ", i), LastTransitionTime: metav1.Now(),
			}},
		}}
		if err := s.Status().Update(ctx, r); err != nil {
			b.Fatal(err)
		}
	}
}

// reportCPU starts counting the process's CPU time; the function it
// returns reports it per op as cpu-us/op, which a loaded machine disturbs
// far less than ns/op.
func reportCPU(b *testing.B) func() {
	start := processCPU(b)
	return func() {
		b.ReportMetric(float64((processCPU(b)-start).Microseconds())/float64(b.N), "cpu-us/op")
	}
}

// processCPU returns the user and system CPU time the process has used.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
