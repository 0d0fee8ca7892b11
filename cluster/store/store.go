// Package store is the object store of gatewitness's embedded cluster: an
// in-memory stand-in for a Kubernetes API server that implements the
// controller-runtime client.WithWatch interface.
//
// The upstream conformance suite, the reference gateway controller and the
// in-process pod runner all talk to one *Store. It behaves like an API server
// where the suite can tell the difference:
//
//   - Objects get a uid, a creationTimestamp and a resourceVersion from one
//     global counter; Update with a stale resourceVersion fails with a
//     Conflict. metadata.generation starts at 1 and is bumped when anything
//     outside metadata and status changes.
//   - Kinds with a status subresource (CRDs that declare one; Namespace,
//     Service, Pod and the apps kinds) ignore status on Create, Update and
//     Patch of the main resource, and Status().Update/Patch change only status.
//   - Gateway API kinds are validated and defaulted with the real CRDs (package
//     crds) by the same apiextensions-apiserver code a cluster runs: pruning of
//     unknown fields, defaulting, OpenAPI validation, list-type checks and CEL
//     x-kubernetes-validations (with oldSelf and ratcheting on update). Errors
//     are apierrors Invalid errors with the cluster's field paths and messages.
//     Objects are stored in the CRD's storage version and served in every
//     served version (the Gateway API CRDs use conversion strategy None, so
//     only apiVersion changes). Verdicts of the OpenAPI and CEL validators
//     on the parts of an object are remembered by path and content and
//     reused for equal parts of later objects (see celTree and
//     openAPIMemo): the same errors, without evaluating again what ten
//     thousand alike routes share.
//   - Built-in kinds are decoded into their Go types (which drops unknown
//     fields, as the API server's decoder does), given the defaults the suite
//     and a controller rely on, and their names are validated.
//   - Finalizers, ownerReference cascading deletion and Namespace termination
//     work as described on Delete.
//   - Watch streams ADDED, MODIFIED and DELETED events; see Watch.
//
// What an API server does that the store does not: admission webhooks and
// policies (including the Gateway API safe-upgrades ValidatingAdmissionPolicy),
// server-side apply and managedFields, strategic merge patch for CRD kinds (a
// cluster rejects it too), conversion webhooks, most built-in validation
// (only names and metadata are validated for built-in kinds), the defaults of
// built-in kinds beyond those listed on defaultBuiltin, field selectors other
// than metadata.name and metadata.namespace, watch bookmarks, and graceful
// deletion of Pods (deletion is immediate unless finalizers hold it).
package store

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// Defaults for Options fields left zero.
const (
	DefaultWatchBuffer = 1024
	DefaultHistory     = 4096
	DefaultMaxObjects  = 100000
	DefaultServiceCIDR = "10.96.0.0/16"
)

// Options configure a Store. The zero value is ready to use.
type Options struct {
	// Scheme maps Go types to kinds. Nil means NewScheme().
	Scheme *runtime.Scheme
	// CRDs are the custom resource definitions to serve. Nil means the
	// embedded Gateway API CRDs (crds.Load), compiled once per process.
	// Other lists are compiled once per distinct CRD content.
	CRDs []*apiextensionsv1.CustomResourceDefinition
	// WatchBuffer is how many events a watcher may have pending before it
	// is closed with an error event. Zero means DefaultWatchBuffer.
	WatchBuffer int
	// History is how many recent events the store keeps so that a Watch
	// can resume from a resourceVersion. Zero means DefaultHistory.
	History int
	// MaxObjects bounds the number of stored objects. Zero means
	// DefaultMaxObjects.
	MaxObjects int
	// ServiceCIDR is the range clusterIPs are allocated from, in CIDR form
	// (for example "10.96.0.0/16"). Empty means DefaultServiceCIDR.
	ServiceCIDR string
	// Now returns the current time; nil means time.Now. Tests may fix it.
	Now func() time.Time
}

type objKey struct{ namespace, name string }

