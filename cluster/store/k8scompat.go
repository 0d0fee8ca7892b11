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
func validateObjectMeta(ctx context.Context, obj map[string]any, s *structuralschema.Structural) field.ErrorList {
	var validate any = schemaobjectmeta.Validate
	switch f := validate.(type) {
	case func(*field.Path, any, *structuralschema.Structural, bool) field.ErrorList: // v0.36
		return f(nil, obj, s, false)
	case func(context.Context, *field.Path, any, *structuralschema.Structural, bool) field.ErrorList: // v0.37
		return f(ctx, nil, obj, s, false)
	}
	panic(fmt.Sprintf("store: schemaobjectmeta.Validate has an unknown signature %T", validate))
}
