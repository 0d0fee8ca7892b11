package controller

// GRPCRoute timeouts (GEP-3139). No Gateway API release has
// spec.rules[].timeouts on GRPCRoute, so gwv1.GRPCRoute cannot carry it:
// GRPCRoutes are listed as unstructured objects and decoded twice, into the
// upstream type and into gateway/apis' partial view that keeps the
// extension. One list serves both, so the two always describe the same
// version of each object.

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatecheck/gatecheck/gateway/apis"
	"github.com/gatecheck/gatecheck/gateway/dataplane"
)

// listGRPCRoutes lists every GRPCRoute and returns the typed objects and,
// by namespace/name, the extension's view of each. A client that does not
// serve GRPCRoutes yields none.
func listGRPCRoutes(ctx context.Context, c client.Client) ([]gwv1.GRPCRoute, map[types.NamespacedName]*apis.GRPCRoute, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gwv1.SchemeGroupVersion.WithKind("GRPCRouteList"))
	if err := c.List(ctx, list); err != nil {
		if isUnknownKind(err) {
			return nil, nil, nil
		}
		return nil, nil, fmt.Errorf("listing GRPCRoutes: %w", err)
	}
	routes := make([]gwv1.GRPCRoute, len(list.Items))
	ext := make(map[types.NamespacedName]*apis.GRPCRoute, len(list.Items))
	for i := range list.Items {
		u := &list.Items[i]
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &routes[i]); err != nil {
			return nil, nil, fmt.Errorf("decoding GRPCRoute %s/%s: %w", u.GetNamespace(), u.GetName(), err)
		}
		view, err := apis.DecodeGRPCRoute(u.Object)
		if err != nil {
			return nil, nil, fmt.Errorf("GRPCRoute %s/%s: %w", u.GetNamespace(), u.GetName(), err)
		}
		ext[types.NamespacedName{Namespace: u.GetNamespace(), Name: u.GetName()}] = view
	}
	return routes, ext, nil
}

// grpcTimeouts fills the GEP-3139 fields of rule i of a GRPCRoute from its
// extension view (nil: none). A value the overlay CRD would have rejected
// (possible only with a store that does not validate) rejects the route as
// UnsupportedValue, with a message naming the field.
func (c *routeCompiler) grpcTimeouts(dr *dataplane.GRPCRule, ext *apis.GRPCRoute, i int) {
	if ext == nil || i >= len(ext.Spec.Rules) {
		return
	}
	res, err := ext.Spec.Rules[i].Timeouts.Resolve(fmt.Sprintf("spec.rules[%d].timeouts", i))
	if err != nil {
		if !c.unsupport.isSet() {
			c.unsupport = reason{string(gwv1.RouteReasonUnsupportedValue), err.Error()}
		}
		return
	}
	dr.MaxStreamDuration = res.MaxStreamDuration
	dr.StrictDeny = res.StrictDeny
}
