package controller

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// TestOnlyStatusChanged checks the filter that keeps the controller's own
// status writes (and anyone's) from scheduling a recompute: a change of
// status or resourceVersion alone passes, any other change does not.
func TestOnlyStatusChanged(t *testing.T) {
	base := httpRoute(ns, "r", t0, []gwv1.ParentReference{parentRef("gw")}, "a.example.com")
	base.ResourceVersion = "1"
	for _, tc := range []struct {
		name   string
		change func(r *gwv1.HTTPRoute)
		want   bool
	}{
		{"status and resourceVersion", func(r *gwv1.HTTPRoute) {
			r.ResourceVersion = "2"
			r.Status.Parents = []gwv1.RouteParentStatus{{ParentRef: parentRef("gw"), ControllerName: testControllerName}}
		}, true},
		{"managed fields", func(r *gwv1.HTTPRoute) { r.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "m"}} }, true},
		{"spec", func(r *gwv1.HTTPRoute) { r.Spec.Hostnames = append(r.Spec.Hostnames, "b.example.com") }, false},
		{"generation", func(r *gwv1.HTTPRoute) { r.Generation++ }, false},
		{"labels", func(r *gwv1.HTTPRoute) { r.Labels = map[string]string{"x": "y"} }, false},
		{"deletion", func(r *gwv1.HTTPRoute) { now := metav1.Now(); r.DeletionTimestamp = &now }, false},
	} {
		cur := base.DeepCopy()
		tc.change(cur)
		before := cur.DeepCopy()
		if got := onlyStatusChanged(base, cur); got != tc.want {
			t.Errorf("typed, %s: onlyStatusChanged = %v, want %v", tc.name, got, tc.want)
		}
		if !reflect.DeepEqual(cur, before) || base.ResourceVersion != "1" || base.Status.Parents != nil {
			t.Errorf("typed, %s: onlyStatusChanged changed the cached objects", tc.name)
		}
	}

	// GRPCRoutes are read unstructured.
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "gateway.networking.k8s.io/v1", "kind": "GRPCRoute",
		"metadata": map[string]any{"name": "g", "namespace": ns, "resourceVersion": "1"},
		"spec":     map[string]any{"hostnames": []any{"a.example.com"}},
	}}
	statusOnly := u.DeepCopy()
	statusOnly.SetResourceVersion("2")
	statusOnly.Object["status"] = map[string]any{"parents": []any{}}
	specToo := statusOnly.DeepCopy()
	specToo.Object["spec"] = map[string]any{"hostnames": []any{"b.example.com"}}
	if !onlyStatusChanged(u, statusOnly) || onlyStatusChanged(u, specToo) {
		t.Errorf("unstructured: status only %v (want true), spec too %v (want false)", onlyStatusChanged(u, statusOnly), onlyStatusChanged(u, specToo))
	}
	if u.GetResourceVersion() != "1" {
		t.Error("onlyStatusChanged changed the cached object")
	}
}
