package controller

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/gatewitness/gatewitness/gateway/ir"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// reasonHostnameConflict is the Accepted=False reason of a route that lost
// the HTTPRoute/GRPCRoute hostname conflict on every listener it selects
// (GRPCRouteSpec.Hostnames). The spec names no reason for it; controllers
// may use their own.
const reasonHostnameConflict = "HostnameConflict"

// routeState is one HTTPRoute, GRPCRoute or TLSRoute as the controller
// sees it: its compiled rules, its reference problems, and its verdict per
// parent.
type routeState struct {
	obj        client.Object
	kind       gwv1.Kind // "HTTPRoute", "GRPCRoute" or "TLSRoute"
	namespace  string
	name       string
	generation int64
	created    time.Time
	parentRefs []gwv1.ParentReference
	hostnames  []gwv1.Hostname

	// unsupported, when set, rejects the route on every parent
	// (Accepted=False, UnsupportedValue).
	unsupported reason
	// unresolved, when set, is the ResolvedRefs=False reason.
	unresolved reason

	httpRules   []ir.HTTPRule
	grpcRules   []ir.GRPCRule
	tlsBackends []ir.Backend

	// parents are the route's parentRefs that are Gateways of our classes,
	// in spec order.
	parents []*parentState
}

// parentState is the verdict on one parentRef of a route.
type parentState struct {
	echo        gwv1.ParentReference // the spec's parentRef, group and kind defaulted
	gateway     *gatewayState
	attachments []*attachment
	notAccepted reason // zero when Accepted
}

// attachment is a route attached to one listener, with the hostnames it
// serves there.
type attachment struct {
	route     *routeState
	listener  *listenerState
	hostnames []string
}

func (r *routeState) key() string { return r.namespace + "/" + r.name }

// attachedRoutes counts the distinct routes attached to the listener.
func (l *listenerState) attachedRoutes() int32 {
	seen := map[*routeState]bool{}
	for _, a := range l.attachments {
		seen[a.route] = true
	}
	return int32(len(seen))
}

// attachRoute decides, for each parentRef of r that names one of our
// Gateways, which listeners r attaches to, following the ParentReference
// and Listener.AllowedRoutes docs:
//
//  1. sectionName and port narrow the candidate listeners; none left is
//     NoMatchingParent;
//  2. a candidate must be usable (Accepted, not Conflicted), list r's kind in
//     its supportedKinds and admit r's namespace; none left is
//     NotAllowedByListeners;
//  3. r's hostnames must intersect the listener's; none left is
//     NoMatchingListenerHostname.
//
// ParentRefs to other kinds, or to Gateways that are not ours, get no status
// from this controller.
func (o *objects) attachRoute(r *routeState, gateways map[types.NamespacedName]*gatewayState) {
	for _, ref := range r.parentRefs {
		if deref(ref.Group, gwv1.GroupName) != gwv1.GroupName || deref(ref.Kind, "Gateway") != "Gateway" {
			continue
		}
		ns := string(deref(ref.Namespace, gwv1.Namespace(r.namespace)))
		gs := gateways[types.NamespacedName{Namespace: ns, Name: string(ref.Name)}]
		if gs == nil {
			continue
		}
		echo := *ref.DeepCopy()
		group, kind := gwv1.Group(gwv1.GroupName), gwv1.Kind("Gateway")
		echo.Group, echo.Kind = &group, &kind
		p := &parentState{echo: echo, gateway: gs}
		r.parents = append(r.parents, p)

		if r.unsupported.isSet() {
			p.notAccepted = r.unsupported
			continue
		}
		// A Gateway rejected as a whole (not for its listeners, which the
		// steps below report on) takes no routes.
		if !gs.accepted && gs.acceptance.Reason != string(gwv1.GatewayReasonListenersNotValid) {
			p.notAccepted = reason{string(gwv1.RouteReasonNoMatchingParent),
				fmt.Sprintf("Gateway %s/%s is not accepted: %s", ns, ref.Name, gs.acceptance.Message)}
			continue
		}

		var candidates []*listenerState
		for _, l := range gs.listeners {
			if ref.SectionName != nil && *ref.SectionName != l.spec.Name {
				continue
			}
			if ref.Port != nil && *ref.Port != l.spec.Port {
				continue
			}
			candidates = append(candidates, l)
		}
		if len(candidates) == 0 {
			p.notAccepted = reason{string(gwv1.RouteReasonNoMatchingParent),
				fmt.Sprintf("Gateway %s/%s has no listener matching sectionName %q and port %d", ns, ref.Name, deref(ref.SectionName, ""), deref(ref.Port, 0))}
			continue
		}

		var allowed []*listenerState
		for _, l := range candidates {
			if l.usable() && l.allowsKind(r.kind) && o.namespaceAllowed(l, gs.gw, r.namespace) {
				allowed = append(allowed, l)
			}
		}
		if len(allowed) == 0 {
			p.notAccepted = reason{string(gwv1.RouteReasonNotAllowedByListeners),
				fmt.Sprintf("no listener of Gateway %s/%s admits a %s from namespace %s", ns, ref.Name, r.kind, r.namespace)}
			continue
		}

		for _, l := range allowed {
			hosts, ok := intersectHostnames(l.spec.Hostname, r.hostnames)
			if !ok {
				continue
			}
			a := &attachment{route: r, listener: l, hostnames: hosts}
			p.attachments = append(p.attachments, a)
			l.attachments = append(l.attachments, a)
		}
		if len(p.attachments) == 0 {
			p.notAccepted = reason{string(gwv1.RouteReasonNoMatchingListenerHostname),
				fmt.Sprintf("no hostname of the route intersects a hostname of the listeners of Gateway %s/%s", ns, ref.Name)}
		}
	}
}

