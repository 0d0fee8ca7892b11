package store

import (
	"fmt"
	"reflect"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// decoded is one version of a stored object, written once and read by
// many: the writer's answer and the event every watcher of its kind
// receives. Its map m is the stored map, which no one changes. Typed
// readers of one version get deep copies of a single decoding of m into
// that version's Go type (made once, on first use, and never changed):
// decoding an object from a map costs several times what the generated
// deep copy does, and a write used to be decoded once for the writer and
// once more for each typed watcher.
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