// Store is an in-memory Kubernetes object store. It implements
// client.WithWatch. All methods are safe for concurrent use.
type Store struct {
	scheme *runtime.Scheme
	mapper meta.RESTMapper
	kinds  map[schema.GroupKind]*kindInfo

	watchBuffer int
	historySize int
	maxObjects  int
	now         func() time.Time
	serviceCIDR netip.Prefix

	mu       sync.Mutex
	rv       uint64
	objects  map[schema.GroupKind]map[objKey]map[string]any // stored in the storage version
	count    int
	byUID    map[types.UID]objRef
	latest   map[objRef]*decoded // the decoded of the stored map, where a write kept it (see latestLocked)
	watchers map[*watcher]struct{}
	history  []event // ring buffer of the last historySize events
	histNext int     // next write position in history
	histLen  int
	ipUsed   map[netip.Addr]bool
	ipNext   netip.Addr
}

type objRef struct {
	gk  schema.GroupKind
	key objKey
}

var _ client.WithWatch = (*Store)(nil)

// New returns a Store serving the built-in kinds and opts.CRDs, with the
// namespaces "default", "kube-system" and "kube-public" present.
func New(opts Options) (*Store, error) {
	s := &Store{
		scheme:      opts.Scheme,
		kinds:       map[schema.GroupKind]*kindInfo{},
		watchBuffer: opts.WatchBuffer,
		historySize: opts.History,
		maxObjects:  opts.MaxObjects,
		now:         opts.Now,
		objects:     map[schema.GroupKind]map[objKey]map[string]any{},
		byUID:       map[types.UID]objRef{},
		latest:      map[objRef]*decoded{},
		watchers:    map[*watcher]struct{}{},
		ipUsed:      map[netip.Addr]bool{},
	}
	var err error
	if s.scheme == nil {
		if s.scheme, err = NewScheme(); err != nil {
			return nil, err
		}
	}
	if s.watchBuffer <= 0 {
		s.watchBuffer = DefaultWatchBuffer
	}
	if s.historySize <= 0 {
		s.historySize = DefaultHistory
	}
	if s.maxObjects <= 0 {
		s.maxObjects = DefaultMaxObjects
	}
	if s.now == nil {
		s.now = time.Now
	}
	cidr := opts.ServiceCIDR
	if cidr == "" {
		cidr = DefaultServiceCIDR
	}
	s.serviceCIDR, err = netip.ParsePrefix(cidr)
	if err != nil || !s.serviceCIDR.Addr().Is4() || s.serviceCIDR.Bits() > 30 {
		return nil, fmt.Errorf("store: Options.ServiceCIDR %q: want an IPv4 CIDR of at least 4 addresses, like %q", cidr, DefaultServiceCIDR)
	}
	s.serviceCIDR = s.serviceCIDR.Masked()
	s.ipNext = s.serviceCIDR.Addr().Next() // skip the network address
	s.history = make([]event, s.historySize)

	var crdKinds []*kindInfo
	if opts.CRDs == nil {
		crdKinds, err = defaultKinds()
	} else {
		crdKinds, err = compileCRDs(opts.CRDs)
	}
	if err != nil {
		return nil, err
	}
	mapper := meta.NewDefaultRESTMapper(nil)
	for _, k := range append(builtinKindInfos(), crdKinds...) {
		if _, dup := s.kinds[k.gk]; dup {
			return nil, fmt.Errorf("store: kind %s is defined twice", k.gk)
		}
		s.kinds[k.gk] = k
		scope := meta.RESTScopeRoot
		if k.namespaced {
			scope = meta.RESTScopeNamespace
		}
		for _, v := range k.versions {
			gvk := k.gk.WithVersion(v)
			mapper.AddSpecific(gvk,
				schema.GroupVersionResource{Group: k.gk.Group, Version: v, Resource: k.resource},
				schema.GroupVersionResource{Group: k.gk.Group, Version: v, Resource: strings.ToLower(k.gk.Kind)},
				scope)
		}
	}
	s.mapper = mapper

	for _, ns := range []string{metav1.NamespaceDefault, metav1.NamespaceSystem, metav1.NamespacePublic} {
		obj := map[string]any{
			"apiVersion": "v1",
			"kind":       "Namespace",
			"metadata":   map[string]any{"name": ns},
		}
		if _, err := s.create(context.Background(), s.kinds[schema.GroupKind{Kind: "Namespace"}], schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, obj, false, false); err != nil {
			return nil, fmt.Errorf("store: creating namespace %s: %w", ns, err)
		}
	}
	return s, nil
}

