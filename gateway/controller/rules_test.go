package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"

	"github.com/gatewitness/gatewitness/gateway/ir"
)

const ns = "ns"

var t0 = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

func namespace(name string, labels map[string]string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

func listener(name string, port int32, proto gwv1.ProtocolType, host string) gwv1.Listener {
	l := gwv1.Listener{Name: gwv1.SectionName(name), Port: gwv1.PortNumber(port), Protocol: proto}
	if host != "" {
		h := gwv1.Hostname(host)
		l.Hostname = &h
	}
	return l
}

func fromNamespaces(l gwv1.Listener, from gwv1.FromNamespaces, sel map[string]string) gwv1.Listener {
	l.AllowedRoutes = &gwv1.AllowedRoutes{Namespaces: &gwv1.RouteNamespaces{From: &from}}
	if sel != nil {
		l.AllowedRoutes.Namespaces.Selector = &metav1.LabelSelector{MatchLabels: sel}
	}
	return l
}

func gateway(name string, listeners ...gwv1.Listener) *gwv1.Gateway {
	return &gwv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Generation: 1},
		Spec:       gwv1.GatewaySpec{GatewayClassName: testClassName, Listeners: listeners},
	}
}

func parentRef(gw string) gwv1.ParentReference {
	n := gwv1.Namespace(ns)
	return gwv1.ParentReference{Name: gwv1.ObjectName(gw), Namespace: &n}
}

func backendRef(name string, port int32) gwv1.HTTPBackendRef {
	p := gwv1.PortNumber(port)
	return gwv1.HTTPBackendRef{BackendRef: gwv1.BackendRef{BackendObjectReference: gwv1.BackendObjectReference{Name: gwv1.ObjectName(name), Port: &p}}}
}

func httpRoute(routeNS, name string, created time.Time, parents []gwv1.ParentReference, hostnames ...string) *gwv1.HTTPRoute {
	r := &gwv1.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: routeNS, Name: name, Generation: 1, CreationTimestamp: metav1.NewTime(created)},
		Spec: gwv1.HTTPRouteSpec{
			CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: parents},
			Rules:           []gwv1.HTTPRouteRule{{BackendRefs: []gwv1.HTTPBackendRef{backendRef("svc", 8080)}}},
		},
	}
	for _, h := range hostnames {
		r.Spec.Hostnames = append(r.Spec.Hostnames, gwv1.Hostname(h))
	}
	return r
}

func grpcRoute(name string, created time.Time, parents []gwv1.ParentReference, hostnames ...string) *gwv1.GRPCRoute {
	p := gwv1.PortNumber(8080)
	r := &gwv1.GRPCRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Generation: 1, CreationTimestamp: metav1.NewTime(created)},
		Spec: gwv1.GRPCRouteSpec{
			CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: parents},
			Rules: []gwv1.GRPCRouteRule{{BackendRefs: []gwv1.GRPCBackendRef{{BackendRef: gwv1.BackendRef{
				BackendObjectReference: gwv1.BackendObjectReference{Name: "svc", Port: &p}}}}}},
		},
	}
	for _, h := range hostnames {
		r.Spec.Hostnames = append(r.Spec.Hostnames, gwv1.Hostname(h))
	}
	return r
}

func service(svcNS, name string, ports ...corev1.ServicePort) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: svcNS, Name: name}, Spec: corev1.ServiceSpec{Ports: ports}}
}

func endpointSlice(svcNS, name, svc, portName string, port int32, eps ...discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: svcNS, Name: name, Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: &portName, Port: &port}},
		Endpoints:   eps,
	}
}

func endpoint(ip string, ready *bool) discoveryv1.Endpoint {
	return discoveryv1.Endpoint{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: ready}}
}

