package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatewitness/gatewitness/crds"
)

// repoCRDs is the crds directory seen from this package's directory.
const repoCRDs = "../../crds"

// TestCommittedOverlayIsCurrent regenerates the overlay from the committed
// upstream CRD and compares it with the committed overlay, byte for byte.
func TestCommittedOverlayIsCurrent(t *testing.T) {
	if err := run(repoCRDs, true); err != nil {
		t.Fatal(err)
	}
}

func TestOverlayIsDeterministic(t *testing.T) {
	upstream, err := os.ReadFile(filepath.Join(repoCRDs, grpcRouteFile))
	if err != nil {
		t.Fatal(err)
	}
	a, err := GRPCRouteOverlay(upstream, "x")
	if err != nil {
		t.Fatal(err)
	}
	b, err := GRPCRouteOverlay(upstream, "x")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Fatal("two runs on the same input gave different output")
	}
}

// TestOverlaySchema decodes the generated overlay as crds.Load does and
// checks the new fields in every version, and that the rest of the rule
// schema is upstream's.
func TestOverlaySchema(t *testing.T) {
	upstream, err := os.ReadFile(filepath.Join(repoCRDs, grpcRouteFile))
	if err != nil {
		t.Fatal(err)
	}
	out, err := GRPCRouteOverlay(upstream, "x")
	if err != nil {
		t.Fatal(err)
	}
	got, err := crds.Parse(out)
	if err != nil {
		t.Fatal(err)
	}
	base, err := crds.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || len(base) != 1 {
		t.Fatalf("documents: overlay %d, upstream %d; want 1 each", len(got), len(base))
	}
	if got[0].Annotations[overlayAnnotation] == "" {
		t.Errorf("annotation %s missing", overlayAnnotation)
	}
	if len(got[0].Spec.Versions) != len(base[0].Spec.Versions) {
		t.Fatalf("versions: %d, upstream has %d", len(got[0].Spec.Versions), len(base[0].Spec.Versions))
	}
	for i, v := range got[0].Spec.Versions {
		rule := v.Schema.OpenAPIV3Schema.Properties["spec"].Properties["rules"].Items.Schema
		tm, ok := rule.Properties["timeouts"]
		if !ok {
			t.Fatalf("version %s: rules[].timeouts missing", v.Name)
		}
		msd := tm.Properties["maxStreamDuration"]
		if msd.Type != "string" || msd.Pattern != DurationPattern {
			t.Errorf("version %s: maxStreamDuration type %q pattern %q", v.Name, msd.Type, msd.Pattern)
		}
		if len(msd.XValidations) != 1 || msd.XValidations[0].Rule != MinDurationRule || msd.XValidations[0].Message != MinDurationMessage {
			t.Errorf("version %s: maxStreamDuration validations %+v", v.Name, msd.XValidations)
		}
		se := tm.Properties["strictEnforcement"]
		var enum []string
		for _, e := range se.Enum {
			enum = append(enum, strings.Trim(string(e.Raw), `"`))
		}
		if se.Type != "string" || strings.Join(enum, ",") != "Allow,Deny" {
			t.Errorf("version %s: strictEnforcement type %q enum %v", v.Name, se.Type, enum)
		}
		// Everything else in the rule schema is unchanged.
		upRule := base[0].Spec.Versions[i].Schema.OpenAPIV3Schema.Properties["spec"].Properties["rules"].Items.Schema
		if len(rule.Properties) != len(upRule.Properties)+1 {
			t.Errorf("version %s: rule has %d properties, upstream %d; want exactly one more", v.Name, len(rule.Properties), len(upRule.Properties))
		}
	}
}

func TestOverlayRefusesUpstreamTimeouts(t *testing.T) {
	upstream, err := os.ReadFile(filepath.Join(repoCRDs, grpcRouteFile))
	if err != nil {
		t.Fatal(err)
	}
	once, err := GRPCRouteOverlay(upstream, "x")
	if err != nil {
		t.Fatal(err)
	}
	// An upstream CRD that already has the field (here: our own output).
	_, err = GRPCRouteOverlay(once, "x")
	if err == nil || !strings.Contains(err.Error(), "upstream already defines rules[].timeouts") {
		t.Fatalf("error %v, want one saying upstream already defines the field", err)
	}
}

func TestOverlayRejectsOtherInput(t *testing.T) {
	for name, in := range map[string]string{
		"other CRD":   "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: httproutes.gateway.networking.k8s.io}\n",
		"no versions": "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: grpcroutes.gateway.networking.k8s.io}\nspec: {}\n",
		"no rules": "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: grpcroutes.gateway.networking.k8s.io}\n" +
			"spec: {versions: [{name: v1, schema: {openAPIV3Schema: {type: object}}}]}\n",
		"not YAML": "{",
	} {
		if _, err := GRPCRouteOverlay([]byte(in), "x"); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
