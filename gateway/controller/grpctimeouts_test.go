package controller

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatewitness/gatewitness/cluster/store"
	"github.com/gatewitness/gatewitness/gateway/grpcroutetimeouts"
)

const timeoutsRoute = `
apiVersion: gateway.networking.k8s.io/v1
kind: GRPCRoute
metadata: {name: timeouts, namespace: ns}
spec:
  parentRefs: [{name: gw}]
  rules:
  - backendRefs: [{name: svc, port: 8080}]
    timeouts: {maxStreamDuration: 1500ms, strictEnforcement: Deny}
  - backendRefs: [{name: svc, port: 8080}]
  - backendRefs: [{name: svc, port: 8080}]
    timeouts: {maxStreamDuration: 0s}
  - backendRefs: [{name: svc, port: 8080}]
    timeouts: {maxStreamDuration: 2m}
`

// TestGRPCRouteTimeoutsCompiled runs a recompute against the in-process
// store (which serves the overlay CRD) and checks that every rule's
// GEP-3139 fields reach the data plane snapshot.
func TestGRPCRouteTimeoutsCompiled(t *testing.T) {
	st, err := store.New(store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	u := &unstructured.Unstructured{}
	if err := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(timeoutsRoute), 4096).Decode(&u.Object); err != nil {
		t.Fatal(err)
	}
	for _, obj := range []client.Object{testClass(), namespace(ns, nil),
		service(ns, "svc", corev1.ServicePort{Name: "grpc", Port: 8080}),
		gateway("gw", listener("http", 80, gwv1.HTTPProtocolType, "")), u} {
		if err := st.Create(ctx, obj); err != nil {
			t.Fatalf("creating %s: %v", obj.GetName(), err)
		}
	}

	rec := &recorder{}
	syncTwice(t, newTestController(t, st, rec))
	cfg := rec.last()
	if cfg == nil || len(cfg.Gateways) != 1 || len(cfg.Gateways[0].Listeners) != 1 || len(cfg.Gateways[0].Listeners[0].GRPCRoutes) != 1 {
		t.Fatalf("snapshot %+v, want one gateway with one listener serving the GRPCRoute", cfg)
	}
	var got []limits
	for _, r := range cfg.Gateways[0].Listeners[0].GRPCRoutes[0].Rules {
		got = append(got, limits{r.MaxStreamDuration, r.StrictDeny})
	}
	want := []limits{{1500 * time.Millisecond, true}, {0, false}, {0, false}, {2 * time.Minute, false}}
	if len(got) != len(want) {
		t.Fatalf("rules %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("rule %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

type limits struct {
	d    time.Duration
	deny bool
}

// TestGRPCRouteTimeoutsInvalid: a value the overlay CRD rejects, met in a
// store that did not validate it, rejects the route naming the field.
func TestGRPCRouteTimeoutsInvalid(t *testing.T) {
	r := grpcRoute("bad", time.Unix(0, 0), []gwv1.ParentReference{parentRef("gw")})
	r.Spec.Rules = append(r.Spec.Rules, r.Spec.Rules[0])
	bad := gwv1.Duration("1.5s")
	o := &objects{grpcExt: map[types.NamespacedName]*grpcroutetimeouts.GRPCRoute{
		{Namespace: ns, Name: "bad"}: {Spec: grpcroutetimeouts.GRPCRouteSpec{Rules: []grpcroutetimeouts.GRPCRouteRule{{}, {Timeouts: &grpcroutetimeouts.GRPCRouteTimeouts{MaxStreamDuration: &bad}}}}},
	}}
	rules, _, unsupported := o.compileGRPCRoute(r)
	if unsupported.Reason != string(gwv1.RouteReasonUnsupportedValue) ||
		!strings.Contains(unsupported.Message, `spec.rules[1].timeouts.maxStreamDuration: "1.5s" is not a Gateway API duration`) {
		t.Errorf("unsupported = %+v, want UnsupportedValue naming spec.rules[1].timeouts.maxStreamDuration", unsupported)
	}
	if len(rules) != 2 || rules[1].MaxStreamDuration != 0 {
		t.Errorf("rules %+v, want two without a limit", rules)
	}
}

// TestGRPCRouteTimeoutsFakeClient: the typed fake client (which cannot hold
// the extension) still serves GRPCRoutes through the unstructured list.
func TestGRPCRouteTimeoutsFakeClient(t *testing.T) {
	r := grpcRoute("plain", time.Unix(0, 0), []gwv1.ParentReference{parentRef("gw")})
	_, rec := setup(t, gateway("gw", listener("http", 80, gwv1.HTTPProtocolType, "")), r)
	cfg := rec.last()
	if cfg == nil || len(cfg.Gateways) != 1 || len(cfg.Gateways[0].Listeners[0].GRPCRoutes) != 1 {
		t.Fatalf("snapshot %+v, want the GRPCRoute served", cfg)
	}
	if rule := cfg.Gateways[0].Listeners[0].GRPCRoutes[0].Rules[0]; rule.MaxStreamDuration != 0 || rule.StrictDeny {
		t.Errorf("rule %+v, want no limit", rule)
	}
}

// TestGRPCRouteFilters: GRPCRoute filters reach the snapshot as GRPCRoute
// filters, a rule's and a backendRef's, with each RequestMirror's backend
// resolved; a type the GRPCRoute API does not have makes the route
// unsupported, and an ExtensionRef makes the rule unservable.
func TestGRPCRouteFilters(t *testing.T) {
	mirrorPort := gwv1.PortNumber(80)
	r := grpcRoute("f", time.Unix(0, 0), []gwv1.ParentReference{parentRef("gw")})
	r.Spec.Rules[0].Filters = []gwv1.GRPCRouteFilter{
		{Type: gwv1.GRPCRouteFilterRequestHeaderModifier, RequestHeaderModifier: &gwv1.HTTPHeaderFilter{Remove: []string{"x-a"}}},
		{Type: gwv1.GRPCRouteFilterRequestMirror, RequestMirror: &gwv1.HTTPRequestMirrorFilter{
			BackendRef: gwv1.BackendObjectReference{Name: "mirror", Port: &mirrorPort}}},
	}
	r.Spec.Rules[0].BackendRefs[0].Filters = []gwv1.GRPCRouteFilter{
		{Type: gwv1.GRPCRouteFilterResponseHeaderModifier, ResponseHeaderModifier: &gwv1.HTTPHeaderFilter{Remove: []string{"x-b"}}},
	}
	o := &objects{}
	rules, _, unsupported := o.compileGRPCRoute(r)
	if unsupported.isSet() {
		t.Errorf("unsupported = %+v, want none", unsupported)
	}
	if len(rules) != 1 || len(rules[0].Filters) != 2 || len(rules[0].Backends) != 1 || len(rules[0].Backends[0].Filters) != 1 {
		t.Fatalf("rules = %+v, want one rule with two filters and one backend with one", rules)
	}
	rule := rules[0]
	if f := rule.Filters[0]; f.Type != gwv1.GRPCRouteFilterRequestHeaderModifier || f.RequestHeaderModifier == nil || f.Mirror != nil {
		t.Errorf("rule filter 0 = %+v, want the RequestHeaderModifier as written", f)
	}
	if f := rule.Filters[1]; f.Type != gwv1.GRPCRouteFilterRequestMirror || f.Mirror == nil || f.Mirror.Name != ns+"/mirror:80" {
		t.Errorf("rule filter 1 = %+v, want the RequestMirror with its backend resolved", f)
	}
	if f := rule.Backends[0].Filters[0]; f.Type != gwv1.GRPCRouteFilterResponseHeaderModifier || f.ResponseHeaderModifier == nil {
		t.Errorf("backendRef filter = %+v, want the ResponseHeaderModifier as written", f)
	}

	wrong := grpcRoute("wrong", time.Unix(0, 0), []gwv1.ParentReference{parentRef("gw")})
	wrong.Spec.Rules[0].Filters = []gwv1.GRPCRouteFilter{{Type: "URLRewrite"}}
	rules, _, unsupported = o.compileGRPCRoute(wrong)
	if unsupported.Reason != string(gwv1.RouteReasonUnsupportedValue) || !strings.Contains(unsupported.Message, `filter type "URLRewrite"`) {
		t.Errorf("unsupported = %+v, want UnsupportedValue naming the URLRewrite filter", unsupported)
	}
	if len(rules) != 1 || len(rules[0].Filters) != 0 {
		t.Errorf("rules = %+v, want the unknown filter left out", rules)
	}

	ext := grpcRoute("ext", time.Unix(0, 0), []gwv1.ParentReference{parentRef("gw")})
	ext.Spec.Rules[0].Filters = []gwv1.GRPCRouteFilter{{Type: gwv1.GRPCRouteFilterExtensionRef,
		ExtensionRef: &gwv1.LocalObjectReference{Group: "ex.com", Kind: "Magic", Name: "m"}}}
	rules, unresolved, _ := o.compileGRPCRoute(ext)
	if unresolved.Reason != string(gwv1.RouteReasonInvalidKind) {
		t.Errorf("unresolved = %+v, want InvalidKind", unresolved)
	}
	if len(rules) != 1 || len(rules[0].Backends) != 1 || !rules[0].Backends[0].Invalid || len(rules[0].Filters) != 0 {
		t.Errorf("rules = %+v, want the rule served by one invalid backend", rules)
	}
}
