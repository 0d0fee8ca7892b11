package controller

import (
	"fmt"

	"github.com/gatewitness/gatewitness/gateway/ir"
	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// knownHTTPFilters are the HTTPRoute filter types of the API. A filter of
// any other type rejects the route (Accepted=False, UnsupportedValue).
var knownHTTPFilters = map[gwv1.HTTPRouteFilterType]bool{
	gwv1.HTTPRouteFilterRequestHeaderModifier:  true,
	gwv1.HTTPRouteFilterResponseHeaderModifier: true,
	gwv1.HTTPRouteFilterRequestRedirect:        true,
	gwv1.HTTPRouteFilterURLRewrite:             true,
	gwv1.HTTPRouteFilterRequestMirror:          true,
	gwv1.HTTPRouteFilterCORS:                   true,
	gwv1.HTTPRouteFilterExternalAuth:           true,
	gwv1.HTTPRouteFilterExtensionRef:           true,
}

// knownPathTypes are the HTTPPathMatch types of the API.
var knownPathTypes = map[gwv1.PathMatchType]bool{
	gwv1.PathMatchExact:             true,
	gwv1.PathMatchPathPrefix:        true,
	gwv1.PathMatchRegularExpression: true,
}

// routeCompiler accumulates the first reference problem and the first
// unsupported value found while compiling one route.
type routeCompiler struct {
	o          *objects
	kind       string
	namespace  string
	unresolved reason
	unsupport  reason
}

func (c *routeCompiler) backend(ref gwv1.BackendObjectReference, weight *int32) ir.Backend {
	b, err := c.o.resolveBackend(c.kind, c.namespace, ref, deref(weight, 1))
	if err != nil && !c.unresolved.isSet() {
		c.unresolved = reason{err.Reason, err.Message}
	}
	return b
}

// knownGRPCFilters are the GRPCRoute filter types of the API; as for
// HTTPRoute, any other type rejects the route.
var knownGRPCFilters = map[gwv1.GRPCRouteFilterType]bool{
	gwv1.GRPCRouteFilterRequestHeaderModifier:  true,
	gwv1.GRPCRouteFilterResponseHeaderModifier: true,
	gwv1.GRPCRouteFilterRequestMirror:          true,
	gwv1.GRPCRouteFilterExtensionRef:           true,
}

// admitFilter decides what becomes of one route filter, of either route
// type. A type the API does not know is left out and makes the route
// unsupported (Accepted=False, UnsupportedValue). An ExtensionRef is left
// out too, and servable is false: the reference gateway has no extension
// filters, so such a reference never resolves (ResolvedRefs=False,
// InvalidKind) and, as the API requires, the rule must not be served
// without it: the caller answers its requests with an error. Every other
// filter is kept.
func (c *routeCompiler) admitFilter(typ string, known, extensionRef bool, ref *gwv1.LocalObjectReference) (keep, servable bool) {
	switch {
	case !known:
		if !c.unsupport.isSet() {
			c.unsupport = reason{string(gwv1.RouteReasonUnsupportedValue),
				fmt.Sprintf("filter type %q is not supported", typ)}
		}
		return false, true
	case extensionRef:
		if !c.unresolved.isSet() {
			name := "<nil>"
			if ref != nil {
				name = fmt.Sprintf("%s/%s %s", ref.Group, ref.Kind, ref.Name)
			}
			c.unresolved = reason{string(gwv1.RouteReasonInvalidKind),
				fmt.Sprintf("extensionRef %s is not supported: the reference gateway has no extension filters", name)}
		}
		return false, false
	}
	return true, true
}

// mirrorBackend resolves the backend of a RequestMirror filter; nil when
// the filter has no requestMirror (the data plane reports that).
func (c *routeCompiler) mirrorBackend(rm *gwv1.HTTPRequestMirrorFilter) *ir.Backend {
	if rm == nil {
		return nil
	}
	m := c.backend(rm.BackendRef, nil)
	return &m
}

// httpFilters compiles an HTTPRoute's filters (admitFilter), resolving the
// backend of each RequestMirror. ok is false when the rule must not be
// served.
func (c *routeCompiler) httpFilters(filters []gwv1.HTTPRouteFilter) (out []ir.HTTPFilter, ok bool) {
	ok = true
	for _, f := range filters {
		keep, servable := c.admitFilter(string(f.Type), knownHTTPFilters[f.Type], f.Type == gwv1.HTTPRouteFilterExtensionRef, f.ExtensionRef)
		ok = ok && servable
		if !keep {
			continue
		}
		df := ir.HTTPFilter{HTTPRouteFilter: *f.DeepCopy()}
		if f.Type == gwv1.HTTPRouteFilterRequestMirror {
			df.Mirror = c.mirrorBackend(f.RequestMirror)
		}
		out = append(out, df)
	}
	return out, ok
}

// grpcFilters compiles a GRPCRoute's filters as httpFilters does HTTPRoute
// ones; they stay GRPCRoute filters all the way to the data plane.
func (c *routeCompiler) grpcFilters(filters []gwv1.GRPCRouteFilter) (out []ir.GRPCFilter, ok bool) {
	ok = true
	for _, f := range filters {
		keep, servable := c.admitFilter(string(f.Type), knownGRPCFilters[f.Type], f.Type == gwv1.GRPCRouteFilterExtensionRef, f.ExtensionRef)
		ok = ok && servable
		if !keep {
			continue
		}
		df := ir.GRPCFilter{GRPCRouteFilter: *f.DeepCopy()}
		if f.Type == gwv1.GRPCRouteFilterRequestMirror {
			df.Mirror = c.mirrorBackend(f.RequestMirror)
		}
		out = append(out, df)
	}
	return out, ok
}

// invalidRuleBackend is what a rule that must not be served forwards to:
// one invalid backend, so every request gets an error.
func invalidRuleBackend(why string) ir.Backend {
	return ir.Backend{Name: why, Weight: 1, Invalid: true}
}

// compileHTTPRoute compiles an HTTPRoute's rules with the API's defaults
// applied (so that a store without CRD defaulting behaves like an API
// server): a rule without matches matches prefix "/", a match without a
// path matches prefix "/", path, header and query matches default to
// PathPrefix/Exact/Exact, a backendRef without weight weighs 1.
func (o *objects) compileHTTPRoute(r *gwv1.HTTPRoute) (rules []ir.HTTPRule, unresolved, unsupported reason) {
	c := &routeCompiler{o: o, kind: "HTTPRoute", namespace: r.Namespace}
	for _, rule := range r.Spec.Rules {
		dr := ir.HTTPRule{
			Name:     string(deref(rule.Name, "")),
			Timeouts: rule.Timeouts.DeepCopy(),
			Retry:    rule.Retry.DeepCopy(),
		}
		for _, m := range rule.Matches {
			dm := defaultHTTPMatch(m)
			if !knownPathTypes[*dm.Path.Type] && !c.unsupport.isSet() {
				c.unsupport = reason{string(gwv1.RouteReasonUnsupportedValue),
					fmt.Sprintf("path match type %q is not supported; supported: Exact, PathPrefix, RegularExpression", *dm.Path.Type)}
			}
			dr.Matches = append(dr.Matches, dm)
		}
		if len(dr.Matches) == 0 {
			dr.Matches = []gwv1.HTTPRouteMatch{defaultHTTPMatch(gwv1.HTTPRouteMatch{})}
		}
		var ok bool
		dr.Filters, ok = c.httpFilters(rule.Filters)
		for _, br := range rule.BackendRefs {
			b := ir.HTTPBackend{Backend: c.backend(br.BackendObjectReference, br.Weight)}
			var bok bool
			b.Filters, bok = c.httpFilters(br.Filters)
			if !bok {
				b.Invalid = true
			}
			dr.Backends = append(dr.Backends, b)
		}
		if !ok {
			dr.Filters = nil
			dr.Backends = []ir.HTTPBackend{{Backend: invalidRuleBackend("unresolved extensionRef filter")}}
		}
		rules = append(rules, dr)
	}
	return rules, c.unresolved, c.unsupport
}

// compileGRPCRoute compiles a GRPCRoute's rules with the API's defaults
// applied: method and header matches default to Exact, a backendRef
// without weight weighs 1. A rule without matches matches every request.
func (o *objects) compileGRPCRoute(r *gwv1.GRPCRoute) (rules []ir.GRPCRule, unresolved, unsupported reason) {
	c := &routeCompiler{o: o, kind: "GRPCRoute", namespace: r.Namespace}
	ext := o.grpcExt[types.NamespacedName{Namespace: r.Namespace, Name: r.Name}]
	for i, rule := range r.Spec.Rules {
		dr := ir.GRPCRule{Name: string(deref(rule.Name, ""))}
		c.grpcTimeouts(&dr, ext, i)
		for _, m := range rule.Matches {
			dr.Matches = append(dr.Matches, defaultGRPCMatch(m))
		}
		var ok bool
		dr.Filters, ok = c.grpcFilters(rule.Filters)
		for _, br := range rule.BackendRefs {
			b := ir.GRPCBackend{Backend: c.backend(br.BackendObjectReference, br.Weight)}
			var bok bool
			b.Filters, bok = c.grpcFilters(br.Filters)
			if !bok {
				b.Invalid = true
			}
			dr.Backends = append(dr.Backends, b)
		}
		if !ok {
			dr.Filters = nil
			dr.Backends = []ir.GRPCBackend{{Backend: invalidRuleBackend("unresolved extensionRef filter")}}
		}
		rules = append(rules, dr)
	}
	return rules, c.unresolved, c.unsupport
}

// compileTLSRoute resolves the backends of a TLSRoute's rules (a v1
// TLSRoute has exactly one; the backends of any further rules a store
// without validation let through are served together).
func (o *objects) compileTLSRoute(r *gwv1.TLSRoute) (backends []ir.Backend, unresolved reason) {
	c := &routeCompiler{o: o, kind: "TLSRoute", namespace: r.Namespace}
	for _, rule := range r.Spec.Rules {
		for _, br := range rule.BackendRefs {
			backends = append(backends, c.backend(br.BackendObjectReference, br.Weight))
		}
	}
	return backends, c.unresolved
}

func defaultHTTPMatch(m gwv1.HTTPRouteMatch) gwv1.HTTPRouteMatch {
	m = *m.DeepCopy()
	if m.Path == nil {
		m.Path = &gwv1.HTTPPathMatch{}
	}
	if m.Path.Type == nil {
		t := gwv1.PathMatchPathPrefix
		m.Path.Type = &t
	}
	if m.Path.Value == nil {
		v := "/"
		m.Path.Value = &v
	}
	for i := range m.Headers {
		if m.Headers[i].Type == nil {
			t := gwv1.HeaderMatchExact
			m.Headers[i].Type = &t
		}
	}
	for i := range m.QueryParams {
		if m.QueryParams[i].Type == nil {
			t := gwv1.QueryParamMatchExact
			m.QueryParams[i].Type = &t
		}
	}
	return m
}

func defaultGRPCMatch(m gwv1.GRPCRouteMatch) gwv1.GRPCRouteMatch {
	m = *m.DeepCopy()
	if m.Method != nil && m.Method.Type == nil {
		t := gwv1.GRPCMethodMatchExact
		m.Method.Type = &t
	}
	for i := range m.Headers {
		if m.Headers[i].Type == nil {
			t := gwv1.GRPCHeaderMatchExact
			m.Headers[i].Type = &t
		}
	}
	return m
}

// compileConfig builds the data plane snapshot: every Gateway that serves
// (accepted, addressed, with a programmable listener), each with its
// programmable listeners, their certificates and the routes attached to
// them with the hostnames they serve there. Routes are listed in
// attachment order; precedence among them is the data plane's job.
func compileConfig(gateways []*gatewayState) *ir.Config {
	cfg := &ir.Config{}
	for _, gs := range gateways {
		if !gs.serves() {
			continue
		}
		g := ir.Gateway{Namespace: gs.gw.Namespace, Name: gs.gw.Name, Timeouts: gs.timeouts}
		for _, l := range gs.listeners {
			if !l.programmable() {
				continue
			}
			dl := ir.Listener{
				Name:         string(l.spec.Name),
				Port:         int32(l.spec.Port),
				Protocol:     l.spec.Protocol,
				Hostname:     string(deref(l.spec.Hostname, "")),
				Certificates: l.certificates,
			}
			seen := map[*routeState]bool{}
			for _, a := range l.attachments {
				// A route whose parentRefs select the listener twice is served once.
				if seen[a.route] {
					continue
				}
				seen[a.route] = true
				meta := ir.RouteMeta{
					Namespace: a.route.namespace,
					Name:      a.route.name,
					Created:   a.route.created,
					Hostnames: a.hostnames,
				}
				switch a.route.kind {
				case "HTTPRoute":
					dl.HTTPRoutes = append(dl.HTTPRoutes, ir.HTTPRoute{RouteMeta: meta, Rules: a.route.httpRules})
				case "GRPCRoute":
					dl.GRPCRoutes = append(dl.GRPCRoutes, ir.GRPCRoute{RouteMeta: meta, Rules: a.route.grpcRules})
				case "TLSRoute":
					dl.TLSRoutes = append(dl.TLSRoutes, ir.TLSRoute{RouteMeta: meta, Backends: a.route.tlsBackends})
				}
			}
			g.Listeners = append(g.Listeners, dl)
		}
		cfg.Gateways = append(cfg.Gateways, g)
	}
	return cfg
}
