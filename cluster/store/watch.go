package store

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const (
	eventAdded    = watch.Added
	eventModified = watch.Modified
	eventDeleted  = watch.Deleted
)

// event is one change to the store. old and obj are stored maps, which the
// store never changes after storing them, so events share them (and the
// typed watchers of a version share obj's decoding).
type event struct {
	rv  uint64
	typ watch.EventType
	gk  schema.GroupKind
	key objKey
	old map[string]any // the previous state; nil for ADDED
	obj *decoded       // the new state; the last state for DELETED
}

// emitLocked records an event in the history and hands it to the watchers.
// It never blocks: a watcher whose buffer is full is closed.
func (s *Store) emitLocked(info *kindInfo, typ watch.EventType, old map[string]any, obj *decoded) {
	u := &unstructured.Unstructured{Object: obj.m}
	ev := event{rv: s.rv, typ: typ, gk: info.gk, key: objKey{u.GetNamespace(), u.GetName()}, old: old, obj: obj}
	if typ == eventAdded {
		ev.old = nil
	}
	s.history[s.histNext] = ev
	s.histNext = (s.histNext + 1) % len(s.history)
	if s.histLen < len(s.history) {
		s.histLen++
	}
	for w := range s.watchers {
		if w.info.gk == info.gk {
			w.deliverLocked(ev)
		}
	}
}

// Watch starts a watch on the kind of list's items, in opts' namespace and
// matching opts' label and field selectors.
//
// Without a resourceVersion (or with "0") the watch starts with one ADDED
// event per matching object, in namespace/name order, and continues with
// the changes after that, as a cluster does; an informer that lists first
// and then watches from the list's resourceVersion gets only the changes
// after its list. A resourceVersion older than the store's event history
// fails with an Expired error (410), so the caller lists again.
//
// An object that stops matching the selectors is sent as DELETED, one that
// starts matching as ADDED. Each watcher buffers up to Options.WatchBuffer
// events; a watcher that falls further behind receives an Error event with
// an Expired status and its channel is closed, so its client lists again.
// The watch ends when ctx is done, when Stop is called, or after
// opts.Raw.TimeoutSeconds.
func (s *Store) Watch(ctx context.Context, list client.ObjectList, opts ...client.ListOption) (watch.Interface, error) {
	info, gvk, err := s.listKind(list)
	if err != nil {
		return nil, err
	}
	lo := (&client.ListOptions{}).ApplyOptions(opts)
	f, err := newFilter(info, lo)
	if err != nil {
		return nil, err
	}
	_, unstructuredList := list.(*unstructured.UnstructuredList)
	w := &watcher{s: s, info: info, gvk: gvk, typed: !unstructuredList, filter: f, done: make(chan struct{})}
	var fromRV string
	var timeout time.Duration
	if lo.Raw != nil {
		fromRV = lo.Raw.ResourceVersion
		if lo.Raw.TimeoutSeconds != nil && *lo.Raw.TimeoutSeconds > 0 {
			timeout = time.Duration(*lo.Raw.TimeoutSeconds) * time.Second
		}
	}

	s.mu.Lock()
	var initial []event
	if fromRV == "" || fromRV == "0" {
		for k, m := range s.objects[info.gk] {
			if f.matches(k, m) {
				initial = append(initial, event{typ: eventAdded, gk: info.gk, key: k, obj: newDecoded(m)})
			}
		}
		slices.SortFunc(initial, func(a, b event) int {
			if c := strings.Compare(a.key.namespace, b.key.namespace); c != 0 {
				return c
			}
			return strings.Compare(a.key.name, b.key.name)
		})
	} else {
		rv, err := strconv.ParseUint(fromRV, 10, 64)
		if err != nil {
			s.mu.Unlock()
			return nil, apierrors.NewBadRequest(fmt.Sprintf("store: resourceVersion %q: want a decimal number from a List or an object", fromRV))
		}
		if rv > s.rv {
			s.mu.Unlock()
			return nil, apierrors.NewTimeoutError(fmt.Sprintf("Too large resource version: %d, current: %d", rv, s.rv), 1)
		}
		oldest := s.rv - uint64(s.histLen) + 1 // resourceVersion of the oldest event kept
		if rv+1 < oldest {
			s.mu.Unlock()
			return nil, apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", rv, oldest-1))
		}
		for i := 0; i < s.histLen; i++ {
			ev := s.history[(s.histNext-s.histLen+i+len(s.history))%len(s.history)]
			if ev.rv > rv && ev.gk == info.gk {
				initial = append(initial, ev)
			}
		}
	}
	w.ch = make(chan watch.Event, s.watchBuffer+len(initial)+1)
	for _, ev := range initial {
		w.deliverLocked(ev)
	}
	s.watchers[w] = struct{}{}
	s.mu.Unlock()

	go func() {
		var timer <-chan time.Time
		if timeout > 0 {
			t := time.NewTimer(timeout)
			defer t.Stop()
			timer = t.C
		}
		select {
		case <-ctx.Done():
		case <-timer:
		case <-w.done:
		}
		w.Stop()
	}()
	return w, nil
}