// setup creates objs (plus the class, the namespace and a Service "svc")
// and runs two recomputes.
func setup(t *testing.T, objs ...client.Object) (client.Client, *recorder) {
	t.Helper()
	base := []client.Object{testClass(), namespace(ns, nil), service(ns, "svc", corev1.ServicePort{Name: "http", Port: 8080})}
	cl := newFakeClient(t, append(base, objs...)...)
	rec := &recorder{}
	syncTwice(t, newTestController(t, cl, rec))
	return cl, rec
}

func TestListenerConflicts(t *testing.T) {
	cl, rec := setup(t,
		gateway("gw",
			listener("a", 80, gwv1.HTTPProtocolType, "same.example.com"),
			listener("b", 80, gwv1.HTTPProtocolType, "same.example.com"),
			listener("plain", 8443, gwv1.HTTPProtocolType, ""),
			listener("tls", 8443, gwv1.HTTPSProtocolType, ""),
			listener("distinct", 80, gwv1.HTTPProtocolType, "other.example.com"),
		),
		httpRoute(ns, "r", t0, []gwv1.ParentReference{parentRef("gw")}),
	)
	gw := getGateway(t, cl, ns, "gw")
	wantCondition(t, "gateway", gw.Status.Conditions, "Accepted", metav1.ConditionTrue, "ListenersNotValid", 1)
	wantCondition(t, "gateway", gw.Status.Conditions, "Programmed", metav1.ConditionTrue, "Programmed", 1)
	for _, tc := range []struct{ name, reason string }{{"a", "HostnameConflict"}, {"b", "HostnameConflict"}, {"plain", "ProtocolConflict"}, {"tls", "ProtocolConflict"}} {
		l := listenerStatus(t, gw, tc.name)
		wantCondition(t, tc.name, l.Conditions, "Conflicted", metav1.ConditionTrue, tc.reason, 1)
		wantCondition(t, tc.name, l.Conditions, "Accepted", metav1.ConditionFalse, tc.reason, 1)
		wantCondition(t, tc.name, l.Conditions, "Programmed", metav1.ConditionFalse, "Invalid", 1)
		if l.AttachedRoutes != 0 {
			t.Errorf("conflicted listener %s has %d routes attached", tc.name, l.AttachedRoutes)
		}
	}
	d := listenerStatus(t, gw, "distinct")
	wantCondition(t, "distinct", d.Conditions, "Conflicted", metav1.ConditionFalse, "NoConflicts", 1)
	if d.AttachedRoutes != 1 {
		t.Errorf("distinct listener attachedRoutes = %d, want 1", d.AttachedRoutes)
	}
	cfg := rec.last()
	if len(cfg.Gateways) != 1 || len(cfg.Gateways[0].Listeners) != 1 || cfg.Gateways[0].Listeners[0].Name != "distinct" {
		t.Errorf("snapshot listeners = %+v, want only the distinct listener", cfg.Gateways)
	}
}

func TestAllowedRoutesNamespaces(t *testing.T) {
	tests := []struct {
		name     string
		listener gwv1.Listener
		routeNS  string
		reason   string // "" for accepted
	}{
		{"default is Same: same namespace", listener("l", 80, gwv1.HTTPProtocolType, ""), ns, ""},
		{"default is Same: other namespace", listener("l", 80, gwv1.HTTPProtocolType, ""), "other", "NotAllowedByListeners"},
		{"All", fromNamespaces(listener("l", 80, gwv1.HTTPProtocolType, ""), gwv1.NamespacesFromAll, nil), "other", ""},
		{"Selector matches labels", fromNamespaces(listener("l", 80, gwv1.HTTPProtocolType, ""), gwv1.NamespacesFromSelector, map[string]string{"team": "a"}), "labelled", ""},
		{"Selector does not match", fromNamespaces(listener("l", 80, gwv1.HTTPProtocolType, ""), gwv1.NamespacesFromSelector, map[string]string{"team": "b"}), "labelled", "NotAllowedByListeners"},
		{"Selector on the implicit name label", fromNamespaces(listener("l", 80, gwv1.HTTPProtocolType, ""), gwv1.NamespacesFromSelector, map[string]string{corev1.LabelMetadataName: "other"}), "other", ""},
		{"None", fromNamespaces(listener("l", 80, gwv1.HTTPProtocolType, ""), gwv1.NamespacesFromNone, nil), ns, "NotAllowedByListeners"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cl, _ := setup(t,
				namespace("other", nil), namespace("labelled", map[string]string{"team": "a"}),
				gateway("gw", tc.listener),
				httpRoute(tc.routeNS, "r", t0, []gwv1.ParentReference{parentRef("gw")}),
			)
			p := ourParent(t, getHTTPRoute(t, cl, tc.routeNS, "r").Status.Parents, ns, "gw")
			attached := listenerStatus(t, getGateway(t, cl, ns, "gw"), "l").AttachedRoutes
			if tc.reason == "" {
				wantCondition(t, "route", p.Conditions, "Accepted", metav1.ConditionTrue, "Accepted", 1)
				if attached != 1 {
					t.Errorf("attachedRoutes = %d, want 1", attached)
				}
			} else {
				wantCondition(t, "route", p.Conditions, "Accepted", metav1.ConditionFalse, tc.reason, 1)
				if attached != 0 {
					t.Errorf("attachedRoutes = %d, want 0", attached)
				}
			}
		})
	}
}

