package controller

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"
	gwxv1a1 "sigs.k8s.io/gateway-api/apisx/v1alpha1"

	"github.com/gatewitness/gatewitness/gateway/grpcroutetimeouts"
	"github.com/gatewitness/gatewitness/gateway/ir"
)

// objects is everything one recompute reads: the informers' cached objects
// (Run), or a fresh list of every kind (a recompute outside Run). The
// controller never mutates these objects: status is written on copies.
type objects struct {
	classes    []*gwv1.GatewayClass
	gateways   []*gwv1.Gateway
	httpRoutes []*gwv1.HTTPRoute
	grpcRoutes []*gwv1.GRPCRoute
	tlsRoutes  []*gwv1.TLSRoute
	grpcExt    map[types.NamespacedName]*grpcroutetimeouts.GRPCRoute // GEP-3139 fields by route (grpctimeouts.go)
	grants     []*gwv1.ReferenceGrant
	services   map[types.NamespacedName]*corev1.Service
	slices     map[types.NamespacedName][]*discoveryv1.EndpointSlice // by owning Service
	secrets    map[types.NamespacedName]*corev1.Secret
	namespaces map[string]*corev1.Namespace
	configMaps map[types.NamespacedName]*corev1.ConfigMap // GatewayClass parameters (tuning.go)
	policies   []*gwxv1a1.XBackendTrafficPolicy           // retry budgets (retrybudget.go)
	// retryBudgets are the budgets of the Services targeted by accepted
	// policies, set by build before routes are compiled.
	retryBudgets map[types.NamespacedName]*ir.RetryBudget
}

// listObjects reads every kind the controller compiles from with one List
// each. A kind the client does not serve (a CRD not installed) is empty, so
// the controller also runs against clusters with only some of the Gateway
// API kinds, or only one version of ReferenceGrant.
func (c *Controller) listObjects(ctx context.Context) (*objects, error) {
	return c.collect(func(k watchedKind) ([]any, error) {
		list := k.newList()
		if err := c.opts.Client.List(ctx, list); err != nil {
			if isUnknownKind(err) {
				return nil, nil
			}
			return nil, fmt.Errorf("listing %T: %w", list, err)
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			return nil, fmt.Errorf("reading %T: %w", list, err)
		}
		out := make([]any, len(items))
		for i, it := range items {
			out[i] = it
		}
		return out, nil
	})
}

// cachedObjects reads every kind from the informers' caches, with the
// objects whose status this controller has written newer than the cache
// (see remember).
func (c *Controller) cachedObjects() (*objects, error) {
	seen := map[objectRef]bool{}
	o, err := c.collect(func(k watchedKind) ([]any, error) {
		items := c.informers.list(k.name)
		if !k.status {
			return items, nil
		}
		for i, it := range items {
			obj := it.(client.Object)
			ref := objectRef{k.name, obj.GetNamespace(), obj.GetName()}
			w, ok := c.written[ref]
			if !ok {
				continue
			}
			if w.base != obj.GetResourceVersion() {
				delete(c.written, ref) // the cache has caught up, or moved on
				continue
			}
			seen[ref] = true
			items[i] = w.obj
		}
		return items, nil
	})
	for ref := range c.written {
		if !seen[ref] {
			delete(c.written, ref)
		}
	}
	return o, err
}

// objectRef names an object of a watched kind.
type objectRef struct{ kind, namespace, name string }

// writtenStatus is an object as a status write of this controller returned
// it, and the resourceVersion it was written over.
type writtenStatus struct {
	base string
	obj  client.Object
}

// remember records that obj (now at a new resourceVersion) was written
// over base. Until the informer's cache holds the write, recomputes use
// obj instead of the cached object at base, so that a second write does
// not fail with a conflict and no write is made twice.
func (c *Controller) remember(kind, base string, obj client.Object) {
	c.writtenMu.Lock() // route statuses are written from several goroutines
	defer c.writtenMu.Unlock()
	if c.written == nil {
		c.written = map[objectRef]writtenStatus{}
	}
	c.written[objectRef{kind, obj.GetNamespace(), obj.GetName()}] = writtenStatus{base: base, obj: obj}
}

