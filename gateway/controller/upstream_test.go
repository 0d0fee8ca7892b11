package controller

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// TestUpstreamManifests applies the upstream conformance manifests (base and
// one test's own) to a fake client, recomputes, and checks the status that
// upstream test polls for. The expectations restate the upstream tests'
// (conformance/tests/<name>.go in sigs.k8s.io/gateway-api/conformance).
func TestUpstreamManifests(t *testing.T) {
	const T, F = metav1.ConditionTrue, metav1.ConditionFalse
	tests := []struct {
		manifest string
		check    func(t *testing.T, cl client.Client)
	}{
		{"tests/gateway-invalid-listeners-unsupported-protocol.yaml", func(t *testing.T, cl client.Client) {
			gw := getGateway(t, cl, infraNS, "gateway-only-unsupported-protocols")
			wantCondition(t, "gateway", gw.Status.Conditions, "Accepted", F, "ListenersNotValid", 1)
			l := listenerStatus(t, gw, "invalid")
			wantCondition(t, "listener invalid", l.Conditions, "Accepted", F, "UnsupportedProtocol", 1)
			if len(l.SupportedKinds) != 0 {
				t.Errorf("supportedKinds of an unsupported listener = %v, want none", kindNames(l.SupportedKinds))
			}

			gw = getGateway(t, cl, infraNS, "gateway-supported-and-unsupported-protocols")
			wantCondition(t, "mixed gateway", gw.Status.Conditions, "Accepted", T, "ListenersNotValid", 1)
			wantCondition(t, "listener http", listenerStatus(t, gw, "http").Conditions, "Accepted", T, "Accepted", 1)
			wantCondition(t, "listener invalid", listenerStatus(t, gw, "invalid").Conditions, "Accepted", F, "UnsupportedProtocol", 1)
		}},
		{"tests/gateway-invalid-route-kind.yaml", func(t *testing.T, cl client.Client) {
			gw := getGateway(t, cl, infraNS, "gateway-only-invalid-route-kind")
			l := listenerStatus(t, gw, "http")
			wantCondition(t, "only invalid kind", l.Conditions, "ResolvedRefs", F, "InvalidRouteKinds", 1)
			if len(l.SupportedKinds) != 0 {
				t.Errorf("supportedKinds = %v, want none", kindNames(l.SupportedKinds))
			}
			gw = getGateway(t, cl, infraNS, "gateway-supported-and-invalid-route-kind")
			l = listenerStatus(t, gw, "http")
			wantCondition(t, "invalid and HTTPRoute", l.Conditions, "ResolvedRefs", F, "InvalidRouteKinds", 1)
			if got := kindNames(l.SupportedKinds); !slices.Equal(got, []string{"HTTPRoute"}) {
				t.Errorf("supportedKinds = %v, want [HTTPRoute]", got)
			}
		}},
		{"tests/gateway-invalid-tls-configuration.yaml", func(t *testing.T, cl client.Client) {
			for _, name := range []string{"gateway-certificate-nonexistent-secret", "gateway-certificate-unsupported-group", "gateway-certificate-unsupported-kind", "gateway-certificate-malformed-secret"} {
				l := listenerStatus(t, getGateway(t, cl, infraNS, name), "https")
				wantCondition(t, name, l.Conditions, "ResolvedRefs", F, "InvalidCertificateRef", 1)
				wantCondition(t, name, l.Conditions, "Programmed", F, "", 1)
			}
		}},
		{"tests/gateway-secret-missing-reference-grant.yaml", func(t *testing.T, cl client.Client) {
			l := listenerStatus(t, getGateway(t, cl, infraNS, "gateway-secret-missing-reference-grant"), "https")
			wantCondition(t, "listener", l.Conditions, "ResolvedRefs", F, "RefNotPermitted", 1)
		}},
		{"tests/gateway-secret-invalid-reference-grant.yaml", func(t *testing.T, cl client.Client) {
			l := listenerStatus(t, getGateway(t, cl, infraNS, "gateway-secret-invalid-reference-grant"), "https")
			wantCondition(t, "listener", l.Conditions, "ResolvedRefs", F, "RefNotPermitted", 1)
		}},
		{"tests/gateway-secret-reference-grant-specific.yaml", func(t *testing.T, cl client.Client) {
			l := listenerStatus(t, getGateway(t, cl, infraNS, "gateway-secret-reference-grant-specific"), "https")
			wantCondition(t, "listener", l.Conditions, "Programmed", T, "Programmed", 1)
			wantCondition(t, "listener", l.Conditions, "ResolvedRefs", T, "", 1)
		}},
		{"tests/gateway-secret-reference-grant-all-in-namespace.yaml", func(t *testing.T, cl client.Client) {
			l := listenerStatus(t, getGateway(t, cl, infraNS, "gateway-secret-reference-grant-all-in-namespace"), "https")
			wantCondition(t, "listener", l.Conditions, "Programmed", T, "Programmed", 1)
		}},
		{"tests/gateway-with-attached-routes.yaml", func(t *testing.T, cl client.Client) {
			if got := listenerStatus(t, getGateway(t, cl, infraNS, "gateway-with-one-attached-route"), "http").AttachedRoutes; got != 1 {
				t.Errorf("one-attached-route: attachedRoutes = %d, want 1", got)
			}
			if got := listenerStatus(t, getGateway(t, cl, infraNS, "gateway-with-two-attached-routes"), "http").AttachedRoutes; got != 2 {
				t.Errorf("two-attached-routes: attachedRoutes = %d, want 2", got)
			}
			p := ourParent(t, getHTTPRoute(t, cl, infraNS, "http-route-not-accepted").Status.Parents, infraNS, "gateway-with-two-attached-routes")
			wantCondition(t, "http-route-not-accepted", p.Conditions, "Accepted", F, "NoMatchingListenerHostname", 1)

			gw := getGateway(t, cl, infraNS, "unresolved-gateway-with-one-attached-unresolved-route")
			l := listenerStatus(t, gw, "tls")
			if l.AttachedRoutes != 1 {
				t.Errorf("unresolved gateway: attachedRoutes = %d, want 1", l.AttachedRoutes)
			}
			wantCondition(t, "unresolved listener", l.Conditions, "Programmed", F, "", 1)
			wantCondition(t, "unresolved listener", l.Conditions, "ResolvedRefs", F, "", 1)
			p = ourParent(t, getHTTPRoute(t, cl, infraNS, "http-route-4").Status.Parents, infraNS, gw.Name)
			wantCondition(t, "http-route-4", p.Conditions, "ResolvedRefs", F, "BackendNotFound", 1)
		}},
		{"tests/gateway-modify-listeners.yaml", func(t *testing.T, cl client.Client) {
			gw := getGateway(t, cl, infraNS, "gateway-remove-listener")
			for _, name := range []string{"https", "http"} {
				l := listenerStatus(t, gw, name)
				if l.AttachedRoutes != 1 {
					t.Errorf("listener %s: attachedRoutes = %d, want 1", name, l.AttachedRoutes)
				}
				wantCondition(t, name, l.Conditions, "Programmed", T, "Programmed", 1)
			}
		}},
		{"tests/httproute-invalid-cross-namespace-parent-ref.yaml", func(t *testing.T, cl client.Client) {
			r := getHTTPRoute(t, cl, webNS, "invalid-cross-namespace-parent-ref")
			if len(r.Status.Parents) != 1 {
				t.Fatalf("parents = %+v, want exactly one", r.Status.Parents)
			}
			p := r.Status.Parents[0]
			wantCondition(t, "route", p.Conditions, "Accepted", F, "NotAllowedByListeners", 1)
			wantCondition(t, "route", p.Conditions, "ResolvedRefs", T, "ResolvedRefs", 1)
			if got := listenerStatus(t, getGateway(t, cl, infraNS, "same-namespace"), "http").AttachedRoutes; got != 0 {
				t.Errorf("same-namespace attachedRoutes = %d, want 0", got)
			}
		}},
		{"tests/httproute-invalid-cross-namespace-backend-ref.yaml", func(t *testing.T, cl client.Client) {
			p := ourParent(t, getHTTPRoute(t, cl, infraNS, "invalid-cross-namespace-backend-ref").Status.Parents, infraNS, "same-namespace")
			wantCondition(t, "route", p.Conditions, "ResolvedRefs", F, "RefNotPermitted", 1)
			wantCondition(t, "route", p.Conditions, "Accepted", T, "Accepted", 1)
		}},
		{"tests/httproute-invalid-backendref-unknown-kind.yaml", func(t *testing.T, cl client.Client) {
			p := ourParent(t, getHTTPRoute(t, cl, infraNS, "invalid-backend-ref-unknown-kind").Status.Parents, infraNS, "same-namespace")
			wantCondition(t, "route", p.Conditions, "ResolvedRefs", F, "InvalidKind", 1)
		}},
		{"tests/httproute-invalid-nonexistent-backendref.yaml", func(t *testing.T, cl client.Client) {
			p := ourParent(t, getHTTPRoute(t, cl, infraNS, "invalid-nonexistent-backend-ref").Status.Parents, infraNS, "same-namespace")
			wantCondition(t, "route", p.Conditions, "ResolvedRefs", F, "BackendNotFound", 1)
		}},
		{"tests/httproute-invalid-parentref-not-matching-section-name.yaml", func(t *testing.T, cl client.Client) {
			p := ourParent(t, getHTTPRoute(t, cl, infraNS, "httproute-listener-not-matching-section-name").Status.Parents, infraNS, "same-namespace")
			wantCondition(t, "route", p.Conditions, "Accepted", F, "NoMatchingParent", 1)
		}},
		{"tests/httproute-invalid-reference-grant.yaml", func(t *testing.T, cl client.Client) {
			p := ourParent(t, getHTTPRoute(t, cl, infraNS, "reference-grant").Status.Parents, infraNS, "same-namespace")
			wantCondition(t, "route", p.Conditions, "ResolvedRefs", F, "RefNotPermitted", 1)
		}},
		{"tests/httproute-reference-grant.yaml", func(t *testing.T, cl client.Client) {
			p := ourParent(t, getHTTPRoute(t, cl, infraNS, "reference-grant").Status.Parents, infraNS, "same-namespace")
			wantCondition(t, "route", p.Conditions, "ResolvedRefs", T, "ResolvedRefs", 1)
			wantCondition(t, "route", p.Conditions, "Accepted", T, "Accepted", 1)
		}},
		{"tests/httproute-hostname-intersection.yaml", func(t *testing.T, cl client.Client) {
			p := ourParent(t, getHTTPRoute(t, cl, infraNS, "no-intersecting-hosts").Status.Parents, infraNS, "httproute-hostname-intersection")
			wantCondition(t, "no-intersecting-hosts", p.Conditions, "Accepted", F, "NoMatchingListenerHostname", 1)
			p = ourParent(t, getHTTPRoute(t, cl, infraNS, "specific-host-matches-listener-wildcard-host").Status.Parents, infraNS, "httproute-hostname-intersection")
			wantCondition(t, "specific-host-matches-listener-wildcard-host", p.Conditions, "Accepted", T, "Accepted", 1)
		}},
		{"tests/httproute-disallowed-kind.yaml", func(t *testing.T, cl client.Client) {
			p := ourParent(t, getHTTPRoute(t, cl, infraNS, "disallowed-kind").Status.Parents, infraNS, "tlsroutes-only")
			wantCondition(t, "route", p.Conditions, "Accepted", F, "NotAllowedByListeners", 1)
			wantCondition(t, "route", p.Conditions, "ResolvedRefs", T, "ResolvedRefs", 1)
			if got := listenerStatus(t, getGateway(t, cl, infraNS, "tlsroutes-only"), "tls").AttachedRoutes; got != 0 {
				t.Errorf("attachedRoutes = %d, want 0", got)
			}
		}},
		{"tests/tlsroute-listener-passthrough-supported-kinds.yaml", func(t *testing.T, cl client.Client) {
			l := listenerStatus(t, getGateway(t, cl, infraNS, "gateway-tlsroute-passthrough-supported-kind"), "tls-passthrough")
			wantCondition(t, "listener", l.Conditions, "ResolvedRefs", F, "InvalidRouteKinds", 1)
			if got := kindNames(l.SupportedKinds); !slices.Equal(got, []string{"TLSRoute"}) {
				t.Errorf("supportedKinds = %v, want [TLSRoute]", got)
			}
		}},
		{"tests/tlsroute-listener-terminate-not-supported.yaml", func(t *testing.T, cl client.Client) {
			l := listenerStatus(t, getGateway(t, cl, infraNS, "gateway-tlsroute-terminate-unsupported"), "tls-terminate")
			wantCondition(t, "listener", l.Conditions, "Accepted", F, "UnsupportedValue", 1)
		}},
		{"tests/tlsroute-listener-mixed-termination-not-supported.yaml", func(t *testing.T, cl client.Client) {
			gw := getGateway(t, cl, infraNS, "gateway-tlsroute-mixed-termination-not-supported")
			for _, name := range []string{"tls-terminate", "tls-passthrough"} {
				wantCondition(t, name, listenerStatus(t, gw, name).Conditions, "Accepted", F, "ProtocolConflict", 1)
			}
		}},
		{"tests/tlsroute-invalid-no-matching-listener.yaml", func(t *testing.T, cl client.Client) {
			for route, reason := range map[string]string{
				"tlsroute-not-allowed-protocol-http":  "NotAllowedByListeners",
				"tlsroute-not-allowed-protocol-https": "NotAllowedByListeners",
				"tlsroute-no-matching-section-name":   "NoMatchingParent",
			} {
				r := &gwv1.TLSRoute{}
				if err := cl.Get(t.Context(), client.ObjectKey{Namespace: infraNS, Name: route}, r); err != nil {
					t.Fatal(err)
				}
				if len(r.Status.Parents) != 1 {
					t.Fatalf("%s: parents %+v, want one", route, r.Status.Parents)
				}
				wantCondition(t, route, r.Status.Parents[0].Conditions, "Accepted", F, reason, 1)
			}
		}},
		{"tests/grpcroute-listener-hostname-matching.yaml", func(t *testing.T, cl client.Client) {
			gw := getGateway(t, cl, infraNS, "grpcroute-listener-hostname-matching")
			wantCondition(t, "gateway", gw.Status.Conditions, "Programmed", T, "Programmed", 1)
			for _, l := range gw.Status.Listeners {
				if l.AttachedRoutes != 1 {
					t.Errorf("listener %s attachedRoutes = %d, want 1", l.Name, l.AttachedRoutes)
				}
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.manifest, func(t *testing.T) {
			t.Parallel()
			cl := newFakeClient(t, testClass())
			addConformanceSecrets(t, cl)
			loadManifests(t, cl, "base/manifests.yaml", tc.manifest)
			syncTwice(t, newTestController(t, cl, &recorder{}))
			tc.check(t, cl)
		})
	}
}

// TestUpstreamBaseGatewaysReady checks what every upstream test waits for
// first (NamespacesMustBeReady, GatewayAndHTTPRoutesMustBeAccepted): the
// class is Accepted, and the base Gateways are Accepted and Programmed with
// an address, all their listeners Accepted, Programmed and ResolvedRefs.
func TestUpstreamBaseGatewaysReady(t *testing.T) {
	cl := newFakeClient(t, testClass())
	addConformanceSecrets(t, cl)
	loadManifests(t, cl, "base/manifests.yaml")
	rec := &recorder{}
	syncTwice(t, newTestController(t, cl, rec))

	gc := &gwv1.GatewayClass{}
	if err := cl.Get(t.Context(), client.ObjectKey{Name: testClassName}, gc); err != nil {
		t.Fatal(err)
	}
	wantCondition(t, "GatewayClass", gc.Status.Conditions, "Accepted", metav1.ConditionTrue, "Accepted", 1)

	var gws gwv1.GatewayList
	if err := cl.List(t.Context(), &gws); err != nil {
		t.Fatal(err)
	}
	if len(gws.Items) != 4 {
		t.Fatalf("base manifests have %d Gateways, want 4", len(gws.Items))
	}
	for _, gw := range gws.Items {
		wantCondition(t, gw.Name, gw.Status.Conditions, "Accepted", metav1.ConditionTrue, "Accepted", 1)
		wantCondition(t, gw.Name, gw.Status.Conditions, "Programmed", metav1.ConditionTrue, "Programmed", 1)
		if len(gw.Status.Addresses) == 0 {
			t.Errorf("%s has no address", gw.Name)
		}
		for _, l := range gw.Status.Listeners {
			for _, typ := range []string{"Accepted", "Programmed", "ResolvedRefs"} {
				wantCondition(t, gw.Name+"/"+string(l.Name), l.Conditions, typ, metav1.ConditionTrue, "", 1)
			}
		}
	}

	cfg := rec.last()
	if cfg == nil || len(cfg.Gateways) != 4 {
		t.Fatalf("snapshot = %+v, want 4 Gateways", cfg)
	}
	for _, g := range cfg.Gateways {
		if g.Name != "same-namespace-with-https-listener" {
			continue
		}
		if len(g.Listeners) != 4 {
			t.Fatalf("HTTPS gateway has %d listeners in the snapshot, want 4", len(g.Listeners))
		}
		for _, l := range g.Listeners {
			if len(l.Certificates) != 1 {
				t.Errorf("listener %s has %d certificates, want 1", l.Name, len(l.Certificates))
			}
		}
	}
}