func TestParentRefSectionNameAndPort(t *testing.T) {
	withSection := func(s string) gwv1.ParentReference {
		p := parentRef("gw")
		n := gwv1.SectionName(s)
		p.SectionName = &n
		return p
	}
	withPort := func(port int32) gwv1.ParentReference {
		p := parentRef("gw")
		n := gwv1.PortNumber(port)
		p.Port = &n
		return p
	}
	tests := []struct {
		name         string
		ref          gwv1.ParentReference
		reason       string
		wantAttached map[string]int32
	}{
		{"whole gateway", parentRef("gw"), "", map[string]int32{"web": 1, "alt": 1}},
		{"sectionName", withSection("alt"), "", map[string]int32{"web": 0, "alt": 1}},
		{"port", withPort(80), "", map[string]int32{"web": 1, "alt": 0}},
		{"unknown sectionName", withSection("nope"), "NoMatchingParent", map[string]int32{"web": 0, "alt": 0}},
		{"unknown port", withPort(81), "NoMatchingParent", map[string]int32{"web": 0, "alt": 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cl, _ := setup(t,
				gateway("gw", listener("web", 80, gwv1.HTTPProtocolType, ""), listener("alt", 8080, gwv1.HTTPProtocolType, "")),
				httpRoute(ns, "r", t0, []gwv1.ParentReference{tc.ref}),
			)
			p := ourParent(t, getHTTPRoute(t, cl, ns, "r").Status.Parents, ns, "gw")
			if tc.reason == "" {
				wantCondition(t, "route", p.Conditions, "Accepted", metav1.ConditionTrue, "Accepted", 1)
			} else {
				wantCondition(t, "route", p.Conditions, "Accepted", metav1.ConditionFalse, tc.reason, 1)
			}
			if p.ParentRef.Group == nil || *p.ParentRef.Group != gwv1.GroupName || p.ParentRef.Kind == nil || *p.ParentRef.Kind != "Gateway" {
				t.Errorf("parentRef echo = %+v, want group and kind defaulted", p.ParentRef)
			}
			if !slices.Equal(ptrSlice(p.ParentRef.SectionName), ptrSlice(tc.ref.SectionName)) {
				t.Errorf("parentRef echo sectionName = %v, want %v", p.ParentRef.SectionName, tc.ref.SectionName)
			}
			gw := getGateway(t, cl, ns, "gw")
			for name, want := range tc.wantAttached {
				if got := listenerStatus(t, gw, name).AttachedRoutes; got != want {
					t.Errorf("listener %s attachedRoutes = %d, want %d", name, got, want)
				}
			}
		})
	}
}

func ptrSlice[T any](p *T) []T {
	if p == nil {
		return nil
	}
	return []T{*p}
}

