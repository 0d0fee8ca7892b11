package controller

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// condition is a desired status condition before it is stamped with the
// object's generation and a transition time.
type condition struct {
	Type    string
	Status  bool
	Reason  string
	Message string
}

// stampConditions turns desired conditions into metav1.Conditions for an
// object at generation, with meta.SetStatusCondition: a condition whose
// status did not change keeps its lastTransitionTime from previous, as the
// metav1.Condition docs require; new or flipped conditions get now. When
// keepOthers is true, conditions of previous whose type the controller does
// not set are kept (the API docs forbid removing conditions one is not
// responsible for); otherwise they are dropped.
func stampConditions(previous []metav1.Condition, desired []condition, generation int64, now metav1.Time, keepOthers bool) []metav1.Condition {
	set := make(map[string]bool, len(desired))
	for _, d := range desired {
		set[d.Type] = true
	}
	out := make([]metav1.Condition, 0, len(previous)+len(desired))
	for _, c := range previous {
		// One of ours without a transition time (which the API requires)
		// is written afresh, stamped now, rather than kept as it is.
		if set[c.Type] && c.LastTransitionTime.IsZero() {
			continue
		}
		if keepOthers || set[c.Type] {
			out = append(out, c)
		}
	}
	for _, d := range desired {
		status := metav1.ConditionFalse
		if d.Status {
			status = metav1.ConditionTrue
		}
		meta.SetStatusCondition(&out, metav1.Condition{
			Type:               d.Type,
			Status:             status,
			ObservedGeneration: generation,
			LastTransitionTime: now,
			Reason:             d.Reason,
			Message:            d.Message,
		})
	}
	return out
}

// writeClassStatus writes a GatewayClass's status when it differs from the
// stored one (transition times aside, which stampConditions preserves).
func (c *Controller) writeClassStatus(ctx context.Context, s *classState, now metav1.Time) error {
	gc := s.class.DeepCopy()
	conds, features := s.classStatus(c.opts.SupportedFeatures)
	gc.Status.Conditions = stampConditions(gc.Status.Conditions, conds, gc.Generation, now, true)
	gc.Status.SupportedFeatures = features
	if equality.Semantic.DeepEqual(gc.Status, s.class.Status) {
		return nil
	}
	if err := c.opts.Client.Status().Update(ctx, gc); err != nil {
		return fmt.Errorf("updating status of GatewayClass %s: %w", gc.Name, err)
	}
	c.remember(kindGatewayClass, s.class.ResourceVersion, gc)
	return nil
}

// gatewayStatus returns the desired status of a Gateway: its Accepted and
// Programmed conditions, addresses, and one ListenerStatus per listener with
// supportedKinds, attachedRoutes and the Accepted, Programmed, ResolvedRefs
// and Conflicted conditions.
func (s *gatewayState) gatewayStatus(now metav1.Time) gwv1.GatewayStatus {
	gw := s.gw
	st := gwv1.GatewayStatus{Addresses: s.addresses}
	accepted := condition{Type: string(gwv1.GatewayConditionAccepted), Status: s.accepted,
		Reason: s.acceptance.Reason, Message: s.acceptance.Message}
	programmed := condition{Type: string(gwv1.GatewayConditionProgrammed), Status: true,
		Reason: string(gwv1.GatewayReasonProgrammed), Message: "Gateway is programmed"}
	if !s.programmed {
		programmed.Status = false
		programmed.Reason, programmed.Message = s.notProgrammed.Reason, s.notProgrammed.Message
	}
	st.Conditions = stampConditions(gw.Status.Conditions, []condition{accepted, programmed}, gw.Generation, now, true)

	previous := map[gwv1.SectionName][]metav1.Condition{}
	for _, l := range gw.Status.Listeners {
		previous[l.Name] = l.Conditions
	}
	for _, l := range s.listeners {
		st.Listeners = append(st.Listeners, gwv1.ListenerStatus{
			Name:           l.spec.Name,
			SupportedKinds: l.supportedKinds,
			AttachedRoutes: l.attachedRoutes(),
			Conditions:     stampConditions(previous[l.spec.Name], s.listenerConditions(l), gw.Generation, now, true),
		})
	}
	return st
}

func (s *gatewayState) listenerConditions(l *listenerState) []condition {
	accepted := condition{Type: string(gwv1.ListenerConditionAccepted), Status: true,
		Reason: string(gwv1.ListenerReasonAccepted), Message: "listener is accepted"}
	switch {
	case !l.accepted:
		accepted.Status = false
		accepted.Reason, accepted.Message = l.notAccepted.Reason, l.notAccepted.Message
	case l.conflicted.isSet():
		accepted.Status = false
		accepted.Reason, accepted.Message = l.conflicted.Reason, l.conflicted.Message
	}

	resolved := condition{Type: string(gwv1.ListenerConditionResolvedRefs), Status: true,
		Reason: string(gwv1.ListenerReasonResolvedRefs), Message: "all references are resolved"}
	if l.unresolved.isSet() {
		resolved.Status = false
		resolved.Reason, resolved.Message = l.unresolved.Reason, l.unresolved.Message
	}

	conflicted := condition{Type: string(gwv1.ListenerConditionConflicted), Status: false,
		Reason: string(gwv1.ListenerReasonNoConflicts), Message: "listener is distinct"}
	if l.conflicted.isSet() {
		conflicted.Status = true
		conflicted.Reason, conflicted.Message = l.conflicted.Reason, l.conflicted.Message
	}

	programmed := condition{Type: string(gwv1.ListenerConditionProgrammed), Status: true,
		Reason: string(gwv1.ListenerReasonProgrammed), Message: "listener is programmed"}
	switch {
	case !l.programmable():
		programmed.Status = false
		programmed.Reason, programmed.Message = string(gwv1.ListenerReasonInvalid), "listener is not accepted or has unresolved references"
	case !s.programmed:
		programmed.Status = false
		programmed.Reason, programmed.Message = string(gwv1.ListenerReasonInvalid), s.notProgrammed.Message
	}
	return []condition{accepted, programmed, resolved, conflicted}
}

