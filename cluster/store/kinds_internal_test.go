package store

import (
	"context"
	"slices"
	"testing"

	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/model"
	"k8s.io/apimachinery/pkg/runtime/schema"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/common"
)

// TestStatusOnlyCELAgrees evaluates status writes, good and bad, with the
// full CEL validator of the CRD and with the one status writes use, and
// wants the same errors from both. The writes change status only, over
// objects as the store keeps them (created through it, so defaulted and
// valid), whose spec gives the spec rules something to check.
func TestStatusOnlyCELAgrees(t *testing.T) {
	s, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	spec := map[string]map[string]any{
		"Gateway": {"gatewayClassName": "gc", "listeners": []any{map[string]any{"name": "http", "port": int64(80), "protocol": "HTTP"}}},
		"HTTPRoute": {"parentRefs": []any{map[string]any{"name": "gw"}}, "rules": []any{map[string]any{
			"matches":     []any{map[string]any{"path": map[string]any{"type": "PathPrefix", "value": "/a"}}},
			"backendRefs": []any{map[string]any{"name": "svc", "port": int64(80)}},
		}}},
		"GatewayClass": {"controllerName": "example.com/gc"},
	}
	statuses := []map[string]any{
		{},
		{"addresses": []any{map[string]any{"type": "Hostname", "value": "gw.example.com"}}},
		{"addresses": []any{map[string]any{"type": "Hostname", "value": "Not A Hostname!"}}},
		{"parents": []any{map[string]any{"parentRef": map[string]any{"name": "gw"}, "controllerName": "example.com/gc", "conditions": []any{}}}},
	}
	sawErrors := false
	for kind, sp := range spec {
		info := s.kinds[schema.GroupKind{Group: "gateway.networking.k8s.io", Kind: kind}]
		vs := info.schemas[info.storageVersion]
		if kind != "GatewayClass" && vs.statusCEL == vs.cel {
			t.Errorf("%s: status writes use the full CEL validator; want the status-only one", kind)
		}
		if kind == "GatewayClass" && vs.statusCEL != vs.cel {
			t.Errorf("GatewayClass has a transition rule in spec; status writes must use the full validator")
		}
		obj := map[string]any{
			"apiVersion": schema.GroupVersion{Group: info.gk.Group, Version: info.storageVersion}.String(),
			"kind":       kind,
			"metadata":   map[string]any{"name": "x", "namespace": "default"},
			"spec":       sp,
		}
		gvk := info.gk.WithVersion(info.storageVersion)
		if _, err := s.create(context.Background(), info, gvk, obj, false, false); err != nil {
			t.Fatalf("creating %s: %v", kind, err)
		}
		key := objKey{"default", "x"}
		if !info.namespaced {
			key.namespace = ""
		}
		old := s.objects[info.gk][key]
		for _, st := range statuses {
			cur := copyMap(old)
			cur["status"] = st
			run := func(v *cel.Validator, sts *structuralschema.Structural) []string {
				correlated := common.NewCorrelatedObject(cur, old, &model.Structural{Structural: vs.structural})
				errs, _ := v.Validate(context.Background(), nil, sts, cur, old, celconfig.RuntimeCELCostBudget, cel.WithRatcheting(correlated))
				var out []string
				for _, e := range errs {
					out = append(out, e.Error())
				}
				return out
			}
			full, trimmed := run(vs.cel, vs.structural), run(vs.statusCEL, vs.statusStructural)
			if len(full) > 0 {
				sawErrors = true
			}
			if !slices.Equal(full, trimmed) {
				t.Errorf("%s status %v: full validator says %q, status-only says %q", kind, st, full, trimmed)
			}
		}
	}
	if !sawErrors {
		t.Error("no status write was rejected: the table needs one that breaks a status rule")
	}
}