// TestHTTPAndGRPCRouteHostnameConflict checks the GRPCRouteSpec.Hostnames
// rule: the older of an HTTPRoute and a GRPCRoute with intersecting
// hostnames on one listener wins.
func TestHTTPAndGRPCRouteHostnameConflict(t *testing.T) {
	cl, rec := setup(t,
		gateway("gw", listener("l", 80, gwv1.HTTPProtocolType, "")),
		httpRoute(ns, "http-new", t0.Add(time.Hour), []gwv1.ParentReference{parentRef("gw")}, "*.example.com"),
		grpcRoute("grpc-old", t0, []gwv1.ParentReference{parentRef("gw")}, "a.example.com"),
		grpcRoute("grpc-elsewhere", t0.Add(2*time.Hour), []gwv1.ParentReference{parentRef("gw")}, "other.org"),
	)
	p := ourParent(t, getHTTPRoute(t, cl, ns, "http-new").Status.Parents, ns, "gw")
	wantCondition(t, "newer HTTPRoute", p.Conditions, "Accepted", metav1.ConditionFalse, reasonHostnameConflict, 1)
	for _, name := range []string{"grpc-old", "grpc-elsewhere"} {
		r := &gwv1.GRPCRoute{}
		if err := cl.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, r); err != nil {
			t.Fatal(err)
		}
		wantCondition(t, name, ourParent(t, r.Status.Parents, ns, "gw").Conditions, "Accepted", metav1.ConditionTrue, "Accepted", 1)
	}
	if got := listenerStatus(t, getGateway(t, cl, ns, "gw"), "l").AttachedRoutes; got != 2 {
		t.Errorf("attachedRoutes = %d, want 2", got)
	}
	l := rec.last().Gateways[0].Listeners[0]
	if len(l.HTTPRoutes) != 0 || len(l.GRPCRoutes) != 2 {
		t.Errorf("snapshot has %d HTTPRoutes and %d GRPCRoutes, want 0 and 2", len(l.HTTPRoutes), len(l.GRPCRoutes))
	}
}

