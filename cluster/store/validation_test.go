package store_test

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatewitness/gatewitness/crds"
)

// The expected messages below are what a cluster with the v1.6.3 CRDs
// returns in its Status (kubectl prints the same text after "The HTTPRoute
// ... is invalid"). They are assembled from three facts, not copied from the
// store: the CRD's own pattern and CEL message (read from the CRD here), the
// kube-openapi wording "<path> in body should match '<pattern>'" and
// "Required value" that the API server's CRD validation produces, and
// apierrors.NewInvalid's "<Kind>.<group> \"<name>\" is invalid: " prefix with
// "[a, b]" for several causes. The blocking-error sentence is the one the
// apiextensions-apiserver adds when CEL rules are skipped.

const badDuration = `
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: bad-timeout, namespace: default}
spec:
  parentRefs: [{name: gw}]
  rules:
  - timeouts: {request: "abc"}
    backendRefs: [{name: svc, port: 8080}]
`

const missingRequired = `
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: no-name, namespace: default}
spec:
  parentRefs: [{name: gw}]
  rules:
  - backendRefs: [{port: 8080}]
`

// crdPattern reads the pattern of HTTPRoute spec.rules[].timeouts.request
// from the embedded CRD.
func crdPattern(t *testing.T) string {
	t.Helper()
	all, err := crds.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range all {
		if c.Name != "httproutes.gateway.networking.k8s.io" {
			continue
		}
		for _, v := range c.Spec.Versions {
			if v.Name != "v1" {
				continue
			}
			p := v.Schema.OpenAPIV3Schema.Properties["spec"].Properties["rules"].Items.Schema.Properties["timeouts"].Properties["request"].Pattern
			if p == "" {
				t.Fatal("HTTPRoute v1 timeouts.request has no pattern in the CRD")
			}
			return p
		}
	}
	t.Fatal("HTTPRoute CRD not found")
	return ""
}

func TestValidationInvalidDuration(t *testing.T) {
	s := newStore(t)
	err := s.Create(context.Background(), fromYAML(t, badDuration))
	want := `HTTPRoute.gateway.networking.k8s.io "bad-timeout" is invalid: spec.rules[0].timeouts.request: Invalid value: "abc": ` +
		`spec.rules[0].timeouts.request in body should match '` + crdPattern(t) + `'`
	if !apierrors.IsInvalid(err) || err.Error() != want {
		t.Fatalf("error =\n%v\nwant\n%s", err, want)
	}
	status := err.(apierrors.APIStatus).Status()
	if len(status.Details.Causes) != 1 || status.Details.Causes[0].Field != "spec.rules[0].timeouts.request" {
		t.Fatalf("causes = %+v, want one for spec.rules[0].timeouts.request", status.Details.Causes)
	}
}

func TestValidationMissingRequiredField(t *testing.T) {
	s := newStore(t)
	err := s.Create(context.Background(), fromYAML(t, missingRequired))
	want := `HTTPRoute.gateway.networking.k8s.io "no-name" is invalid: [spec.rules[0].backendRefs[0].name: Required value, ` +
		`<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation]`
	if !apierrors.IsInvalid(err) || err.Error() != want {
		t.Fatalf("error =\n%v\nwant\n%s", err, want)
	}
}

func TestValidationCEL(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	// A CEL rule of the CRD: backendRequest may not exceed request.
	u := fromYAML(t, strings.Replace(badDuration, `request: "abc"`, `request: "1s", backendRequest: "2s"`, 1))
	err := s.Create(ctx, u)
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.rules[0].timeouts: Invalid value: backendRequest timeout cannot be longer than request timeout") {
		t.Fatalf("CEL violation error = %v", err)
	}

	// The same rule on update.
	ok := fromYAML(t, strings.Replace(badDuration, `request: "abc"`, `request: "1s"`, 1))
	if err := s.Create(ctx, ok); err != nil {
		t.Fatal(err)
	}
	rules, _, _ := unstructured.NestedSlice(ok.Object, "spec", "rules")
	rules[0].(map[string]any)["timeouts"] = map[string]any{"request": "1s", "backendRequest": "5s"}
	_ = unstructured.SetNestedSlice(ok.Object, rules, "spec", "rules")
	err = s.Update(ctx, ok)
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "backendRequest timeout cannot be longer than request timeout") {
		t.Fatalf("CEL on update error = %v", err)
	}
}

