package tests

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// endpointSlice is an EndpointSlice of service in infraNamespace with one
// endpoint, ready or not.
func endpointSlice(service string, ready bool) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: infraNamespace, Name: service + "-abcde",
			Labels: map[string]string{discoveryv1.LabelServiceName: service}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
	}
}

// TestOwnGatewayWaitsForReadyEndpoints: a test's own Gateway waits until
// every backend has a ready endpoint, not only an EndpointSlice, and a
// backend that never gets one is named.
func TestOwnGatewayWaitsForReadyEndpoints(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := discoveryv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	// The endpoint of "b" turns ready at the third list of its slices.
	var lists atomic.Int64
	base := fake.NewClientBuilder().WithScheme(scheme).
		WithObjects(endpointSlice("a", true), endpointSlice("b", false)).Build()
	c := interceptor.NewClient(base, interceptor.Funcs{
		List: func(ctx context.Context, cl client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			var lo client.ListOptions
			lo.ApplyOptions(opts)
			if lo.LabelSelector.String() == discoveryv1.LabelServiceName+"=b" && lists.Add(1) == 3 {
				sl := endpointSlice("b", true)
				if err := cl.Patch(ctx, sl, client.Merge); err != nil {
					t.Errorf("making b's endpoint ready: %v", err)
				}
			}
			return cl.List(ctx, list, opts...)
		},
	})
	if err := awaitReadyEndpoints(c, 5*time.Second, time.Millisecond, []string{"a", "b"}); err != nil {
		t.Fatal(err)
	}
	if n := lists.Load(); n < 3 {
		t.Errorf("returned after %d lists of b's slices, before its endpoint was ready (the third)", n)
	}

	err := awaitReadyEndpoints(c, 20*time.Millisecond, time.Millisecond, []string{"a", "none"})
	if err == nil || !strings.Contains(err.Error(), "none (no ready endpoint)") || strings.Contains(err.Error(), "a (") {
		t.Errorf("a backend with no EndpointSlice: %v; want an error naming it alone", err)
	}
}