// Scheme returns the scheme the store uses for typed objects.
func (s *Store) Scheme() *runtime.Scheme { return s.scheme }

// RESTMapper returns a mapper that knows every kind and version the store
// serves.
func (s *Store) RESTMapper() meta.RESTMapper { return s.mapper }

// GroupVersionKindFor returns the kind of obj: the apiVersion and kind fields
// of an unstructured object, or the scheme's kind of a typed one.
func (s *Store) GroupVersionKindFor(obj runtime.Object) (schema.GroupVersionKind, error) {
	if u, ok := obj.(runtime.Unstructured); ok {
		gvk := u.GetObjectKind().GroupVersionKind()
		if gvk.Kind == "" || gvk.Version == "" {
			return gvk, fmt.Errorf("store: unstructured object has no apiVersion or kind: both must be set, like apiVersion: gateway.networking.k8s.io/v1, kind: HTTPRoute")
		}
		return gvk, nil
	}
	gvk, err := apiutil.GVKForObject(obj, s.scheme)
	if err != nil {
		return gvk, fmt.Errorf("store: %w", err)
	}
	return gvk, nil
}

// IsObjectNamespaced reports whether obj's kind is namespace-scoped.
func (s *Store) IsObjectNamespaced(obj runtime.Object) (bool, error) {
	info, _, err := s.kindOf(obj)
	if err != nil {
		return false, err
	}
	return info.namespaced, nil
}

// kindOf resolves obj to the kind the store serves and the version the
// caller uses.
func (s *Store) kindOf(obj runtime.Object) (*kindInfo, schema.GroupVersionKind, error) {
	gvk, err := s.GroupVersionKindFor(obj)
	if err != nil {
		return nil, gvk, err
	}
	return s.kindForGVK(gvk)
}

func (s *Store) kindForGVK(gvk schema.GroupVersionKind) (*kindInfo, schema.GroupVersionKind, error) {
	info, ok := s.kinds[gvk.GroupKind()]
	if !ok || !info.serves(gvk.Version) {
		return nil, gvk, &meta.NoKindMatchError{GroupKind: gvk.GroupKind(), SearchedVersions: []string{gvk.Version}}
	}
	return info, gvk, nil
}

// listKind resolves a list object to the kind of its items.
func (s *Store) listKind(list client.ObjectList) (*kindInfo, schema.GroupVersionKind, error) {
	gvk, err := s.GroupVersionKindFor(list)
	if err != nil {
		return nil, gvk, err
	}
	if !strings.HasSuffix(gvk.Kind, "List") {
		return nil, gvk, fmt.Errorf("store: list kind %q does not end in \"List\": pass a list type such as HTTPRouteList", gvk.Kind)
	}
	gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
	return s.kindForGVK(gvk)
}

// Get fetches the object named key into obj.
func (s *Store) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	info, gvk, err := s.kindOf(obj)
	if err != nil {
		return err
	}
	if !info.namespaced {
		key.Namespace = ""
	}
	s.mu.Lock()
	stored, ok := s.objects[info.gk][objKey{key.Namespace, key.Name}]
	d := s.latestLocked(info, objKey{key.Namespace, key.Name}, stored)
	s.mu.Unlock()
	if !ok {
		return apierrors.NewNotFound(info.groupResource(), key.Name)
	}
	if d != nil {
		return s.decodeVersionInto(d, gvk, obj)
	}
	return s.decodeInto(stored, gvk, obj) // stored maps are never changed: no lock needed
}

