package runner

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatewitness/gatewitness/internal/project"
	"github.com/gatewitness/gatewitness/reports"
)

// snapshotTimeout bounds the reads of one snapshot.
const snapshotTimeout = 10 * time.Second

// maxStateMessage bounds a condition's message in a snapshot.
const maxStateMessage = 300

// snapshotNamespace reports whether a namespace is one the suites use:
// upstream's (gateway-conformance-*) or gatewitness's (gatewitness-*).
func snapshotNamespace(ns string) bool {
	return strings.HasPrefix(ns, "gateway-conformance") || strings.HasPrefix(ns, project.Name+"-")
}

// snapshot reads, through c, what a failed test leaves for a reader to
// understand it: the conditions of the Gateways, HTTPRoutes and GRPCRoutes
// and the endpoints of the EndpointSlices in the suites' namespaces,
// Gateways first, at most reports.MaxStateObjects objects. A kind that
// cannot be read (not served) is left out; the error says which.
func snapshot(ctx context.Context, c client.Client) ([]reports.ObjectState, error) {
	ctx, cancel := context.WithTimeout(ctx, snapshotTimeout)
	defer cancel()
	var out []reports.ObjectState
	var errs []string
	add := func(o reports.ObjectState) {
		if snapshotNamespace(o.Namespace) && len(out) < reports.MaxStateObjects {
			out = append(out, o)
		}
	}
	var gws gwv1.GatewayList
	if err := c.List(ctx, &gws); err != nil {
		errs = append(errs, "Gateways: "+err.Error())
	}
	for _, g := range gws.Items {
		o := reports.ObjectState{Kind: "Gateway", Namespace: g.Namespace, Name: g.Name, Generation: g.Generation,
			Conditions: conditions("", g.Status.Conditions)}
		for _, l := range g.Status.Listeners {
			o.Conditions = append(o.Conditions, conditions("listener "+string(l.Name), l.Conditions)...)
		}
		add(o)
	}
	var hrs gwv1.HTTPRouteList
	if err := c.List(ctx, &hrs); err != nil {
		errs = append(errs, "HTTPRoutes: "+err.Error())
	}
	for _, r := range hrs.Items {
		add(routeState("HTTPRoute", r.ObjectMeta, r.Status.RouteStatus))
	}
	var grs gwv1.GRPCRouteList
	if err := c.List(ctx, &grs); err != nil {
		errs = append(errs, "GRPCRoutes: "+err.Error())
	}
	for _, r := range grs.Items {
		add(routeState("GRPCRoute", r.ObjectMeta, r.Status.RouteStatus))
	}
	var eps discoveryv1.EndpointSliceList
	if err := c.List(ctx, &eps); err != nil {
		errs = append(errs, "EndpointSlices: "+err.Error())
	}
	for _, s := range eps.Items {
		o := reports.ObjectState{Kind: "EndpointSlice", Namespace: s.Namespace, Name: s.Name, Generation: s.Generation,
			Service: s.Labels[discoveryv1.LabelServiceName]}
		for _, e := range s.Endpoints {
			ready := "not ready"
			if e.Conditions.Ready != nil && *e.Conditions.Ready {
				ready = "ready"
			}
			for _, a := range e.Addresses {
				for _, p := range s.Ports {
					port := "?"
					if p.Port != nil {
						port = fmt.Sprint(*p.Port)
					}
					o.Endpoints = append(o.Endpoints, a+":"+port+" "+ready)
				}
			}
		}
		add(o)
	}
	order := map[string]int{"Gateway": 0, "HTTPRoute": 1, "GRPCRoute": 1, "EndpointSlice": 2}
	slices.SortStableFunc(out, func(a, b reports.ObjectState) int {
		if d := order[a.Kind] - order[b.Kind]; d != 0 {
			return d
		}
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	if len(errs) > 0 {
		return out, fmt.Errorf("reading the state at the failure: %s", strings.Join(errs, "; "))
	}
	return out, nil
}

func routeState(kind string, m metav1.ObjectMeta, st gwv1.RouteStatus) reports.ObjectState {
	o := reports.ObjectState{Kind: kind, Namespace: m.Namespace, Name: m.Name, Generation: m.Generation}
	for _, p := range st.Parents {
		ns := m.Namespace
		if p.ParentRef.Namespace != nil {
			ns = string(*p.ParentRef.Namespace)
		}
		scope := "parent " + ns + "/" + string(p.ParentRef.Name)
		if p.ParentRef.SectionName != nil {
			scope += "/" + string(*p.ParentRef.SectionName)
		}
		o.Conditions = append(o.Conditions, conditions(scope, p.Conditions)...)
	}
	return o
}

func conditions(scope string, cs []metav1.Condition) []reports.StateCondition {
	var out []reports.StateCondition
	for _, c := range cs {
		msg := c.Message
		if len(msg) > maxStateMessage {
			msg = msg[:maxStateMessage] + "…"
		}
		out = append(out, reports.StateCondition{Scope: scope, Type: c.Type, Status: string(c.Status), Reason: c.Reason,
			Message: msg, ObservedGeneration: c.ObservedGeneration})
	}
	return out
}
