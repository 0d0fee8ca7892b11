package controller

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatewitness/gatewitness/gateway/dataplane"
	"github.com/gatewitness/gatewitness/gateway/ir"
)

// tlsListener is a TLS listener with the given tls.mode ("" leaves tls
// unset).
func tlsListener(name string, port int32, host string, mode gwv1.TLSModeType) gwv1.Listener {
	l := listener(name, port, gwv1.TLSProtocolType, host)
	if mode != "" {
		l.TLS = &gwv1.ListenerTLSConfig{Mode: &mode}
	}
	return l
}

func tlsRoute(name string, parents []gwv1.ParentReference, hostnames []string, backends ...gwv1.BackendRef) *gwv1.TLSRoute {
	r := &gwv1.TLSRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Generation: 1, CreationTimestamp: metav1.NewTime(t0)},
		Spec: gwv1.TLSRouteSpec{
			CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: parents},
			Rules:           []gwv1.TLSRouteRule{{BackendRefs: backends}},
		},
	}
	for _, h := range hostnames {
		r.Spec.Hostnames = append(r.Spec.Hostnames, gwv1.Hostname(h))
	}
	return r
}

func getTLSRoute(t *testing.T, cl client.Client, name string) *gwv1.TLSRoute {
	t.Helper()
	r := &gwv1.TLSRoute{}
	if err := cl.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, r); err != nil {
		t.Fatalf("getting TLSRoute %s/%s: %v", ns, name, err)
	}
	return r
}

// TestTLSRoutePassthrough checks a TLSRoute on a TLS passthrough listener:
// the listener's status, the route's parent status, and the snapshot, with
// the hostnames intersected and the backend resolved to its endpoints
// (any appProtocol: the bytes are not read).
func TestTLSRoutePassthrough(t *testing.T) {
	ready := true
	appProto := "kubernetes.io/h2c"
	cl, rec := setup(t,
		gateway("gw", tlsListener("tls", 443, "*.example.com", gwv1.TLSModePassthrough)),
		tlsRoute("r", []gwv1.ParentReference{parentRef("gw")}, []string{"a.example.com", "a.other.test", "*.b.example.com"},
			backendRef("tls", 8443).BackendRef),
		service(ns, "tls", corev1.ServicePort{Name: "tls", Port: 8443, AppProtocol: &appProto}),
		endpointSlice(ns, "tls-1", "tls", "tls", 9443, endpoint("10.0.0.1", &ready), endpoint("10.0.0.2", nil)),
	)
	gw := getGateway(t, cl, ns, "gw")
	wantCondition(t, "gateway", gw.Status.Conditions, "Accepted", metav1.ConditionTrue, "Accepted", 1)
	wantCondition(t, "gateway", gw.Status.Conditions, "Programmed", metav1.ConditionTrue, "Programmed", 1)
	l := listenerStatus(t, gw, "tls")
	for _, typ := range []string{"Accepted", "Programmed", "ResolvedRefs"} {
		wantCondition(t, "listener", l.Conditions, typ, metav1.ConditionTrue, "", 1)
	}
	if got := kindNames(l.SupportedKinds); !slices.Equal(got, []string{"TLSRoute"}) {
		t.Errorf("supportedKinds = %v, want [TLSRoute]", got)
	}
	if l.AttachedRoutes != 1 {
		t.Errorf("attachedRoutes = %d, want 1", l.AttachedRoutes)
	}
	p := ourParent(t, getTLSRoute(t, cl, "r").Status.Parents, ns, "gw")
	wantCondition(t, "route", p.Conditions, "Accepted", metav1.ConditionTrue, "Accepted", 1)
	wantCondition(t, "route", p.Conditions, "ResolvedRefs", metav1.ConditionTrue, "ResolvedRefs", 1)

	cfg := rec.last()
	if len(cfg.Gateways) != 1 || len(cfg.Gateways[0].Listeners) != 1 {
		t.Fatalf("snapshot %+v, want one Gateway with one listener", cfg)
	}
	dl := cfg.Gateways[0].Listeners[0]
	if dl.Protocol != gwv1.TLSProtocolType || dl.Hostname != "*.example.com" || len(dl.TLSRoutes) != 1 || len(dl.HTTPRoutes)+len(dl.GRPCRoutes) != 0 {
		t.Fatalf("listener %+v, want TLS *.example.com with one TLSRoute", dl)
	}
	r := dl.TLSRoutes[0]
	if !slices.Equal(r.Hostnames, []string{"a.example.com", "*.b.example.com"}) {
		t.Errorf("route hostnames on the listener = %v, want the intersection [a.example.com *.b.example.com]", r.Hostnames)
	}
	wantBackend(t, r.Backends[0], ir.Backend{Name: ns + "/tls:8443", Weight: 1, AppProtocol: appProto, Endpoints: []string{"10.0.0.1:9443", "10.0.0.2:9443"}})

	// The data plane takes the snapshot as it is.
	dp := dataplane.New(dataplane.Options{})
	defer dp.Close()
	if err := dp.Apply(cfg); err != nil {
		t.Errorf("the data plane refused the snapshot: %v", err)
	}
}