// decodeInto writes the object m into obj in version gvk. It neither
// changes m nor keeps any part of it: an unstructured obj gets a copy, and
// decoding into a Go type copies every value (the API types hold no
// untyped values that could share m's maps). So m may be a stored map.
func (s *Store) decodeInto(m map[string]any, gvk schema.GroupVersionKind, obj runtime.Object) error {
	if u, ok := obj.(runtime.Unstructured); ok {
		c := copyMap(m)
		c["apiVersion"] = gvk.GroupVersion().String()
		c["kind"] = gvk.Kind
		u.SetUnstructuredContent(c)
		return nil
	}
	zeroObject(obj)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, obj); err != nil {
		return fmt.Errorf("store: decoding %s into %T: %w", gvk.Kind, obj, err)
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	return nil
}

// encode returns obj as a fresh JSON-compatible map.
func encode(obj runtime.Object) (map[string]any, error) {
	if u, ok := obj.(runtime.Unstructured); ok {
		m, err := copyJSON(u.UnstructuredContent())
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("store: object is not JSON-compatible: %v", err))
		}
		return m.(map[string]any), nil
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("store: encoding %T: %v", obj, err))
	}
	return m, nil
}

// encodeStatusWrite encodes obj for a write of its status subresource,
// which reads nothing of the request but its metadata and status (see
// tryUpdate): a typed obj is encoded without its other fields, which
// for a route are most of it. Unstructured objects are encoded whole.
func encodeStatusWrite(obj runtime.Object) (map[string]any, error) {
	v := reflect.ValueOf(obj)
	if _, ok := obj.(runtime.Unstructured); ok || v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return encode(obj)
	}
	cp := reflect.New(v.Elem().Type())
	cp.Elem().Set(v.Elem()) // a shallow copy: encoding reads it, nothing changes it
	t := cp.Elem().Type()
	for i := range t.NumField() {
		switch t.Field(i).Name {
		case "TypeMeta", "ObjectMeta", "Status":
			continue
		}
		if f := cp.Elem().Field(i); f.CanSet() {
			f.SetZero()
		}
	}
	return encode(cp.Interface().(runtime.Object))
}

// List lists the objects of the list's item kind that match opts.
func (s *Store) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	info, gvk, err := s.listKind(list)
	if err != nil {
		return err
	}
	lo := (&client.ListOptions{}).ApplyOptions(opts)
	f, err := newFilter(info, lo)
	if err != nil {
		return err
	}
	s.mu.Lock()
	var keys []objKey
	for k, m := range s.objects[info.gk] {
		if f.matches(k, m) {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b objKey) int {
		if c := strings.Compare(a.namespace, b.namespace); c != 0 {
			return c
		}
		return strings.Compare(a.name, b.name)
	})
	// Limit and Continue: the continue token is the last key returned.
	if lo.Continue != "" {
		ns, name, ok := strings.Cut(lo.Continue, "/")
		if !ok {
			s.mu.Unlock()
			return apierrors.NewBadRequest(fmt.Sprintf("store: continue token %q is not one this store issued", lo.Continue))
		}
		i, _ := slices.BinarySearchFunc(keys, objKey{ns, name}, func(a, b objKey) int {
			if c := strings.Compare(a.namespace, b.namespace); c != 0 {
				return c
			}
			return strings.Compare(a.name, b.name)
		})
		for i < len(keys) && keys[i] == (objKey{ns, name}) {
			i++
		}
		keys = keys[i:]
	}
	cont := ""
	var remaining *int64
	if lo.Limit > 0 && int64(len(keys)) > lo.Limit {
		last := keys[lo.Limit-1]
		cont = last.namespace + "/" + last.name
		n := int64(len(keys)) - lo.Limit
		remaining = &n
		keys = keys[:lo.Limit]
	}
	items := make([]map[string]any, len(keys))
	latest := make([]*decoded, len(keys))
	for i, k := range keys {
		items[i] = s.objects[info.gk][k] // never changed: decoded without the lock
		latest[i] = s.latestLocked(info, k, items[i])
	}
	rv := strconv.FormatUint(s.rv, 10)
	s.mu.Unlock()

	if ul, ok := list.(*unstructured.UnstructuredList); ok {
		ul.Items = make([]unstructured.Unstructured, len(items))
		for i, m := range items {
			if err := s.decodeInto(m, gvk, &ul.Items[i]); err != nil {
				return err
			}
		}
		ul.SetAPIVersion(gvk.GroupVersion().String())
		ul.SetKind(gvk.Kind + "List")
		ul.SetResourceVersion(rv)
		ul.SetContinue(cont)
		ul.SetRemainingItemCount(remaining)
		return nil
	}
	objs := make([]runtime.Object, len(items))
	for i, m := range items {
		if latest[i] != nil {
			o, err := s.newTyped(latest[i], gvk)
			if err != nil {
				return err
			}
			objs[i] = o
			continue
		}
		o, err := s.scheme.New(gvk)
		if err != nil {
			return fmt.Errorf("store: listing %s: %w", gvk.Kind, err)
		}
		if err := s.decodeInto(m, gvk, o); err != nil {
			return err
		}
		objs[i] = o
	}
	if err := meta.SetList(list, objs); err != nil {
		return fmt.Errorf("store: filling %T: %w", list, err)
	}
	la, err := meta.ListAccessor(list)
	if err != nil {
		return fmt.Errorf("store: %T: %w", list, err)
	}
	la.SetResourceVersion(rv)
	la.SetContinue(cont)
	la.SetRemainingItemCount(remaining)
	return nil
}