func TestCompileBackends(t *testing.T) {
	yes, no := true, false
	h2c := "kubernetes.io/h2c"
	weird := "example.com/smoke-signals"
	route := httpRoute(ns, "r", t0, []gwv1.ParentReference{parentRef("gw")})
	mirror := backendRef("mirror", 80).BackendObjectReference
	other := gwv1.Namespace("other")
	crossRef := backendRef("remote", 80)
	crossRef.Namespace = &other
	route.Spec.Rules = []gwv1.HTTPRouteRule{
		{ // defaults, endpoints, a resolved mirror
			BackendRefs: []gwv1.HTTPBackendRef{backendRef("svc", 8080), backendRef("grpc", 9000)},
			Filters: []gwv1.HTTPRouteFilter{{Type: gwv1.HTTPRouteFilterRequestMirror,
				RequestMirror: &gwv1.HTTPRequestMirrorFilter{BackendRef: mirror}}},
		},
		{BackendRefs: []gwv1.HTTPBackendRef{crossRef}},
		{BackendRefs: []gwv1.HTTPBackendRef{backendRef("missing", 80)}},
		{BackendRefs: []gwv1.HTTPBackendRef{backendRef("weird", 80)}},
		{ // no backends: the data plane answers 500
			Matches: []gwv1.HTTPRouteMatch{{Headers: []gwv1.HTTPHeaderMatch{{Name: "x", Value: "y"}}}},
		},
	}
	grant := &gwv1beta1.ReferenceGrant{
		ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "allow"},
		Spec: gwv1.ReferenceGrantSpec{
			From: []gwv1.ReferenceGrantFrom{{Group: gwv1.GroupName, Kind: "HTTPRoute", Namespace: ns}},
			To:   []gwv1.ReferenceGrantTo{{Group: "", Kind: "Service"}},
		},
	}
	_, rec := setup(t,
		gateway("gw", listener("l", 80, gwv1.HTTPProtocolType, "")),
		route, grant,
		service(ns, "grpc", corev1.ServicePort{Name: "grpc", Port: 9000, AppProtocol: &h2c}),
		service(ns, "mirror", corev1.ServicePort{Port: 80}),
		service(ns, "weird", corev1.ServicePort{Port: 80, AppProtocol: &weird}),
		service("other", "remote", corev1.ServicePort{Port: 80}),
		endpointSlice(ns, "svc-1", "svc", "http", 3000, endpoint("10.0.0.2", &yes), endpoint("10.0.0.1", nil), endpoint("10.0.0.3", &no)),
		endpointSlice(ns, "svc-2", "svc", "metrics", 9090, endpoint("10.0.0.9", &yes)),
		endpointSlice(ns, "grpc-1", "grpc", "grpc", 3001, endpoint("10.0.1.1", &yes)),
		endpointSlice(ns, "mirror-1", "mirror", "", 3002, endpoint("10.0.2.1", nil)),
	)
	cfg := rec.last()
	if cfg == nil || len(cfg.Gateways) != 1 || len(cfg.Gateways[0].Listeners) != 1 || len(cfg.Gateways[0].Listeners[0].HTTPRoutes) != 1 {
		t.Fatalf("snapshot = %+v, want one gateway, listener and route", cfg)
	}
	rules := cfg.Gateways[0].Listeners[0].HTTPRoutes[0].Rules
	if len(rules) != 5 {
		t.Fatalf("%d rules, want 5", len(rules))
	}

	r0 := rules[0]
	if len(r0.Matches) != 1 || *r0.Matches[0].Path.Type != gwv1.PathMatchPathPrefix || *r0.Matches[0].Path.Value != "/" {
		t.Errorf("rule without matches: matches = %+v, want one PathPrefix /", r0.Matches)
	}
	wantBackend(t, r0.Backends[0].Backend, ir.Backend{Name: "ns/svc:8080", Weight: 1, Endpoints: []string{"10.0.0.1:3000", "10.0.0.2:3000"}})
	wantBackend(t, r0.Backends[1].Backend, ir.Backend{Name: "ns/grpc:9000", Weight: 1, AppProtocol: h2c, Endpoints: []string{"10.0.1.1:3001"}})
	if len(r0.Filters) != 1 || r0.Filters[0].Mirror == nil {
		t.Fatalf("mirror filter not resolved: %+v", r0.Filters)
	}
	wantBackend(t, *r0.Filters[0].Mirror, ir.Backend{Name: "ns/mirror:80", Weight: 1, Endpoints: []string{"10.0.2.1:3002"}})
	wantBackend(t, rules[1].Backends[0].Backend, ir.Backend{Name: "other/remote:80", Weight: 1})
	wantBackend(t, rules[2].Backends[0].Backend, ir.Backend{Name: "ns/missing:80", Weight: 1, Invalid: true})
	wantBackend(t, rules[3].Backends[0].Backend, ir.Backend{Name: "ns/weird:80", Weight: 1, AppProtocol: weird, Invalid: true})
	if len(rules[4].Backends) != 0 {
		t.Errorf("rule without backendRefs has backends %+v", rules[4].Backends)
	}
	m := rules[4].Matches[0]
	if *m.Path.Value != "/" || *m.Headers[0].Type != gwv1.HeaderMatchExact {
		t.Errorf("match defaults not applied: %+v", m)
	}
}

func wantBackend(t *testing.T, got, want ir.Backend) {
	t.Helper()
	if got.Name != want.Name || got.Weight != want.Weight || got.Invalid != want.Invalid || got.AppProtocol != want.AppProtocol || !slices.Equal(got.Endpoints, want.Endpoints) {
		t.Errorf("backend = %+v, want %+v", got, want)
	}
}