// writeGatewayStatus writes a Gateway's status when it changed.
func (c *Controller) writeGatewayStatus(ctx context.Context, s *gatewayState, now metav1.Time) error {
	gw := s.gw.DeepCopy()
	gw.Status = s.gatewayStatus(now)
	if equality.Semantic.DeepEqual(gw.Status, s.gw.Status) {
		return nil
	}
	if err := c.opts.Client.Status().Update(ctx, gw); err != nil {
		return fmt.Errorf("updating status of Gateway %s/%s: %w", gw.Namespace, gw.Name, err)
	}
	c.remember(kindGateway, s.gw.ResourceVersion, gw)
	return nil
}

// routeParents returns a route's new status.parents: the entries of other
// controllers unchanged, then one entry per parentRef that is one of our
// Gateways, in spec order. Our entries for parents that are gone or no
// longer ours are dropped, as RouteStatus.Parents requires.
func (c *Controller) routeParents(previous []gwv1.RouteParentStatus, r *routeState, now metav1.Time) []gwv1.RouteParentStatus {
	var out []gwv1.RouteParentStatus
	ours := map[string][]metav1.Condition{}
	for _, p := range previous {
		if p.ControllerName != c.opts.ControllerName {
			out = append(out, p)
			continue
		}
		ours[parentKey(p.ParentRef, r.namespace)] = p.Conditions
	}
	for _, p := range r.parents {
		out = append(out, gwv1.RouteParentStatus{
			ParentRef:      p.echo,
			ControllerName: c.opts.ControllerName,
			Conditions:     stampConditions(ours[parentKey(p.echo, r.namespace)], r.parentConditions(p), r.generation, now, false),
		})
	}
	return out
}

// routeStatusUnchanged reports, without building it, whether routeParents
// would return current as it is: the other controllers' entries first,
// then ours in the order of r.parents, each with the conditions
// parentConditions gives at r's generation. Most routes are unchanged in
// most recomputes, and building their status only to compare it was a
// third of a recompute at 10,000 routes.
func (c *Controller) routeStatusUnchanged(current []gwv1.RouteParentStatus, r *routeState) bool {
	i := 0
	for i < len(current) && current[i].ControllerName != c.opts.ControllerName {
		i++
	}
	ours := current[i:]
	if len(ours) != len(r.parents) {
		return false
	}
	for j, p := range r.parents {
		st := &ours[j]
		if st.ControllerName != c.opts.ControllerName || !equality.Semantic.DeepEqual(st.ParentRef, p.echo) {
			return false
		}
		want := r.parentConditions(p)
		if len(st.Conditions) != len(want) {
			return false
		}
		for k, d := range want {
			got := &st.Conditions[k]
			status := metav1.ConditionFalse
			if d.Status {
				status = metav1.ConditionTrue
			}
			if got.Type != d.Type || got.Status != status || got.Reason != d.Reason || got.Message != d.Message ||
				got.ObservedGeneration != r.generation || got.LastTransitionTime.IsZero() {
				return false
			}
		}
	}
	return true
}

// writeRouteStatus writes an HTTPRoute's, GRPCRoute's or TLSRoute's status
// when its parents changed. It returns without writing when nothing changed.
func (c *Controller) writeRouteStatus(ctx context.Context, r *routeState, now metav1.Time) error {
	var (
		kind    string
		current []gwv1.RouteParentStatus
	)
	switch o := r.obj.(type) {
	case *gwv1.HTTPRoute:
		kind, current = "HTTPRoute", o.Status.Parents
	case *gwv1.GRPCRoute:
		kind, current = "GRPCRoute", o.Status.Parents
	case *gwv1.TLSRoute:
		kind, current = "TLSRoute", o.Status.Parents
	default:
		return nil
	}
	if c.routeStatusUnchanged(current, r) {
		return nil
	}
	want := c.routeParents(current, r, now)
	if equality.Semantic.DeepEqual(want, current) {
		return nil
	}
	// Copy only to write: most recomputes change the status of few routes.
	var obj client.Object
	switch o := r.obj.(type) {
	case *gwv1.HTTPRoute:
		o = o.DeepCopy()
		o.Status.Parents, obj = want, o
	case *gwv1.GRPCRoute:
		o = o.DeepCopy()
		o.Status.Parents, obj = want, o
	case *gwv1.TLSRoute:
		o = o.DeepCopy()
		o.Status.Parents, obj = want, o
	}
	if err := c.opts.Client.Status().Update(ctx, obj); err != nil {
		return fmt.Errorf("updating status of %s %s/%s: %w", kind, obj.GetNamespace(), obj.GetName(), err)
	}
	c.remember(kind, r.obj.GetResourceVersion(), obj)
	return nil
}

// parentKey identifies a parentRef for matching status entries across
// recomputes, with defaults applied.
func parentKey(ref gwv1.ParentReference, routeNS string) string {
	return fmt.Sprintf("%s/%s/%s/%s/%s/%d",
		deref(ref.Group, gwv1.GroupName), deref(ref.Kind, "Gateway"),
		deref(ref.Namespace, gwv1.Namespace(routeNS)), ref.Name,
		deref(ref.SectionName, ""), deref(ref.Port, 0))
}
