package controller

import (
	"context"
	"reflect"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// informers are the controller's caches of the watched kinds, one client-go
// informer each: it lists once, then watches from the list's
// resourceVersion and lists again only when the watch expires. A recompute
// reads the caches instead of listing every kind afresh, so the objects are
// decoded once per change, not once per recompute.
type informers struct {
	byKind map[string]cache.Store
	run    []cache.Controller
}

// startInformers starts one informer per watched kind on c's client; they
// run until ctx is done and wg is released when they have stopped. Every
// change pokes c, except updates that change only the status of a kind
// whose status c writes (c's own writes among them).
func (c *Controller) startInformers(ctx context.Context, wg *sync.WaitGroup) *informers {
	inf := &informers{byKind: map[string]cache.Store{}}
	for _, k := range watchedKinds() {
		statusOnlyIgnored := k.status
		handler := cache.ResourceEventHandlerFuncs{
			AddFunc: func(any) { c.poke() },
			UpdateFunc: func(old, cur any) {
				if statusOnlyIgnored && onlyStatusChanged(old, cur) {
					return
				}
				c.poke()
			},
			DeleteFunc: func(any) { c.poke() },
		}
		store, ctrl := cache.NewInformerWithOptions(cache.InformerOptions{
			ListerWatcher: c.listWatch(k),
			ObjectType:    k.newObject(),
			Handler:       handler,
		})
		inf.byKind[k.name] = store
		inf.run = append(inf.run, ctrl)
		wg.Go(func() { ctrl.RunWithContext(ctx) })
	}
	return inf
}

// waitSynced waits until every informer has delivered its first list, or
// ctx is done; it reports whether they all did.
func (inf *informers) waitSynced(ctx context.Context) bool {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		synced := true
		for _, ctrl := range inf.run {
			synced = synced && ctrl.HasSynced()
		}
		if synced {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
	}
}

// list returns the cached objects of a kind.
func (inf *informers) list(kind string) []any { return inf.byKind[kind].List() }

// watchListUnsupported is a ListerWatcher that tells client-go's reflector
// to list and then watch, without the streaming "watch-list" protocol: the
// in-process store does not send the bookmark that protocol ends its
// initial events with.
type watchListUnsupported struct{ *cache.ListWatch }

// IsWatchListSemanticsUnSupported is what the reflector asks.
func (watchListUnsupported) IsWatchListSemanticsUnSupported() bool { return true }

// listWatch adapts c's client to client-go's ListerWatcher for one kind. A
// kind the server does not serve (a CRD not installed) lists as empty and
// its watch expires after maxRetry, so the informer lists it again then and
// picks it up once it is installed.
func (c *Controller) listWatch(k watchedKind) cache.ListerWatcher {
	return watchListUnsupported{&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			list := k.newList()
			err := c.opts.Client.List(ctx, list, &client.ListOptions{Raw: &opts, Limit: opts.Limit, Continue: opts.Continue})
			if err != nil && isUnknownKind(err) {
				return k.newList(), nil
			}
			return list, err
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			w, err := c.opts.Client.Watch(ctx, k.newList(), &client.ListOptions{Raw: &opts})
			if err != nil && isUnknownKind(err) {
				return newExpiringWatch(maxRetry), nil
			}
			return w, err
		},
	}}
}

// expiringWatch sends no events and, after a delay, one Expired error, which
// makes the reflector list again.
type expiringWatch struct {
	ch   chan watch.Event
	stop chan struct{}
	once sync.Once
}

func newExpiringWatch(after time.Duration) *expiringWatch {
	w := &expiringWatch{ch: make(chan watch.Event, 1), stop: make(chan struct{})}
	go func() {
		t := time.NewTimer(after)
		defer t.Stop()
		select {
		case <-t.C:
			w.ch <- watch.Event{Type: watch.Error, Object: &apierrors.NewResourceExpired("the kind is not served; listing it again").ErrStatus}
		case <-w.stop:
		}
		close(w.ch)
	}()
	return w
}

func (w *expiringWatch) Stop()                          { w.once.Do(func() { close(w.stop) }) }
func (w *expiringWatch) ResultChan() <-chan watch.Event { return w.ch }

// onlyStatusChanged reports whether cur differs from old in status and
// resourceVersion only (managedFields aside): such an update cannot change
// what the controller computes, which reads the status only to keep
// transition times and to skip writes that would change nothing.
func onlyStatusChanged(old, cur any) bool {
	a, ok1 := old.(client.Object)
	b, ok2 := cur.(client.Object)
	if !ok1 || !ok2 {
		return false
	}
	if ta, ok1 := typedWithoutStatus(a); ok1 {
		if tb, ok2 := typedWithoutStatus(b); ok2 {
			return equality.Semantic.DeepEqual(ta, tb)
		}
	}
	ma, ok1 := withoutStatus(a)
	mb, ok2 := withoutStatus(b)
	return ok1 && ok2 && equality.Semantic.DeepEqual(ma, mb)
}

// withoutStatus returns obj as an unstructured map without its status,
// resourceVersion and managedFields. Typed objects are converted (which
// copies them); the caches' objects are never changed.
func withoutStatus(obj client.Object) (map[string]any, bool) {
	var m map[string]any
	if u, ok := obj.(*unstructured.Unstructured); ok {
		m = make(map[string]any, len(u.Object))
		for k, v := range u.Object {
			m[k] = v
		}
		if md, ok := m["metadata"].(map[string]any); ok {
			cp := make(map[string]any, len(md))
			for k, v := range md {
				cp[k] = v
			}
			m["metadata"] = cp
		}
	} else {
		var err error
		if m, err = runtime.DefaultUnstructuredConverter.ToUnstructured(obj); err != nil {
			return nil, false
		}
	}
	delete(m, "status")
	if md, ok := m["metadata"].(map[string]any); ok {
		delete(md, "resourceVersion")
		delete(md, "managedFields")
	}
	return m, true
}

// typedWithoutStatus returns a shallow copy of a typed obj (a pointer to
// a struct with ObjectMeta and Status fields) with its Status zero and
// its resourceVersion and managedFields cleared, for comparing without
// converting: the copy shares everything else with obj, and nothing
// changes it. It reports false for other objects.
func typedWithoutStatus(obj client.Object) (any, bool) {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return nil, false
	}
	cp := reflect.New(v.Elem().Type()).Elem()
	cp.Set(v.Elem())
	status, meta := cp.FieldByName("Status"), cp.FieldByName("ObjectMeta")
	if !status.IsValid() || !status.CanSet() || !meta.IsValid() || meta.Type() != reflect.TypeFor[metav1.ObjectMeta]() {
		return nil, false
	}
	status.SetZero()
	m := meta.Addr().Interface().(*metav1.ObjectMeta)
	m.ResourceVersion, m.ManagedFields = "", nil
	return cp.Interface(), true
}