func TestRouteResolvedRefsReasons(t *testing.T) {
	h := "https"
	other := gwv1.Namespace("other")
	cross := backendRef("svc", 8080)
	cross.Namespace = &other
	kind := gwv1.Kind("Pod")
	badKind := backendRef("svc", 8080)
	badKind.Kind = &kind
	ext := gwv1.HTTPRouteRule{
		Filters:     []gwv1.HTTPRouteFilter{{Type: gwv1.HTTPRouteFilterExtensionRef, ExtensionRef: &gwv1.LocalObjectReference{Group: "ex.com", Kind: "Magic", Name: "m"}}},
		BackendRefs: []gwv1.HTTPBackendRef{backendRef("svc", 8080)},
	}
	tests := []struct {
		name   string
		rule   gwv1.HTTPRouteRule
		reason string
	}{
		{"resolved", gwv1.HTTPRouteRule{BackendRefs: []gwv1.HTTPBackendRef{backendRef("svc", 8080)}}, "ResolvedRefs"},
		{"missing Service", gwv1.HTTPRouteRule{BackendRefs: []gwv1.HTTPBackendRef{backendRef("nope", 8080)}}, "BackendNotFound"},
		{"missing port", gwv1.HTTPRouteRule{BackendRefs: []gwv1.HTTPBackendRef{backendRef("svc", 1)}}, "BackendNotFound"},
		{"cross-namespace without grant", gwv1.HTTPRouteRule{BackendRefs: []gwv1.HTTPBackendRef{cross}}, "RefNotPermitted"},
		{"unknown kind", gwv1.HTTPRouteRule{BackendRefs: []gwv1.HTTPBackendRef{badKind}}, "InvalidKind"},
		{"unsupported appProtocol", gwv1.HTTPRouteRule{BackendRefs: []gwv1.HTTPBackendRef{backendRef("tls", 443)}}, "UnsupportedProtocol"},
		{"extensionRef filter", ext, "InvalidKind"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := httpRoute(ns, "r", t0, []gwv1.ParentReference{parentRef("gw")})
			r.Spec.Rules = []gwv1.HTTPRouteRule{tc.rule}
			cl, rec := setup(t,
				gateway("gw", listener("l", 80, gwv1.HTTPProtocolType, "")), r,
				service("other", "svc", corev1.ServicePort{Port: 8080}),
				service(ns, "tls", corev1.ServicePort{Port: 443, AppProtocol: &h}),
			)
			p := ourParent(t, getHTTPRoute(t, cl, ns, "r").Status.Parents, ns, "gw")
			status := metav1.ConditionFalse
			if tc.reason == "ResolvedRefs" {
				status = metav1.ConditionTrue
			}
			wantCondition(t, "route", p.Conditions, "ResolvedRefs", status, tc.reason, 1)
			// An unresolved reference does not stop the route from attaching.
			wantCondition(t, "route", p.Conditions, "Accepted", metav1.ConditionTrue, "Accepted", 1)
			b := rec.last().Gateways[0].Listeners[0].HTTPRoutes[0].Rules[0].Backends
			if invalid := len(b) == 1 && b[0].Invalid; invalid != (status == metav1.ConditionFalse) {
				t.Errorf("backends = %+v; want invalid exactly when the reference is unresolved", b)
			}
		})
	}
}

