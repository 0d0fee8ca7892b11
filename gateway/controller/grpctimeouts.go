package controller

// GRPCRoute timeouts (GEP-3139). No Gateway API release has
// spec.rules[].timeouts on GRPCRoute, so gwv1.GRPCRoute cannot carry it:
// GRPCRoutes are read as unstructured objects and decoded twice, into the
// upstream type and into gateway/grpcroutetimeouts's partial view that keeps the
// extension. One object serves both, so the two always describe the same
// version of it.

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatewitness/gatewitness/gateway/grpcroutetimeouts"
	"github.com/gatewitness/gatewitness/gateway/ir"
)

// decodedGRPCRoute is one version of a GRPCRoute decoded both ways.
type decodedGRPCRoute struct {
	rv    string
	route *gwv1.GRPCRoute
	ext   *grpcroutetimeouts.GRPCRoute
}

// decodeGRPCRoute decodes an unstructured GRPCRoute into the upstream type
// and the extension's view, or returns the last decoding of the same
// resourceVersion.
func (c *Controller) decodeGRPCRoute(u *unstructured.Unstructured) (decodedGRPCRoute, error) {
	if d, ok := c.grpcMemo[u.GetUID()]; ok && d.rv == u.GetResourceVersion() {
		return d, nil
	}
	d := decodedGRPCRoute{rv: u.GetResourceVersion(), route: &gwv1.GRPCRoute{}}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, d.route); err != nil {
		return d, fmt.Errorf("decoding GRPCRoute %s/%s: %w", u.GetNamespace(), u.GetName(), err)
	}
	view, err := grpcroutetimeouts.DecodeGRPCRoute(u.Object)
	if err != nil {
		return d, fmt.Errorf("GRPCRoute %s/%s: %w", u.GetNamespace(), u.GetName(), err)
	}
	d.ext = view
	return d, nil
}

// grpcTimeouts fills the GEP-3139 fields of rule i of a GRPCRoute from its
// extension view (nil: none). A value the overlay CRD would have rejected
// (possible only with a store that does not validate) rejects the route as
// UnsupportedValue, with a message naming the field.
func (c *routeCompiler) grpcTimeouts(dr *ir.GRPCRule, ext *grpcroutetimeouts.GRPCRoute, i int) {
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
