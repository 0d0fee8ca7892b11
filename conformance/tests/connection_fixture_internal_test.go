package tests

import (
	"io/fs"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestRenamedConnObjects checks that a test's copy of the connection
// timeouts manifest has every object, and every reference between them,
// named after the test's Gateway, so that parallel tests share nothing.
func TestRenamedConnObjects(t *testing.T) {
	raw, err := fs.ReadFile(Manifests, connManifest)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := renamedConnObjects(raw, "gatewitness-conn-x", "example.com/controller")
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]bool{}
	for _, o := range objs {
		u := o.(*unstructured.Unstructured)
		kinds[u.GetKind()] = true
		if u.GetName() != "gatewitness-conn-x" {
			t.Errorf("%s is named %q", u.GetKind(), u.GetName())
		}
		str := func(path ...string) string {
			v, _, _ := unstructured.NestedString(u.Object, path...)
			return v
		}
		switch u.GetKind() {
		case "GatewayClass":
			if str("spec", "parametersRef", "name") != "gatewitness-conn-x" || str("spec", "controllerName") != "example.com/controller" {
				t.Errorf("GatewayClass spec = %v", u.Object["spec"])
			}
		case "Service":
			if str("spec", "selector", "app") != "gatewitness-conn-x" {
				t.Errorf("Service selector = %v", u.Object["spec"])
			}
		case "Deployment":
			if str("spec", "selector", "matchLabels", "app") != "gatewitness-conn-x" || str("spec", "template", "metadata", "labels", "app") != "gatewitness-conn-x" {
				t.Errorf("Deployment labels = %v", u.Object["spec"])
			}
		case "HTTPRoute":
			refs, _, _ := unstructured.NestedSlice(u.Object, "spec", "parentRefs")
			rules, _, _ := unstructured.NestedSlice(u.Object, "spec", "rules")
			if len(refs) != 1 || refs[0].(map[string]any)["name"] != "gatewitness-conn-x" || len(rules) != 1 {
				t.Fatalf("HTTPRoute spec = %v", u.Object["spec"])
			}
			backends := rules[0].(map[string]any)["backendRefs"].([]any)
			if backends[0].(map[string]any)["name"] != "gatewitness-conn-x" {
				t.Errorf("HTTPRoute backendRefs = %v", backends)
			}
			hosts, _, _ := unstructured.NestedStringSlice(u.Object, "spec", "hostnames")
			if len(hosts) != 1 || hosts[0] != "gatewitness-conn-x.gatewitness.test" {
				t.Errorf("HTTPRoute hostnames = %v; want the copy's own, gatewitness-conn-x.gatewitness.test", hosts)
			}
		}
	}
	for _, k := range []string{"ConfigMap", "GatewayClass", "HTTPRoute", "Service", "Deployment"} {
		if !kinds[k] {
			t.Errorf("no %s in the copy", k)
		}
	}
	if _, err := renamedConnObjects([]byte("apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\n"), "n", "c"); err == nil {
		t.Error("an object of an unknown kind was renamed without complaint")
	}
}