// TestStatusWrites checks that status is written only when it changed, that
// a condition whose status did not change keeps its lastTransitionTime, that
// observedGeneration follows the generation, that our parent entries for
// parents no longer referenced are removed while other controllers'
// entries stay, and that conditions of other writers stay on the Gateway
// and its listeners (upstream v1.7's GatewayPreserveForeignConditions).
func TestStatusWrites(t *testing.T) {
	old := metav1.NewTime(t0)
	route := httpRoute(ns, "r", t0, []gwv1.ParentReference{parentRef("gw")})
	route.Status.Parents = []gwv1.RouteParentStatus{
		{ParentRef: parentRef("gone"), ControllerName: testControllerName,
			Conditions: []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted", LastTransitionTime: old}}},
		{ParentRef: parentRef("gw"), ControllerName: "example.com/other",
			Conditions: []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted", LastTransitionTime: old}}},
	}
	gw := gateway("gw", listener("l", 80, gwv1.HTTPProtocolType, ""))
	gw.Status.Conditions = []metav1.Condition{
		{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted", LastTransitionTime: old},
		{Type: "example.com/Custom", Status: metav1.ConditionTrue, Reason: "Mine", LastTransitionTime: old},
	}
	gw.Status.Listeners = []gwv1.ListenerStatus{{Name: "l", Conditions: []metav1.Condition{
		{Type: "example.com/Custom", Status: metav1.ConditionTrue, Reason: "Mine", LastTransitionTime: old},
	}}}
	cl, _ := setup(t, gw, route)
	c := newTestController(t, cl.(client.WithWatch), &recorder{})

	r := getHTTPRoute(t, cl, ns, "r")
	if len(r.Status.Parents) != 2 {
		t.Fatalf("parents = %+v, want the other controller's and ours for gw", r.Status.Parents)
	}
	if r.Status.Parents[0].ControllerName != "example.com/other" || r.Status.Parents[1].ParentRef.Name != "gw" {
		t.Errorf("parents = %+v, want the other controller's entry kept and ours for gw", r.Status.Parents)
	}
	g := getGateway(t, cl, ns, "gw")
	if acc := findCondition(g.Status.Conditions, "Accepted"); acc == nil || !acc.LastTransitionTime.Equal(&old) {
		t.Errorf("Accepted stayed True but lastTransitionTime changed: %+v", acc)
	}
	if findCondition(g.Status.Conditions, "example.com/Custom") == nil {
		t.Errorf("a condition of another writer was removed: %+v", g.Status.Conditions)
	}
	if l := listenerStatus(t, g, "l"); findCondition(l.Conditions, "example.com/Custom") == nil || findCondition(l.Conditions, "Programmed") == nil {
		t.Errorf("listener conditions %+v; want ours and the other writer's", l.Conditions)
	}

	// A fixed point: nothing is written.
	rvGW, rvRoute := g.ResourceVersion, r.ResourceVersion
	if err := c.sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if g2, r2 := getGateway(t, cl, ns, "gw"), getHTTPRoute(t, cl, ns, "r"); g2.ResourceVersion != rvGW || r2.ResourceVersion != rvRoute {
		t.Errorf("an unchanged status was rewritten (Gateway %s→%s, HTTPRoute %s→%s)", rvGW, g2.ResourceVersion, rvRoute, r2.ResourceVersion)
	}

	// A new generation is observed.
	g.Generation = 2
	if err := cl.Update(context.Background(), g); err != nil {
		t.Fatal(err)
	}
	if err := c.sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	g = getGateway(t, cl, ns, "gw")
	wantCondition(t, "gateway", g.Status.Conditions, "Accepted", metav1.ConditionTrue, "Accepted", 2)
	wantCondition(t, "listener", listenerStatus(t, g, "l").Conditions, "Programmed", metav1.ConditionTrue, "Programmed", 2)
}

func TestApplyErrorMarksNotProgrammed(t *testing.T) {
	cl := newFakeClient(t, testClass(), namespace(ns, nil), gateway("gw", listener("l", 80, gwv1.HTTPProtocolType, "")))
	rec := &recorder{fail: errors.New("port 80: address already in use")}
	syncTwice(t, newTestController(t, cl, rec))
	g := getGateway(t, cl, ns, "gw")
	wantCondition(t, "gateway", g.Status.Conditions, "Accepted", metav1.ConditionTrue, "Accepted", 1)
	wantCondition(t, "gateway", g.Status.Conditions, "Programmed", metav1.ConditionFalse, "Invalid", 1)
	wantCondition(t, "listener", listenerStatus(t, g, "l").Conditions, "Programmed", metav1.ConditionFalse, "Invalid", 1)
}

func TestOtherControllersObjectsUntouched(t *testing.T) {
	theirs := &gwv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "theirs", Generation: 1},
		Spec: gwv1.GatewayClassSpec{ControllerName: "example.com/other"}}
	gw := gateway("foreign", listener("l", 80, gwv1.HTTPProtocolType, ""))
	gw.Spec.GatewayClassName = "theirs"
	cl, rec := setup(t, theirs, gw, httpRoute(ns, "r", t0, []gwv1.ParentReference{parentRef("foreign")}))

	gc := &gwv1.GatewayClass{}
	if err := cl.Get(context.Background(), client.ObjectKey{Name: "theirs"}, gc); err != nil {
		t.Fatal(err)
	}
	if len(gc.Status.Conditions) != 0 {
		t.Errorf("another controller's class got status %+v", gc.Status)
	}
	if g := getGateway(t, cl, ns, "foreign"); len(g.Status.Conditions) != 0 || len(g.Status.Listeners) != 0 {
		t.Errorf("another controller's Gateway got status %+v", g.Status)
	}
	if r := getHTTPRoute(t, cl, ns, "r"); len(r.Status.Parents) != 0 {
		t.Errorf("a route of another controller's Gateway got parents %+v", r.Status.Parents)
	}
	if cfg := rec.last(); cfg == nil || len(cfg.Gateways) != 0 {
		t.Errorf("snapshot = %+v, want no Gateways", cfg)
	}
}

func TestGatewayLevelRejections(t *testing.T) {
	withAddress := gateway("addr", listener("l", 80, gwv1.HTTPProtocolType, ""))
	withAddress.Spec.Addresses = []gwv1.GatewaySpecAddress{{Value: "192.0.2.1"}}
	https := gateway("nocert", listener("l", 443, gwv1.HTTPSProtocolType, ""))
	cl, _ := setup(t, withAddress, https)

	g := getGateway(t, cl, ns, "addr")
	wantCondition(t, "static address", g.Status.Conditions, "Accepted", metav1.ConditionFalse, "UnsupportedAddress", 1)
	wantCondition(t, "static address", g.Status.Conditions, "Programmed", metav1.ConditionFalse, "Invalid", 1)

	g = getGateway(t, cl, ns, "nocert")
	wantCondition(t, "https without certificateRefs", listenerStatus(t, g, "l").Conditions, "ResolvedRefs", metav1.ConditionFalse, "InvalidCertificateRef", 1)
	wantCondition(t, "https without certificateRefs", g.Status.Conditions, "Programmed", metav1.ConditionFalse, "Invalid", 1)
}

func TestNewRejectsBadOptions(t *testing.T) {
	cl := newFakeClient(t)
	if _, err := New(Options{ControllerName: testControllerName}); err == nil {
		t.Error("New without a Client succeeded")
	}
	if _, err := New(Options{Client: cl}); err == nil {
		t.Error("New without a ControllerName succeeded")
	}
	if _, err := New(Options{Client: cl, ControllerName: testControllerName}); err != nil {
		t.Errorf("New with minimal options: %v", err)
	}
	// One feature more than GatewayClass status.supportedFeatures holds: the
	// status write would be refused and the class never Accepted.
	tooMany := make([]gwv1.FeatureName, MaxSupportedFeatures+1)
	for i := range tooMany {
		tooMany[i] = gwv1.FeatureName(fmt.Sprintf("Feature%d", i))
	}
	if _, err := New(Options{Client: cl, ControllerName: testControllerName, SupportedFeatures: tooMany}); err == nil ||
		!strings.Contains(err.Error(), "SupportedFeatures has 65 features") {
		t.Errorf("New with %d supported features: err = %v, want one naming Options.SupportedFeatures and the bound", len(tooMany), err)
	}
	if _, err := New(Options{Client: cl, ControllerName: testControllerName, SupportedFeatures: tooMany[:MaxSupportedFeatures]}); err != nil {
		t.Errorf("New with %d supported features: %v", MaxSupportedFeatures, err)
	}
}
