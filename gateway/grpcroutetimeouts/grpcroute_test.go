package grpcroutetimeouts_test

import (
	"context"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatewitness/gatewitness/cluster/store"
	"github.com/gatewitness/gatewitness/crds"
	"github.com/gatewitness/gatewitness/gateway/grpcroutetimeouts"
)

// route returns a GRPCRoute manifest whose first rule has the given
// timeouts block (YAML flow syntax, "" for none) and whose second has none.
func route(name, timeouts string) *unstructured.Unstructured {
	doc := `
apiVersion: gateway.networking.k8s.io/v1
kind: GRPCRoute
metadata: {name: ` + name + `, namespace: default}
spec:
  parentRefs: [{name: gw}]
  rules:
  - backendRefs: [{name: svc, port: 9000}]
`
	if timeouts != "" {
		doc += "    timeouts: " + timeouts + "\n"
	}
	doc += "  - backendRefs: [{name: svc, port: 9001}]\n"
	u := &unstructured.Unstructured{}
	if err := yaml.NewYAMLOrJSONDecoder(strings.NewReader(doc), 4096).Decode(&u.Object); err != nil {
		panic(err)
	}
	return u
}

func newStore(t *testing.T, opts store.Options) *store.Store {
	t.Helper()
	s, err := store.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestStoreKeepsTimeouts creates GRPCRoutes with valid timeouts in the
// store that serves the embedded CRDs (overlay included) and reads the
// fields back through the partial type: they must survive pruning.
func TestStoreKeepsTimeouts(t *testing.T) {
	s := newStore(t, store.Options{})
	ctx := context.Background()
	tests := []struct {
		timeouts string
		want     grpcroutetimeouts.Resolved
	}{
		{"{maxStreamDuration: 1500ms}", grpcroutetimeouts.Resolved{MaxStreamDuration: 1500 * time.Millisecond}},
		{"{maxStreamDuration: 1m30s, strictEnforcement: Deny}", grpcroutetimeouts.Resolved{MaxStreamDuration: 90 * time.Second, StrictDeny: true}},
		{"{maxStreamDuration: 0s, strictEnforcement: Allow}", grpcroutetimeouts.Resolved{}},
		{"{maxStreamDuration: 1ms}", grpcroutetimeouts.Resolved{MaxStreamDuration: time.Millisecond}},
		{"{strictEnforcement: Deny}", grpcroutetimeouts.Resolved{StrictDeny: true}},
		{"{}", grpcroutetimeouts.Resolved{}},
	}
	for i, tc := range tests {
		name := "r" + string(rune('a'+i))
		if err := s.Create(ctx, route(name, tc.timeouts)); err != nil {
			t.Errorf("%s: Create: %v", tc.timeouts, err)
			continue
		}
		got := &unstructured.Unstructured{}
		got.SetAPIVersion("gateway.networking.k8s.io/v1")
		got.SetKind("GRPCRoute")
		if err := s.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, got); err != nil {
			t.Fatal(err)
		}
		view, err := grpcroutetimeouts.DecodeGRPCRoute(got.Object)
		if err != nil {
			t.Fatal(err)
		}
		if len(view.Spec.Rules) != 2 || view.Spec.Rules[0].Timeouts == nil || view.Spec.Rules[1].Timeouts != nil {
			t.Errorf("%s: rules %+v, want the first with timeouts and the second without", tc.timeouts, view.Spec.Rules)
			continue
		}
		res, err := view.Spec.Rules[0].Timeouts.Resolve("spec.rules[0].timeouts")
		if err != nil || res != tc.want {
			t.Errorf("%s: Resolve = %+v, %v; want %+v", tc.timeouts, res, err, tc.want)
		}
	}
}

// TestStoreRejectsBadTimeouts: invalid values fail as on a cluster with the
// overlay CRD, with the field path and the accepted form in the message.
func TestStoreRejectsBadTimeouts(t *testing.T) {
	s := newStore(t, store.Options{})
	tests := []struct {
		name, timeouts string
		want           []string
	}{
		{"unit", "{maxStreamDuration: 10us}", []string{
			`GRPCRoute.gateway.networking.k8s.io "unit" is invalid`,
			`spec.rules[0].timeouts.maxStreamDuration: Invalid value: "10us"`,
			"should match '" + grpcroutetimeouts.DurationPattern + "'",
		}},
		{"text", "{maxStreamDuration: soon}", []string{
			`spec.rules[0].timeouts.maxStreamDuration: Invalid value: "soon"`,
		}},
		{"digits", "{maxStreamDuration: 123456s}", []string{
			`spec.rules[0].timeouts.maxStreamDuration: Invalid value: "123456s"`,
		}},
		{"enum", "{strictEnforcement: allow}", []string{
			`spec.rules[0].timeouts.strictEnforcement: Unsupported value: "allow": supported values: "Allow", "Deny"`,
		}},
	}
	for _, tc := range tests {
		err := s.Create(context.Background(), route(tc.name, tc.timeouts))
		if !apierrors.IsInvalid(err) {
			t.Errorf("%s: error %v, want Invalid", tc.timeouts, err)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error\n%v\nwant it to contain\n%s", tc.timeouts, err, w)
			}
		}
	}
}

