package store

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// copyMap deep-copies a stored object, which holds JSON values only.
func copyMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = copyValue(v)
	}
	return out
}

func copyValue(v any) any {
	switch v := v.(type) {
	case map[string]any:
		return copyMap(v)
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = copyValue(e)
		}
		return out
	default:
		return v // string, int64, float64, bool, nil
	}
}

// copyJSON deep-copies v, converting the number and slice types that code
// building unstructured objects tends to use into the JSON forms (int64,
// float64, []any, map[string]any). Other types are an error.
func copyJSON(v any) (any, error) {
	switch v := v.(type) {
	case nil, string, bool, int64:
		return v, nil
	case float64:
		// JSON has one number type: an integral float64 (what decoding
		// YAML or JSON into a plain map gives) reaches an API server as an
		// integer, and its decoder makes it an int64. Do the same.
		if v == math.Trunc(v) && math.Abs(v) < 1<<53 {
			return int64(v), nil
		}
		return v, nil
	case int:
		return int64(v), nil
	case int32:
		return int64(v), nil
	case float32:
		return copyJSON(float64(v))
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return i, nil
		}
		f, err := v.Float64()
		return f, err
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			c, err := copyJSON(e)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			out[k] = c
		}
		return out, nil
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			c, err := copyJSON(e)
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			out[i] = c
		}
		return out, nil
	case []string:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = e
		}
		return out, nil
	case map[string]string:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = e
		}
		return out, nil
	default:
		return nil, fmt.Errorf("%w: %T", errNotJSON, v)
	}
}

// zeroObject resets the struct obj points to, so that decoding into it
// leaves nothing of its previous content.
func zeroObject(obj any) {
	v := reflect.ValueOf(obj)
	if v.Kind() == reflect.Pointer && !v.IsNil() {
		v.Elem().Set(reflect.Zero(v.Elem().Type()))
	}
}

// filter selects objects by namespace, labels and the fields metadata.name
// and metadata.namespace.
type filter struct {
	namespace string
	labels    labels.Selector
	fields    fields.Selector
}

func newFilter(info *kindInfo, lo *client.ListOptions) (*filter, error) {
	f := &filter{labels: lo.LabelSelector, fields: lo.FieldSelector}
	if info.namespaced {
		f.namespace = lo.Namespace
	}
	if f.fields != nil {
		for _, r := range f.fields.Requirements() {
			if r.Field != "metadata.name" && r.Field != "metadata.namespace" {
				return nil, apierrors.NewBadRequest(fmt.Sprintf("field label not supported: %s (the in-process store supports metadata.name and metadata.namespace)", r.Field))
			}
		}
	}
	return f, nil
}

func (f *filter) matches(k objKey, m map[string]any) bool {
	if f.namespace != "" && k.namespace != f.namespace {
		return false
	}
	if f.labels != nil && !f.labels.Empty() {
		if !f.labels.Matches(labels.Set((&unstructured.Unstructured{Object: m}).GetLabels())) {
			return false
		}
	}
	if f.fields != nil && !f.fields.Empty() {
		if !f.fields.Matches(fields.Set{"metadata.name": k.name, "metadata.namespace": k.namespace}) {
			return false
		}
	}
	return true
}