func TestValidationTransitionRule(t *testing.T) {
	// GatewayClass spec.controllerName is immutable through a rule on oldSelf.
	s := newStore(t)
	ctx := context.Background()
	gc := &gatewayv1.GatewayClass{}
	gc.Name = "gc"
	gc.Spec.ControllerName = "example.com/one"
	mustCreate(t, s, gc)
	gc.Spec.ControllerName = "example.com/two"
	err := s.Update(ctx, gc)
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), `spec.controllerName: Invalid value: "example.com/two": Value is immutable`) {
		t.Fatalf("changing controllerName error = %v", err)
	}
}

func TestPruningAndDefaults(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	u := fromYAML(t, `
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: d, namespace: default}
spec:
  unknownField: dropped
  parentRefs: [{name: gw}]
  rules:
  - backendRefs: [{name: svc, port: 8080}]
`)
	mustCreate(t, s, u)
	if _, has, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "unknownField"); has {
		t.Fatal("unknown field was not pruned")
	}
	r := &gatewayv1.HTTPRoute{}
	if err := s.Get(ctx, client.ObjectKeyFromObject(u), r); err != nil {
		t.Fatal(err)
	}
	m := r.Spec.Rules[0].Matches
	if len(m) != 1 || m[0].Path == nil || *m[0].Path.Type != gatewayv1.PathMatchPathPrefix || *m[0].Path.Value != "/" {
		t.Fatalf("default rule matches = %+v, want one PathPrefix /", m)
	}
	if g := r.Spec.ParentRefs[0].Group; g == nil || *g != gatewayv1.GroupName {
		t.Fatalf("parentRef group default = %v", g)
	}
	if br := r.Spec.Rules[0].BackendRefs[0]; br.Kind == nil || *br.Kind != "Service" || br.Weight == nil || *br.Weight != 1 {
		t.Fatalf("backendRef defaults = kind %v weight %v", br.Kind, br.Weight)
	}

	gw := fromYAML(t, `
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: default}
spec:
  gatewayClassName: gc
  listeners: [{name: http, port: 80, protocol: HTTP}]
`)
	mustCreate(t, s, gw)
	listeners, _, _ := unstructured.NestedSlice(gw.Object, "spec", "listeners")
	ns, _, _ := unstructured.NestedString(listeners[0].(map[string]any), "allowedRoutes", "namespaces", "from")
	if ns != "Same" {
		t.Fatalf("listener allowedRoutes.namespaces.from = %q, want the CRD default Same", ns)
	}
}

func TestValidationMetadataName(t *testing.T) {
	s := newStore(t)
	r := httpRoute("default", "Not_Valid")
	err := s.Create(context.Background(), r)
	if !apierrors.IsInvalid(err) || !strings.HasPrefix(err.Error(), `HTTPRoute.gateway.networking.k8s.io "Not_Valid" is invalid: metadata.name: Invalid value: "Not_Valid": a lowercase RFC 1123 subdomain must consist of`) {
		t.Fatalf("bad name error = %v", err)
	}
}