// Create stores a new object and writes the stored form (with uid,
// resourceVersion and defaults) back into obj.
func (s *Store) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	info, gvk, err := s.kindOf(obj)
	if err != nil {
		return err
	}
	co := (&client.CreateOptions{}).ApplyOptions(opts)
	m, err := encode(obj)
	if err != nil {
		return err
	}
	_, unstructuredObj := obj.(runtime.Unstructured)
	out, err := s.create(ctx, info, gvk, m, isDryRun(co.DryRun), !unstructuredObj)
	if err != nil {
		return err
	}
	return s.decodeVersionInto(out, gvk, obj)
}

// Update replaces an object. Status is kept from the stored object for kinds
// with a status subresource. A resourceVersion other than the stored one is
// a Conflict; an empty one is accepted for built-in kinds and rejected for
// CRD kinds, as a cluster does.
func (s *Store) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	info, gvk, err := s.kindOf(obj)
	if err != nil {
		return err
	}
	uo := (&client.UpdateOptions{}).ApplyOptions(opts)
	m, err := encode(obj)
	if err != nil {
		return err
	}
	return s.replace(ctx, info, gvk, obj, m, false, isDryRun(uo.DryRun))
}

// replace writes m, the encoding of obj, over the stored object (only its
// status if status is set) and decodes what was stored back into obj.
func (s *Store) replace(ctx context.Context, info *kindInfo, gvk schema.GroupVersionKind, obj client.Object, m map[string]any, status, dryRun bool) error {
	_, unstructuredObj := obj.(runtime.Unstructured)
	out, err := s.update(ctx, info, gvk, info.keyOf(obj), m, status, dryRun, !unstructuredObj, nil)
	if err != nil {
		return err
	}
	return s.decodeVersionInto(out, gvk, obj)
}

// keyOf is obj's key in the store: its namespace (none for a kind that is
// not namespaced) and its name.
func (info *kindInfo) keyOf(obj client.Object) objKey {
	if !info.namespaced {
		return objKey{"", obj.GetName()}
	}
	return objKey{obj.GetNamespace(), obj.GetName()}
}

// Patch applies a JSON patch, a JSON merge patch or (for built-in kinds) a
// strategic merge patch to the stored object, then updates it as Update
// does. A resourceVersion in the patch must match the stored one.
func (s *Store) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	po := (&client.PatchOptions{}).ApplyOptions(opts)
	return s.patch(ctx, obj, patch, false, isDryRun(po.DryRun))
}

// Apply is server-side apply, which the store does not support.
func (s *Store) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
	return errApplyUnsupported
}

var errApplyUnsupported = &apierrors.StatusError{ErrStatus: metav1.Status{
	Status:  metav1.StatusFailure,
	Code:    415,
	Reason:  metav1.StatusReasonUnsupportedMediaType,
	Message: "server-side apply is not supported by the in-process store: use Create, Update or Patch with a merge or JSON patch",
}}