// watcher is one Watch. Its channel is written and closed only with the
// store's lock held.
type watcher struct {
	s      *Store
	info   *kindInfo
	gvk    schema.GroupVersionKind
	typed  bool
	filter *filter
	ch     chan watch.Event

	closed   bool // guarded by s.mu
	stopOnce sync.Once
	done     chan struct{}
}

// ResultChan returns the channel of events. It is closed when the watch ends.
func (w *watcher) ResultChan() <-chan watch.Event { return w.ch }

// Stop ends the watch and closes the result channel. It may be called more
// than once.
func (w *watcher) Stop() {
	w.s.mu.Lock()
	w.closeLocked()
	w.s.mu.Unlock()
	w.stopOnce.Do(func() { close(w.done) })
}

func (w *watcher) closeLocked() {
	if w.closed {
		return
	}
	w.closed = true
	close(w.ch)
	delete(w.s.watchers, w)
}

func (w *watcher) deliverLocked(ev event) {
	if w.closed {
		return
	}
	oldMatch := ev.old != nil && w.filter.matches(ev.key, ev.old)
	newMatch := w.filter.matches(ev.key, ev.obj.m)
	typ := ev.typ
	switch ev.typ {
	case eventAdded:
		if !newMatch {
			return
		}
	case eventModified:
		switch {
		case oldMatch && newMatch:
		case newMatch:
			typ = eventAdded
		case oldMatch:
			typ = eventDeleted
		default:
			return
		}
	case eventDeleted:
		if !newMatch {
			return
		}
	}
	if len(w.ch) >= cap(w.ch)-1 {
		// Keep the last slot for the error that tells the client to list again.
		w.ch <- watch.Event{Type: watch.Error, Object: &metav1.Status{
			Status:  metav1.StatusFailure,
			Code:    410,
			Reason:  metav1.StatusReasonExpired,
			Message: fmt.Sprintf("watch of %s closed: the client fell more than %d events behind; list again", w.info.resource, cap(w.ch)-1),
		}}
		w.closeLocked()
		return
	}
	obj, err := w.object(ev.obj)
	if err != nil {
		w.ch <- watch.Event{Type: watch.Error, Object: &apierrors.NewInternalError(err).ErrStatus}
		w.closeLocked()
		return
	}
	w.ch <- watch.Event{Type: typ, Object: obj}
}

func (w *watcher) object(d *decoded) (runtime.Object, error) {
	if !w.typed {
		u := &unstructured.Unstructured{}
		err := w.s.decodeInto(d.m, w.gvk, u)
		return u, err
	}
	obj, err := w.s.newTyped(d, w.gvk)
	if err != nil {
		return nil, fmt.Errorf("store: watch of %s: %w", w.gvk, err)
	}
	return obj, nil
}