// TestStatusWriteRunsStatusRules checks that a write of the status
// subresource is still held to the CEL rules of the status: a Gateway's
// status.addresses[] rule rejects a Hostname address that is not one.
func TestStatusWriteRunsStatusRules(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	gw := &gatewayv1.Gateway{}
	gw.Namespace, gw.Name = "default", "gw"
	gw.Spec.GatewayClassName = "gc"
	gw.Spec.Listeners = []gatewayv1.Listener{{Name: "http", Port: 80, Protocol: gatewayv1.HTTPProtocolType}}
	mustCreate(t, s, gw)
	hostname := gatewayv1.HostnameAddressType
	gw.Status.Addresses = []gatewayv1.GatewayStatusAddress{{Type: &hostname, Value: "Not A Hostname!"}}
	err := s.Status().Update(ctx, gw)
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "status.addresses[0]: Invalid value") {
		t.Fatalf("status write with a bad Hostname address: error = %v, want Invalid at status.addresses[0]", err)
	}
	gw.Status.Addresses[0].Value = "gw.example.com"
	if err := s.Status().Update(ctx, gw); err != nil {
		t.Fatalf("status write with a good Hostname address: %v", err)
	}
}

// TestStatusWritePrunesAndDefaults checks that a write of the status
// subresource prunes unknown fields of the status, applies the defaults
// inside it (a Gateway's status.addresses[].type) and the default of status
// itself when the write has none, and keeps the stored spec.
func TestStatusWritePrunesAndDefaults(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	gw := fromYAML(t, `
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: default}
spec:
  gatewayClassName: gc
  listeners: [{name: http, port: 80, protocol: HTTP}]
`)
	mustCreate(t, s, gw)
	_ = unstructured.SetNestedField(gw.Object, map[string]any{
		"addresses":  []any{map[string]any{"value": "10.0.0.1", "unknownField": "dropped"}},
		"unknownTop": "dropped",
	}, "status")
	_ = unstructured.SetNestedField(gw.Object, "changed", "spec", "gatewayClassName")
	if err := s.Status().Update(ctx, gw); err != nil {
		t.Fatal(err)
	}
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(gw.GroupVersionKind())
	if err := s.Get(ctx, client.ObjectKeyFromObject(gw), got); err != nil {
		t.Fatal(err)
	}
	addrs, _, _ := unstructured.NestedSlice(got.Object, "status", "addresses")
	if len(addrs) != 1 || addrs[0].(map[string]any)["type"] != "IPAddress" || addrs[0].(map[string]any)["unknownField"] != nil {
		t.Fatalf("status.addresses = %v, want one with the default type IPAddress and no unknownField", addrs)
	}
	if _, has, _ := unstructured.NestedFieldNoCopy(got.Object, "status", "unknownTop"); has {
		t.Fatal("status.unknownTop was not pruned")
	}
	if c, _, _ := unstructured.NestedString(got.Object, "spec", "gatewayClassName"); c != "gc" {
		t.Fatalf("spec.gatewayClassName = %q after a status write, want the stored gc", c)
	}

	delete(got.Object, "status")
	if err := s.Status().Update(ctx, got); err != nil {
		t.Fatal(err)
	}
	conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
	if len(conds) != 2 || conds[0].(map[string]any)["reason"] != "Pending" {
		t.Fatalf("status.conditions after a write without status = %v, want the CRD's default (two Pending)", conds)
	}
}

// TestStatusWriteChecksListMaps checks that a status write is refused when
// its status breaks a list-map key (two conditions of one type), as a
// cluster refuses it, and accepted once the duplicate is gone.
func TestStatusWriteChecksListMaps(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	gw := &gatewayv1.Gateway{}
	gw.Namespace, gw.Name = "default", "gw"
	gw.Spec.GatewayClassName = "gc"
	gw.Spec.Listeners = []gatewayv1.Listener{{Name: "http", Port: 80, Protocol: gatewayv1.HTTPProtocolType}}
	mustCreate(t, s, gw)
	cond := metav1.Condition{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted", LastTransitionTime: metav1.Now()}
	gw.Status.Conditions = []metav1.Condition{cond, cond}
	err := s.Status().Update(ctx, gw)
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "status.conditions[1]: Duplicate value") {
		t.Fatalf("status write with two Accepted conditions: error = %v, want Invalid with status.conditions[1]: Duplicate value", err)
	}
	gw.Status.Conditions = gw.Status.Conditions[:1]
	if err := s.Status().Update(ctx, gw); err != nil {
		t.Fatalf("status write with one Accepted condition: %v", err)
	}
}