// Delete deletes an object.
//
// An object with finalizers gets a deletionTimestamp and stays until an
// update removes its last finalizer. When an object goes, objects whose
// ownerReferences all point to objects that are gone are deleted too, in the
// same call (the API server's garbage collector does this shortly after);
// PropagationPolicy Orphan instead removes the ownerReferences to it, and
// Foreground deletes the dependents before the owner. Deleting a Namespace
// sets its phase to Terminating, deletes every object in it and removes the
// namespace once it is empty; creating objects in it fails meanwhile.
func (s *Store) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	info, _, err := s.kindOf(obj)
	if err != nil {
		return err
	}
	do := (&client.DeleteOptions{}).ApplyOptions(opts)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.deleteLocked(info, info.keyOf(obj), do)
}

// DeleteAllOf deletes every object of obj's kind that matches opts, as
// Delete does.
func (s *Store) DeleteAllOf(ctx context.Context, obj client.Object, opts ...client.DeleteAllOfOption) error {
	info, _, err := s.kindOf(obj)
	if err != nil {
		return err
	}
	dao := (&client.DeleteAllOfOptions{}).ApplyOptions(opts)
	f, err := newFilter(info, &dao.ListOptions)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var keys []objKey
	for k, m := range s.objects[info.gk] {
		if f.matches(k, m) {
			keys = append(keys, k)
		}
	}
	for _, k := range keys {
		err := s.deleteLocked(info, k, &dao.DeleteOptions)
		if err != nil && !apierrors.IsNotFound(err) { // a cascade may have removed it
			return err
		}
	}
	return nil
}

// Status returns a writer for the status subresource.
func (s *Store) Status() client.SubResourceWriter { return s.SubResource("status") }

// SubResource returns a client for a subresource. Only "status" is
// supported; the others fail on use with an error naming them.
func (s *Store) SubResource(subResource string) client.SubResourceClient {
	return &subResourceClient{s: s, name: subResource}
}

type subResourceClient struct {
	s    *Store
	name string
}

func (c *subResourceClient) check(obj runtime.Object) (*kindInfo, error) {
	info, _, err := c.s.kindOf(obj)
	if err != nil {
		return nil, err
	}
	if c.name != "status" || !info.hasStatus {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: info.gk.Group, Resource: info.resource + "/" + c.name}, "")
	}
	return info, nil
}

// Get reads the object of a subresource; for "status" that is the whole
// object, as the API server returns it.
func (c *subResourceClient) Get(ctx context.Context, obj client.Object, subResource client.Object, opts ...client.SubResourceGetOption) error {
	if _, err := c.check(obj); err != nil {
		return err
	}
	return c.s.Get(ctx, client.ObjectKeyFromObject(obj), subResource)
}

// Create is not supported for any subresource.
func (c *subResourceClient) Create(ctx context.Context, obj client.Object, subResource client.Object, opts ...client.SubResourceCreateOption) error {
	return fmt.Errorf("store: creating subresource %q is not supported by the in-process store", c.name)
}

// Update writes only the status of obj.
func (c *subResourceClient) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	info, err := c.check(obj)
	if err != nil {
		return err
	}
	uo := (&client.SubResourceUpdateOptions{}).ApplyOptions(opts)
	_, gvk, err := c.s.kindOf(obj)
	if err != nil {
		return err
	}
	m, err := encodeStatusWrite(obj)
	if err != nil {
		return err
	}
	return c.s.replace(ctx, info, gvk, obj, m, true, isDryRun(uo.DryRun))
}

// Patch patches only the status of obj.
func (c *subResourceClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	if _, err := c.check(obj); err != nil {
		return err
	}
	po := (&client.SubResourcePatchOptions{}).ApplyOptions(opts)
	return c.s.patch(ctx, obj, patch, true, isDryRun(po.DryRun))
}

// Apply is server-side apply, which the store does not support.
func (c *subResourceClient) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
	return errApplyUnsupported
}

func isDryRun(d []string) bool { return slices.Contains(d, metav1.DryRunAll) }

var errNotJSON = errors.New("not a JSON value")