// TestStoreCELMinimum exercises the CEL rule on its own. With the GEP-2257
// pattern no value below 1ms can be spelled, so the rule is checked with a
// copy of the overlay CRD whose pattern is removed: "500us" then reaches it.
func TestStoreCELMinimum(t *testing.T) {
	all, err := crds.Load()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range all {
		if c.Name != "grpcroutes.gateway.networking.k8s.io" {
			continue
		}
		for _, v := range c.Spec.Versions {
			timeouts := v.Schema.OpenAPIV3Schema.Properties["spec"].Properties["rules"].Items.Schema.Properties["timeouts"]
			msd := timeouts.Properties["maxStreamDuration"]
			if msd.Pattern == "" || len(msd.XValidations) == 0 {
				t.Fatalf("version %s: maxStreamDuration has no pattern or CEL rule: is the overlay loaded?", v.Name)
			}
			msd.Pattern = ""
			timeouts.Properties["maxStreamDuration"] = msd
			v.Schema.OpenAPIV3Schema.Properties["spec"].Properties["rules"].Items.Schema.Properties["timeouts"] = timeouts
			found = true
		}
	}
	if !found {
		t.Fatal("GRPCRoute CRD not found")
	}
	s := newStore(t, store.Options{CRDs: all})
	ctx := context.Background()
	err = s.Create(ctx, route("tiny", "{maxStreamDuration: 500us}"))
	want := `spec.rules[0].timeouts.maxStreamDuration: Invalid value: "500us": maxStreamDuration must be 0s (no limit) or at least 1ms`
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), want) {
		t.Fatalf("error\n%v\nwant it to contain\n%s", err, want)
	}
	if err := s.Create(ctx, route("one-ms", "{maxStreamDuration: 1000us}")); err != nil {
		t.Errorf("1000us (= 1ms): %v", err)
	}
	if err := s.Create(ctx, route("zero", "{maxStreamDuration: 0us}")); err != nil {
		t.Errorf("0us: %v", err)
	}
}

func TestResolveErrors(t *testing.T) {
	d := func(s string) *gwv1.Duration { v := gwv1.Duration(s); return &v }
	se := func(s string) *grpcroutetimeouts.StrictEnforcement {
		v := grpcroutetimeouts.StrictEnforcement(s)
		return &v
	}
	tests := []struct {
		in   grpcroutetimeouts.GRPCRouteTimeouts
		want string
	}{
		{grpcroutetimeouts.GRPCRouteTimeouts{MaxStreamDuration: d("1.5s")}, `spec.rules[2].timeouts.maxStreamDuration: "1.5s" is not a Gateway API duration; accepted form: 1 to 4 groups of up to 5 digits and a unit h, m, s or ms`},
		{grpcroutetimeouts.GRPCRouteTimeouts{MaxStreamDuration: d("")}, `spec.rules[2].timeouts.maxStreamDuration: "" is not a Gateway API duration`},
		{grpcroutetimeouts.GRPCRouteTimeouts{StrictEnforcement: se("deny")}, `spec.rules[2].timeouts.strictEnforcement: "deny" is not accepted; accepted values are "Allow" and "Deny"`},
	}
	for _, tc := range tests {
		_, err := tc.in.Resolve("spec.rules[2].timeouts")
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("Resolve(%+v) error %v, want prefix %q", tc.in, err, tc.want)
		}
	}
	var nilT *grpcroutetimeouts.GRPCRouteTimeouts
	if got, err := nilT.Resolve("x"); err != nil || got != (grpcroutetimeouts.Resolved{}) {
		t.Errorf("nil Resolve = %+v, %v; want zero, nil", got, err)
	}
}

func TestDecodeGRPCRouteWrongType(t *testing.T) {
	_, err := grpcroutetimeouts.DecodeGRPCRoute(map[string]any{
		"spec": map[string]any{"rules": []any{map[string]any{"timeouts": "10s"}}},
	})
	if err == nil || !strings.Contains(err.Error(), "GRPCRoute timeouts extension") {
		t.Fatalf("error %v, want a decoding error", err)
	}
}