// TestTLSListenerModes checks the listener verdicts on tls.mode: TLS needs
// Passthrough (Terminate, stated or by default, is UnsupportedValue), and
// a port mixing the two modes is ProtocolConflict on both listeners.
func TestTLSListenerModes(t *testing.T) {
	cl, _ := setup(t,
		gateway("modes",
			tlsListener("passthrough", 443, "", gwv1.TLSModePassthrough),
			tlsListener("terminate", 8443, "", gwv1.TLSModeTerminate),
			tlsListener("default", 9443, "", ""),
		),
		gateway("mixed",
			tlsListener("terminate", 443, "t.example.com", gwv1.TLSModeTerminate),
			tlsListener("passthrough", 443, "p.example.com", gwv1.TLSModePassthrough),
		),
		gateway("https-passthrough", func() gwv1.Listener {
			l := listener("https", 443, gwv1.HTTPSProtocolType, "")
			m := gwv1.TLSModePassthrough
			l.TLS = &gwv1.ListenerTLSConfig{Mode: &m, CertificateRefs: []gwv1.SecretObjectReference{{Name: "x"}}}
			return l
		}()),
	)
	gw := getGateway(t, cl, ns, "modes")
	wantCondition(t, "modes gateway", gw.Status.Conditions, "Accepted", metav1.ConditionTrue, "ListenersNotValid", 1)
	wantCondition(t, "passthrough", listenerStatus(t, gw, "passthrough").Conditions, "Accepted", metav1.ConditionTrue, "Accepted", 1)
	wantCondition(t, "terminate", listenerStatus(t, gw, "terminate").Conditions, "Accepted", metav1.ConditionFalse, "UnsupportedValue", 1)
	wantCondition(t, "default mode", listenerStatus(t, gw, "default").Conditions, "Accepted", metav1.ConditionFalse, "UnsupportedValue", 1)
	for _, name := range []string{"terminate", "default"} {
		if kinds := listenerStatus(t, gw, name).SupportedKinds; len(kinds) != 0 {
			t.Errorf("listener %s of an unsupported mode has supportedKinds %v, want none", name, kindNames(kinds))
		}
	}

	gw = getGateway(t, cl, ns, "mixed")
	for _, name := range []string{"terminate", "passthrough"} {
		l := listenerStatus(t, gw, name)
		wantCondition(t, "mixed "+name, l.Conditions, "Accepted", metav1.ConditionFalse, "ProtocolConflict", 1)
		wantCondition(t, "mixed "+name, l.Conditions, "Conflicted", metav1.ConditionTrue, "ProtocolConflict", 1)
		if len(l.SupportedKinds) != 0 {
			t.Errorf("mixed %s has supportedKinds %v, want none", name, kindNames(l.SupportedKinds))
		}
	}

	gw = getGateway(t, cl, ns, "https-passthrough")
	wantCondition(t, "HTTPS passthrough", listenerStatus(t, gw, "https").Conditions, "Accepted", metav1.ConditionFalse, "UnsupportedValue", 1)
}

// TestTLSRouteAttachment checks the reasons a TLSRoute does not attach, and
// its backend reference reasons.
func TestTLSRouteAttachment(t *testing.T) {
	other := gwv1.Namespace("other")
	cross := backendRef("svc", 8080).BackendRef
	cross.Namespace = &other
	kind := gwv1.Kind("Pod")
	badKind := backendRef("svc", 8080).BackendRef
	badKind.Kind = &kind
	section := func(gw, name string) []gwv1.ParentReference {
		p := parentRef(gw)
		s := gwv1.SectionName(name)
		p.SectionName = &s
		return []gwv1.ParentReference{p}
	}
	hosts := []string{"a.example.com"}
	ok := backendRef("svc", 8080).BackendRef
	cl, rec := setup(t,
		gateway("gw",
			tlsListener("tls", 443, "*.example.com", gwv1.TLSModePassthrough),
			listener("http", 80, gwv1.HTTPProtocolType, ""),
		),
		service("other", "svc", corev1.ServicePort{Port: 8080}),
		tlsRoute("on-http", section("gw", "http"), hosts, ok),
		tlsRoute("no-section", section("gw", "nope"), hosts, ok),
		tlsRoute("no-host", section("gw", "tls"), []string{"a.other.test"}, ok),
		tlsRoute("missing", section("gw", "tls"), hosts, backendRef("nope", 8080).BackendRef),
		tlsRoute("cross", section("gw", "tls"), hosts, cross),
		tlsRoute("bad-kind", section("gw", "tls"), hosts, badKind),
	)
	cases := []struct {
		route              string
		accepted, resolved string
	}{
		{"on-http", "NotAllowedByListeners", "ResolvedRefs"},
		{"no-section", "NoMatchingParent", "ResolvedRefs"},
		{"no-host", "NoMatchingListenerHostname", "ResolvedRefs"},
		{"missing", "Accepted", "BackendNotFound"},
		{"cross", "Accepted", "RefNotPermitted"},
		{"bad-kind", "Accepted", "InvalidKind"},
	}
	status := func(reason, positive string) metav1.ConditionStatus {
		if reason == positive {
			return metav1.ConditionTrue
		}
		return metav1.ConditionFalse
	}
	for _, tc := range cases {
		p := ourParent(t, getTLSRoute(t, cl, tc.route).Status.Parents, ns, "gw")
		wantCondition(t, tc.route, p.Conditions, "Accepted", status(tc.accepted, "Accepted"), tc.accepted, 1)
		wantCondition(t, tc.route, p.Conditions, "ResolvedRefs", status(tc.resolved, "ResolvedRefs"), tc.resolved, 1)
	}
	gw := getGateway(t, cl, ns, "gw")
	if n := listenerStatus(t, gw, "http").AttachedRoutes; n != 0 {
		t.Errorf("HTTP listener attachedRoutes = %d, want 0", n)
	}
	if n := listenerStatus(t, gw, "tls").AttachedRoutes; n != 3 {
		t.Errorf("TLS listener attachedRoutes = %d, want 3 (the routes with unresolved backends)", n)
	}
	for _, l := range rec.last().Gateways[0].Listeners {
		for _, r := range l.TLSRoutes {
			if len(r.Backends) != 1 || !r.Backends[0].Invalid {
				t.Errorf("route %s in the snapshot has backends %+v, want one invalid backend", r.Name, r.Backends)
			}
		}
	}
}