// namespaceAllowed applies Listener.AllowedRoutes.Namespaces: Same (the
// default) admits routes of the Gateway's namespace, All admits every
// namespace, Selector admits namespaces whose labels match, None admits
// none. The kubernetes.io/metadata.name label, which the API server sets on
// every namespace, is assumed even when a store does not set it.
func (o *objects) namespaceAllowed(l *listenerState, gw *gwv1.Gateway, routeNS string) bool {
	from := gwv1.NamespacesFromSame
	var selector *metav1.LabelSelector
	if ar := l.spec.AllowedRoutes; ar != nil && ar.Namespaces != nil {
		from = deref(ar.Namespaces.From, gwv1.NamespacesFromSame)
		selector = ar.Namespaces.Selector
	}
	switch from {
	case gwv1.NamespacesFromAll:
		return true
	case gwv1.NamespacesFromSame:
		return routeNS == gw.Namespace
	case gwv1.NamespacesFromSelector:
		if selector == nil {
			return false
		}
		sel, err := metav1.LabelSelectorAsSelector(selector)
		if err != nil {
			return false
		}
		set := labels.Set{corev1.LabelMetadataName: routeNS}
		if ns := o.namespaces[routeNS]; ns != nil {
			for k, v := range ns.Labels {
				set[k] = v
			}
		}
		return sel.Matches(set)
	}
	return false
}

// resolveKindConflicts enforces the GRPCRouteSpec.Hostnames rule: on one
// listener, an HTTPRoute and a GRPCRoute whose hostnames intersect cannot
// both be accepted; the older route (then the first by "namespace/name")
// wins and the other is detached from that listener. A parent left with no
// listener is Accepted=False with reason HostnameConflict.
//
// The routes kept so far are indexed by kind (hostIndex), so a listener
// with n routes costs O(n log n) for the ordering and O(n) lookups, and a
// listener with routes of one kind only costs nothing.
func resolveKindConflicts(gateways []*gatewayState, routes []*routeState) {
	for _, gs := range gateways {
		for _, l := range gs.listeners {
			if !mixedKinds(l.attachments) {
				continue
			}
			ordered := slices.Clone(l.attachments)
			slices.SortStableFunc(ordered, func(a, b *attachment) int {
				if c := a.route.created.Compare(b.route.created); c != 0 {
					return c
				}
				return cmp.Compare(a.route.key(), b.route.key())
			})
			kept := map[gwv1.Kind]*hostIndex{}
			lost := map[*attachment]bool{}
			for _, a := range ordered {
				loses := false
				for kind, x := range kept {
					if kind != a.route.kind && x.overlaps(a.hostnames) {
						loses = true
						break
					}
				}
				if loses {
					lost[a] = true
					continue
				}
				if kept[a.route.kind] == nil {
					kept[a.route.kind] = &hostIndex{}
				}
				kept[a.route.kind].add(a.hostnames)
			}
			if len(lost) == 0 {
				continue
			}
			l.attachments = slices.DeleteFunc(l.attachments, func(a *attachment) bool { return lost[a] })
			for a := range lost {
				for _, p := range a.route.parents {
					p.attachments = slices.DeleteFunc(p.attachments, func(pa *attachment) bool { return pa == a })
				}
			}
		}
	}
	for _, r := range routes {
		for _, p := range r.parents {
			if !p.notAccepted.isSet() && len(p.attachments) == 0 {
				p.notAccepted = reason{reasonHostnameConflict,
					"an older route of the other kind (HTTPRoute/GRPCRoute) with intersecting hostnames is attached to the same listeners"}
			}
		}
	}
}

// mixedKinds reports whether attachments hold routes of more than one kind.
func mixedKinds(attachments []*attachment) bool {
	for _, a := range attachments {
		if a.route.kind != attachments[0].route.kind {
			return true
		}
	}
	return false
}

// parentConditions returns the Accepted and ResolvedRefs conditions of a
// route for one parent. ResolvedRefs is reported whether or not the route
// is accepted, as conformance expects.
func (r *routeState) parentConditions(p *parentState) []condition {
	accepted := condition{Type: string(gwv1.RouteConditionAccepted), Status: true,
		Reason: string(gwv1.RouteReasonAccepted), Message: "route is accepted"}
	if p.notAccepted.isSet() {
		accepted.Status = false
		accepted.Reason, accepted.Message = p.notAccepted.Reason, p.notAccepted.Message
	}
	resolved := condition{Type: string(gwv1.RouteConditionResolvedRefs), Status: true,
		Reason: string(gwv1.RouteReasonResolvedRefs), Message: "all references are resolved"}
	if r.unresolved.isSet() {
		resolved.Status = false
		resolved.Reason, resolved.Message = r.unresolved.Reason, r.unresolved.Message
	}
	return []condition{accepted, resolved}
}
