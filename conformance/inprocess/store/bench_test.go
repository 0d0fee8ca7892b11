package store_test

import (
	"context"
	"fmt"
	"testing"

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
