package store

import (
	"context"
	"fmt"

	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateObjectMeta runs the API server's validation of the metadata of a
// custom resource, embedded resources included, at the root of obj.
//
// k8s.io/apiextensions-apiserver v0.37 (which Gateway API v1.7 requires)
// added a context to schemaobjectmeta.Validate. The store is built against
// v0.36 by go.mod and against v0.37 by `make test-gwapi-v1.7`, so it takes
// the function as a value and calls whichever of the two forms it has.
//
// Below the root, it checks only embedded resources (objects whose schema
// node has x-kubernetes-embedded-resource): s may be the schema trimmed to
// them (versionSchema.embedded), and nil when there are none.
func validateObjectMeta(ctx context.Context, obj map[string]any, s *structuralschema.Structural) field.ErrorList {
	if s == nil {
		return nil
	}
	var validate any = schemaobjectmeta.Validate
	switch f := validate.(type) {
	case func(*field.Path, any, *structuralschema.Structural, bool) field.ErrorList: // v0.36
		return f(nil, obj, s, false)
	case func(context.Context, *field.Path, any, *structuralschema.Structural, bool) field.ErrorList: // v0.37
		return f(ctx, nil, obj, s, false)
	}
	panic(fmt.Sprintf("store: schemaobjectmeta.Validate has an unknown signature %T", validate))
}

// coerceEmbedded coerces the metadata of the embedded resources in obj as
// the API server's decoder does (schemaobjectmeta.Coerce, not at a
// resource root). s may be the schema trimmed to the embedded resources,
// and nil when there are none.
func coerceEmbedded(obj map[string]any, s *structuralschema.Structural) *field.Error {
	if s == nil {
		return nil
	}
	return schemaobjectmeta.Coerce(nil, obj, s, false, false)
}
