// Package crdneeds tells what parts of a set of manifests a cluster's
// CustomResourceDefinitions lack: the fields its API server would prune
// (an unknown field of a structural schema is dropped without an error,
// so a manifest that needs it applies and then means something else), the
// kinds it does not serve, and the objects it refuses.
//
// It applies the manifests, as a dry run, to an in-memory store
// (cluster/store) serving exactly those CRDs, with the real CRDs' pruning,
// defaulting and validation, and compares what would be stored with what
// was sent. The channel test of the suite's features uses it with each
// Gateway API release's standard CRDs; the runner uses it with the CRDs of
// the cluster under test, to skip a test whose manifests the cluster
// cannot hold, naming the field.
package crdneeds

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gatewitness/gatewitness/cluster/store"
)

// A Need is a part of a manifest that the CRDs lack.
type Need struct {
	// Kind is the object's kind, as the manifest spells it.
	Kind string
	// Object is the object's namespace/name (or name).
	Object string
	// Field is the path of the field the CRDs lack, with list indices
	// left out ("spec.rules[].timeouts"), or empty when the whole object
	// is refused (see Reason).
	Field string
	// Reason says why: "not in the CRD's schema" (a pruned field), "no
	// CRD serves the kind", or the API server's error.
	Reason string
}

// Pruned is the Reason of a field the CRD's schema does not have.
const Pruned = "not in the CRD's schema"

// NoKind is the Reason of an object whose kind no CRD serves.
const NoKind = "no CRD serves the kind"

// String names the need as a message would: "HTTPRoute spec.rules[].retry
// (not in the CRD's schema)".
func (n Need) String() string {
	if n.Field == "" {
		return fmt.Sprintf("%s %s (%s)", n.Kind, n.Object, n.Reason)
	}
	return fmt.Sprintf("%s %s (%s)", n.Kind, n.Field, n.Reason)
}

// Checker applies manifests to a store serving a fixed set of CRDs.
type Checker struct {
	store *store.Store
}

// NewChecker returns a Checker for crds (which it does not modify).
func NewChecker(crds []*apiextensionsv1.CustomResourceDefinition) (*Checker, error) {
	if crds == nil {
		crds = []*apiextensionsv1.CustomResourceDefinition{} // nil means the embedded CRDs to the store
	}
	s, err := store.New(store.Options{CRDs: crds})
	if err != nil {
		return nil, fmt.Errorf("crdneeds: a store of the CRDs: %w", err)
	}
	return &Checker{store: s}, nil
}

// Check returns what the CRDs lack of the objects of the YAML streams in
// manifests, one Need per kind and field (the first object that needs it
// names it), sorted by kind and field. A manifest that does not decode is
// an error.
func (c *Checker) Check(ctx context.Context, manifests ...[]byte) ([]Need, error) {
	seen := map[string]bool{}
	var out []Need
	for i, data := range manifests {
		objs, err := decode(data)
		if err != nil {
			return nil, fmt.Errorf("crdneeds: manifest %d: %w", i, err)
		}
		for _, u := range objs {
			needs, err := c.checkObject(ctx, u)
			if err != nil {
				return nil, err
			}
			for _, n := range needs {
				key := n.Kind + "\x00" + n.Field + "\x00" + n.Reason
				if n.Field == "" {
					key += "\x00" + n.Object
				}
				if !seen[key] {
					seen[key] = true
					out = append(out, n)
				}
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Kind != out[j].Kind {
			return out[i].Kind < out[j].Kind
		}
		return out[i].Field < out[j].Field
	})
	return out, nil
}

// checkObject creates u as a dry run (its namespace first, for real) and
// compares the stored form with u.
func (c *Checker) checkObject(ctx context.Context, u *unstructured.Unstructured) ([]Need, error) {
	name := u.GetName()
	if ns := u.GetNamespace(); ns != "" {
		name = ns + "/" + name
		nsObj := &unstructured.Unstructured{}
		nsObj.SetAPIVersion("v1")
		nsObj.SetKind("Namespace")
		nsObj.SetName(ns)
		if err := c.store.Create(ctx, nsObj); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("crdneeds: namespace %s: %w", ns, err)
		}
	}
	sent := u.DeepCopy()
	stored := u.DeepCopy()
	err := c.store.Create(ctx, stored, client.DryRunAll)
	var noKind *meta.NoKindMatchError
	switch {
	case errors.As(err, &noKind):
		return []Need{{Kind: u.GetKind(), Object: name, Reason: fmt.Sprintf("%s: %s", NoKind, u.GetAPIVersion())}}, nil
	case err != nil:
		return []Need{{Kind: u.GetKind(), Object: name, Reason: err.Error()}}, nil
	}
	var out []Need
	for _, top := range []string{"spec", "data"} {
		v, ok := sent.Object[top]
		if !ok {
			continue
		}
		for _, f := range dropped(top, v, stored.Object[top]) {
			out = append(out, Need{Kind: u.GetKind(), Object: name, Field: f, Reason: Pruned})
		}
	}
	return out, nil
}

// dropped returns the paths under path of the fields of sent that got
// has not, list indices left out.
func dropped(path string, sent, got any) []string {
	switch s := sent.(type) {
	case map[string]any:
		g, _ := got.(map[string]any)
		var out []string
		for _, k := range sortedKeys(s) {
			gv, ok := g[k]
			if !ok {
				out = append(out, path+"."+k)
				continue
			}
			out = append(out, dropped(path+"."+k, s[k], gv)...)
		}
		return out
	case []any:
		g, _ := got.([]any)
		var out []string
		for i, e := range s {
			var ge any
			if i < len(g) {
				ge = g[i]
			}
			for _, f := range dropped(path+"[]", e, ge) {
				if !slices.Contains(out, f) {
					out = append(out, f)
				}
			}
		}
		return out
	}
	return nil
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// decode splits a YAML stream into its objects, skipping empty documents.
func decode(data []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for i := 0; ; i++ {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if len(u.Object) == 0 {
			continue
		}
		if u.GetKind() == "" || u.GetAPIVersion() == "" {
			return nil, fmt.Errorf("document %d: no apiVersion or kind: want a Kubernetes object", i)
		}
		out = append(out, u)
	}
}

// Fields returns the distinct fields of needs ("GRPCRoute
// spec.rules[].timeouts"), or the refused objects, for a message.
func Fields(needs []Need) string {
	parts := make([]string, 0, len(needs))
	for _, n := range needs {
		parts = append(parts, n.String())
	}
	return strings.Join(slices.Compact(parts), ", ")
}
