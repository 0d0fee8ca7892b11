package crds_test

import (
	"strings"
	"testing"
	"testing/fstest"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/gatewitness/gatewitness/crds"
)

func TestLoadEmbedded(t *testing.T) {
	all, err := crds.Load()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{
		"backendtlspolicies.gateway.networking.k8s.io":        false,
		"gatewayclasses.gateway.networking.k8s.io":            false,
		"gateways.gateway.networking.k8s.io":                  false,
		"grpcroutes.gateway.networking.k8s.io":                false,
		"httproutes.gateway.networking.k8s.io":                false,
		"listenersets.gateway.networking.k8s.io":              false,
		"referencegrants.gateway.networking.k8s.io":           false,
		"tcproutes.gateway.networking.k8s.io":                 false,
		"tlsroutes.gateway.networking.k8s.io":                 false,
		"udproutes.gateway.networking.k8s.io":                 false,
		"xbackendtrafficpolicies.gateway.networking.x-k8s.io": false,
		"xbackends.gateway.networking.x-k8s.io":               false,
		"xmeshes.gateway.networking.x-k8s.io":                 false,
	}
	for _, c := range all {
		if _, ok := want[c.Name]; !ok {
			t.Errorf("unexpected CRD %s", c.Name)
		}
		want[c.Name] = true
		if got := c.Annotations["gateway.networking.k8s.io/channel"]; got != "experimental" {
			t.Errorf("%s: channel annotation %q, want experimental", c.Name, got)
		}
		if got := c.Annotations["gateway.networking.k8s.io/bundle-version"]; got != "v1.6.3" {
			t.Errorf("%s: bundle-version annotation %q, want v1.6.3", c.Name, got)
		}
	}
	for name, seen := range want {
		if !seen {
			t.Errorf("CRD %s missing", name)
		}
	}
}

func TestLoadReturnsCopies(t *testing.T) {
	a, err := crds.Load()
	if err != nil {
		t.Fatal(err)
	}
	a[0].Spec.Group = "mutated.example.com"
	b, err := crds.Load()
	if err != nil {
		t.Fatal(err)
	}
	if b[0].Spec.Group == "mutated.example.com" {
		t.Fatal("Load returned a shared CRD: a caller's change leaked into the next Load")
	}
}

const crdDoc = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names: {kind: Widget, plural: widgets}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object}
`

func TestParseAndOverlay(t *testing.T) {
	fsys := fstest.MapFS{
		"a.yaml":          {Data: []byte("---\n" + crdDoc + "---\n")},
		"ignored.txt":     {Data: []byte("not yaml")},
		"ov/widgets.yaml": {Data: []byte(strings.Replace(crdDoc, "scope: Namespaced", "scope: Cluster", 1))},
	}
	base, err := crds.ParseDir(fsys, ".")
	if err != nil {
		t.Fatal(err)
	}
	if len(base) != 1 || base[0].Spec.Scope != "Namespaced" {
		t.Fatalf("ParseDir = %d CRDs, want 1 namespaced Widget", len(base))
	}
	ov, err := crds.ParseDir(fsys, "ov")
	if err != nil {
		t.Fatal(err)
	}
	got := crds.Overlay(base, ov)
	if len(got) != 1 || got[0].Spec.Scope != "Cluster" {
		t.Fatalf("Overlay did not replace the CRD of the same name: %+v", got)
	}
}

func TestParseRejectsOtherKinds(t *testing.T) {
	_, err := crds.Parse([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"))
	if err == nil || !strings.Contains(err.Error(), `kind "ConfigMap"`) {
		t.Fatalf("Parse(ConfigMap) error = %v, want one naming the kind", err)
	}
}

// TestChannel: the channel of a list of CRDs is their channel annotation;
// a mix of channels, or no annotated CRD, is an error naming it.
func TestChannel(t *testing.T) {
	crd := func(name, channel string) *apiextensionsv1.CustomResourceDefinition {
		c := &apiextensionsv1.CustomResourceDefinition{}
		c.Name = name
		if channel != "" {
			c.Annotations = map[string]string{crds.ChannelAnnotation: channel}
		}
		return c
	}
	embedded, err := crds.Load()
	if err != nil {
		t.Fatal(err)
	}
	if got, err := crds.Channel(embedded); err != nil || got != "experimental" {
		t.Errorf("Channel(the embedded CRDs) = %q, %v; want experimental", got, err)
	}
	if got, err := crds.Channel([]*apiextensionsv1.CustomResourceDefinition{crd("a", "standard"), crd("overlay", ""), crd("b", "standard")}); err != nil || got != "standard" {
		t.Errorf("Channel(standard CRDs and an unannotated one) = %q, %v; want standard", got, err)
	}
	for _, tt := range []struct {
		name string
		list []*apiextensionsv1.CustomResourceDefinition
		want string
	}{
		{"mixed", []*apiextensionsv1.CustomResourceDefinition{crd("a", "standard"), crd("b", "experimental")}, "b is of the experimental channel"},
		{"none", []*apiextensionsv1.CustomResourceDefinition{crd("a", "")}, "no CRD has the annotation " + crds.ChannelAnnotation},
	} {
		if got, err := crds.Channel(tt.list); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Channel = %q, %v; want an error containing %q", tt.name, got, err, tt.want)
		}
	}
}
