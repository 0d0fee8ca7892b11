package store

import (
	"fmt"
	"reflect"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// decoded is one version of a stored object, written once and read by
// many: the writer's answer, the event every watcher of its kind
// receives, and the Gets and Lists until the next write (the store keeps
// the decoded of each object's last write in Store.latest). Its map m is
// the stored map, which no one changes. Typed readers of one version get
// deep copies of a single decoding of m into that version's Go type (made
// once, on first use, and never changed): decoding an object from a map
// costs several times what the generated deep copy does, and a write used
// to be decoded once for the writer, once more for each typed watcher and
// again for every Get.
type decoded struct {
	m map[string]any

	mu  sync.Mutex
	gvk schema.GroupVersionKind // of obj; empty until the first typed read
	obj runtime.Object          // never changed once made
	err error
}

// newDecoded returns a decoded for the stored map m with nothing decoded
// yet.
func newDecoded(m map[string]any) *decoded { return &decoded{m: m} }

// predecode decodes m into version gvk now, before m has its final
// resourceVersion: a writer does this outside the store's lock, so that
// the lock is not held while decoding, and calls setResourceVersion under
// the lock when it stores m.
func (s *Store) predecode(m map[string]any, gvk schema.GroupVersionKind) *decoded {
	d := newDecoded(m)
	d.gvk = gvk
	if d.obj, d.err = s.scheme.New(gvk); d.err != nil {
		d.err = fmt.Errorf("store: %s has no Go type in the scheme: %w", gvk, d.err)
		return d
	}
	d.err = s.decodeInto(m, gvk, d.obj)
	return d
}

// setResourceVersion gives the decoding the resourceVersion the store
// gave m. Only the writer that made d by predecode calls it, before anyone
// else sees d.
func (d *decoded) setResourceVersion(rv string) {
	if d.err != nil || d.obj == nil {
		return
	}
	if o, ok := d.obj.(metav1.Object); ok {
		o.SetResourceVersion(rv)
	}
}

// typed returns the decoding of d in version gvk, made now if no one has
// made one yet. It reports false when d holds a decoding of another
// version (decode the map then).
func (s *Store) typed(d *decoded, gvk schema.GroupVersionKind) (runtime.Object, bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.gvk.Empty() {
		d.gvk = gvk
		if d.obj, d.err = s.scheme.New(gvk); d.err != nil {
			d.err = fmt.Errorf("store: %s has no Go type in the scheme: %w", gvk, d.err)
		} else {
			d.err = s.decodeInto(d.m, gvk, d.obj)
		}
	}
	if d.gvk != gvk {
		return nil, false, nil
	}
	return d.obj, true, d.err
}

// newTyped returns a new object of version gvk holding d: a deep copy of
// d's decoding.
func (s *Store) newTyped(d *decoded, gvk schema.GroupVersionKind) (runtime.Object, error) {
	obj, ok, err := s.typed(d, gvk)
	if err != nil {
		return nil, err
	}
	if ok {
		return obj.DeepCopyObject(), nil
	}
	out, err := s.scheme.New(gvk)
	if err != nil {
		return nil, fmt.Errorf("store: %s has no Go type in the scheme: %w", gvk, err)
	}
	return out, s.decodeInto(d.m, gvk, out)
}

// decodeVersionInto writes d into obj in version gvk, as decodeInto does
// with d's map; a typed obj of the type d was decoded into gets a deep
// copy of that decoding.
func (s *Store) decodeVersionInto(d *decoded, gvk schema.GroupVersionKind, obj runtime.Object) error {
	if _, ok := obj.(runtime.Unstructured); ok {
		return s.decodeInto(d.m, gvk, obj)
	}
	src, ok, err := s.typed(d, gvk)
	if err != nil {
		return err
	}
	dst := reflect.ValueOf(obj)
	if !ok || dst.Kind() != reflect.Pointer || dst.IsNil() || dst.Type() != reflect.TypeOf(src) {
		return s.decodeInto(d.m, gvk, obj)
	}
	dst.Elem().Set(reflect.ValueOf(src.DeepCopyObject()).Elem())
	return nil
}

// latestLocked returns the decoded a write kept for the object stored at
// key, if stored is still the map it holds; nil otherwise.
func (s *Store) latestLocked(info *kindInfo, key objKey, stored map[string]any) *decoded {
	d := s.latest[objRef{info.gk, key}]
	if d == nil || stored == nil || reflect.ValueOf(d.m).UnsafePointer() != reflect.ValueOf(stored).UnsafePointer() {
		return nil
	}
	return d
}

// predecodeStatusWrite is predecode for m, a write of the status
// subresource over prevM (whose decoded is prev): every part of m but its
// metadata and status is the very value prevM holds, so only those two
// are decoded, and the other fields of the Go type (an HTTPRoute's spec,
// most of it) are shared with prev's decoding. Neither is ever changed:
// readers get deep copies. When m's other parts are not prevM's, or the
// type has fields that cannot be shared, m is decoded whole.
func (s *Store) predecodeStatusWrite(m, prevM map[string]any, prev *decoded, gvk schema.GroupVersionKind) *decoded {
	whole := func() *decoded { return s.predecode(m, gvk) }
	prevObj, ok, err := s.typed(prev, gvk)
	if err != nil || !ok {
		return whole()
	}
	ownPart := func(k string) bool { return k == "metadata" || k == "status" || k == "apiVersion" || k == "kind" }
	for k, v := range m {
		if !ownPart(k) && !sameValue(v, prevM[k]) {
			return whole()
		}
	}
	for k := range prevM {
		if _, has := m[k]; !has && !ownPart(k) {
			return whole()
		}
	}
	part := map[string]any{"apiVersion": m["apiVersion"], "kind": m["kind"], "metadata": m["metadata"]}
	if st, has := m["status"]; has {
		part["status"] = st
	}
	d := s.predecode(part, gvk)
	if d.err != nil {
		return whole()
	}
	dst, src := reflect.ValueOf(d.obj), reflect.ValueOf(prevObj)
	if dst.Type() != src.Type() || dst.Kind() != reflect.Pointer || dst.Elem().Kind() != reflect.Struct {
		return whole()
	}
	dst, src = dst.Elem(), src.Elem()
	t := dst.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case f.Anonymous && f.Type == reflect.TypeFor[metav1.TypeMeta]():
			continue
		case name == "metadata" || name == "status":
			continue
		case !dst.Field(i).CanSet() || name == "" || name == "-":
			return whole()
		}
		dst.Field(i).Set(src.Field(i))
	}
	d.m = m
	return d
}

// sameValue reports whether a and b are the very same JSON value: the
// same map or slice (not an equal one), or equal scalars.
func sameValue(a, b any) bool {
	switch a := a.(type) {
	case map[string]any:
		b, ok := b.(map[string]any)
		return ok && reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
	case []any:
		b, ok := b.([]any)
		return ok && len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
	case string, int64, float64, bool, nil:
		return a == b
	}
	return false
}
