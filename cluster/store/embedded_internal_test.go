package store

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	"k8s.io/apimachinery/pkg/api/equality"
)

// embeddedCRD has embedded resources at several depths: spec.template, the
// items of spec.templates and the values of spec.byName, and one inside
// spec.template's own spec.
const embeddedCRD = `{
  "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
  "metadata": {"name": "wrappers.example.com"},
  "spec": {"group": "example.com", "scope": "Namespaced",
    "names": {"plural": "wrappers", "singular": "wrapper", "kind": "Wrapper", "listKind": "WrapperList"},
    "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
      "type": "object",
      "properties": {
        "spec": {"type": "object", "properties": {
          "note": {"type": "string"},
          "plain": {"type": "object", "properties": {"metadata": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}},
          "template": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true,
            "properties": {"spec": {"type": "object", "properties": {
              "inner": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true}}}}},
          "templates": {"type": "array", "items": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true}},
          "byName": {"type": "object", "additionalProperties": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true}}
        }}
      }}}}]}}`

// TestEmbeddedSchemaAgrees checks that coercing and validating the
// metadata of embedded resources along the schema trimmed to them
// (versionSchema.embedded) gives what the whole schema gives.
func TestEmbeddedSchemaAgrees(t *testing.T) {
	var crd apiextensionsv1.CustomResourceDefinition
	if err := json.Unmarshal([]byte(embeddedCRD), &crd); err != nil {
		t.Fatal(err)
	}
	info, err := compileCRD(&crd)
	if err != nil {
		t.Fatal(err)
	}
	vs := info.schemas["v1"]
	if vs.embedded == nil {
		t.Fatal("the trimmed schema of a CRD with embedded resources is nil")
	}
	if _, kept := vs.embedded.Properties["spec"].Properties["note"]; kept {
		t.Error("the trimmed schema keeps spec.note, which leads to no embedded resource")
	}
	ctx := context.Background()
	checked, rejected := 0, 0
	for _, doc := range []string{
		`{spec: {note: n, plain: {metadata: {name: 5}}, template: {apiVersion: v1, kind: ConfigMap, metadata: {name: ok, labels: {a: b}}}}}`,
		`{spec: {template: {kind: ConfigMap, metadata: {name: "Not Valid!"}, spec: {inner: {apiVersion: "a/b/c", kind: "not a kind"}}}}}`,
		`{spec: {template: {apiVersion: v1, kind: ConfigMap, metadata: {name: x, creationTimestamp: null}}}}`,
		`{spec: {template: {apiVersion: 5, kind: ConfigMap}}}`,
		`{spec: {template: {apiVersion: v1, kind: ConfigMap, metadata: {name: x, labels: "not a map"}}}}`,
		`{spec: {templates: [{apiVersion: v1, kind: Pod, metadata: {name: a}}, {metadata: {name: "-bad-", namespace: "Bad_NS"}}]}}`,
		`{spec: {byName: {one: {apiVersion: v1, kind: Secret, metadata: {name: s, annotations: {"bad key!": v}}}, two: {apiVersion: "", kind: ""}}}}`,
	} {
		spec := decodeYAML(t, doc)
		obj := map[string]any{"apiVersion": "example.com/v1", "kind": "Wrapper",
			"metadata": map[string]any{"name": "w", "namespace": "default"}, "spec": spec["spec"]}
		whole, trimmed := copyMap(obj), copyMap(obj)
		wantErr := schemaobjectmeta.Coerce(nil, whole, vs.structural, false, false)
		gotErr := coerceEmbedded(trimmed, vs.embedded)
		if (wantErr == nil) != (gotErr == nil) || wantErr != nil && wantErr.Error() != gotErr.Error() {
			t.Errorf("%s: coercing with the whole schema says %v, with the trimmed one %v", doc, wantErr, gotErr)
		}
		if !equality.Semantic.DeepEqual(whole, trimmed) {
			t.Errorf("%s: coercing with the whole schema gives %v, with the trimmed one %v", doc, whole, trimmed)
		}
		if wantErr != nil {
			rejected++
			continue
		}
		want := errorStrings(validateObjectMeta(ctx, whole, vs.structural))
		if got := errorStrings(validateObjectMeta(ctx, whole, vs.embedded)); !slices.Equal(got, want) {
			t.Errorf("%s: validating with the whole schema says %q, with the trimmed one %q", doc, want, got)
		}
		if len(want) > 0 {
			rejected++
		}
		checked++
	}
	if checked < 5 || rejected < 5 {
		t.Fatalf("%d objects validated, %d rejected: want at least 5 of each", checked, rejected)
	}
}