// collect builds the objects from each kind's items (pointers to typed
// objects, or unstructured GRPCRoutes), sorted by namespace and name so
// that every recompute over the same objects computes the same snapshot.
func (c *Controller) collect(items func(watchedKind) ([]any, error)) (*objects, error) {
	o := &objects{
		grpcExt:    map[types.NamespacedName]*grpcroutetimeouts.GRPCRoute{},
		services:   map[types.NamespacedName]*corev1.Service{},
		slices:     map[types.NamespacedName][]*discoveryv1.EndpointSlice{},
		secrets:    map[types.NamespacedName]*corev1.Secret{},
		namespaces: map[string]*corev1.Namespace{},
		configMaps: map[types.NamespacedName]*corev1.ConfigMap{},
	}
	memo := make(map[types.UID]decodedGRPCRoute, len(c.grpcMemo))
	grantSeen := map[types.NamespacedName]bool{}
	for _, k := range watchedKinds() {
		list, err := items(k)
		if err != nil {
			return nil, err
		}
		slices.SortFunc(list, func(a, b any) int {
			x, y := a.(client.Object), b.(client.Object)
			return cmp.Or(cmp.Compare(x.GetNamespace(), y.GetNamespace()), cmp.Compare(x.GetName(), y.GetName()))
		})
		for _, it := range list {
			switch obj := it.(type) {
			case *gwv1.GatewayClass:
				o.classes = append(o.classes, obj)
			case *gwv1.Gateway:
				o.gateways = append(o.gateways, obj)
			case *gwv1.HTTPRoute:
				o.httpRoutes = append(o.httpRoutes, obj)
			case *gwv1.TLSRoute:
				o.tlsRoutes = append(o.tlsRoutes, obj)
			case *unstructured.Unstructured: // GRPCRoute
				d, err := c.decodeGRPCRoute(obj)
				if err != nil {
					return nil, err
				}
				memo[obj.GetUID()] = d
				o.grpcRoutes = append(o.grpcRoutes, d.route)
				o.grpcExt[client.ObjectKeyFromObject(obj)] = d.ext
			case *gwv1.GRPCRoute: // a status write's result (remember)
				key := client.ObjectKeyFromObject(obj)
				d, ok := c.grpcMemo[obj.UID]
				if !ok {
					return nil, fmt.Errorf("GRPCRoute %s: written status without the route it was written on", key)
				}
				memo[obj.UID] = d
				o.grpcRoutes = append(o.grpcRoutes, obj)
				o.grpcExt[key] = d.ext
			case *gwv1.ReferenceGrant:
				grantSeen[client.ObjectKeyFromObject(obj)] = true
				o.grants = append(o.grants, obj)
			case *gwv1beta1.ReferenceGrant:
				// The same object as a v1 one on an API server; possibly
				// distinct in simpler stores. v1 is read first.
				if !grantSeen[client.ObjectKeyFromObject(obj)] {
					o.grants = append(o.grants, (*gwv1.ReferenceGrant)(obj))
				}
			case *corev1.Service:
				o.services[client.ObjectKeyFromObject(obj)] = obj
			case *discoveryv1.EndpointSlice:
				svc := obj.Labels[discoveryv1.LabelServiceName]
				if svc == "" {
					continue
				}
				key := types.NamespacedName{Namespace: obj.Namespace, Name: svc}
				o.slices[key] = append(o.slices[key], obj)
			case *corev1.Secret:
				o.secrets[client.ObjectKeyFromObject(obj)] = obj
			case *corev1.Namespace:
				o.namespaces[obj.Name] = obj
			case *corev1.ConfigMap:
				o.configMaps[client.ObjectKeyFromObject(obj)] = obj
			case *gwxv1a1.XBackendTrafficPolicy:
				o.policies = append(o.policies, obj)
			default:
				return nil, fmt.Errorf("controller: unexpected %T in the %s items", it, k.name)
			}
		}
	}
	c.grpcMemo = memo
	return o, nil
}

// isUnknownKind reports whether err says the kind is not served: no CRD or
// version for it (a RESTMapper miss, or the server's 404 for the resource),
// or not in the client's scheme.
func isUnknownKind(err error) bool {
	return meta.IsNoMatchError(err) || runtime.IsNotRegisteredError(err) || apierrors.IsNotFound(err)
}
