package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"

	"github.com/gatecheck/gatecheck/gateway/apis"
)

// objects is everything one recompute reads, listed afresh from the client.
// The controller never mutates these objects: status is written on copies.
type objects struct {
	classes    []gwv1.GatewayClass
	gateways   []gwv1.Gateway
	httpRoutes []gwv1.HTTPRoute
	grpcRoutes []gwv1.GRPCRoute
	tlsRoutes  []gwv1.TLSRoute
	grpcExt    map[types.NamespacedName]*apis.GRPCRoute // GEP-3139 fields by route (grpctimeouts.go)
	grants     []gwv1.ReferenceGrant
	services   map[types.NamespacedName]*corev1.Service
	slices     map[types.NamespacedName][]*discoveryv1.EndpointSlice // by owning Service
	secrets    map[types.NamespacedName]*corev1.Secret
	namespaces map[string]*corev1.Namespace
	configMaps map[types.NamespacedName]*corev1.ConfigMap // GatewayClass parameters (tuning.go)
}

// listObjects reads every kind the controller compiles from.
//
// ReferenceGrant is served as v1 and v1beta1 (same objects on an API server;
// possibly distinct in simpler stores): both are read and merged by
// namespace/name. A version the client does not know is skipped, so the
// controller also runs against clusters with only one of them installed.
func listObjects(ctx context.Context, c client.Client) (*objects, error) {
	o := &objects{
		services:   map[types.NamespacedName]*corev1.Service{},
		slices:     map[types.NamespacedName][]*discoveryv1.EndpointSlice{},
		secrets:    map[types.NamespacedName]*corev1.Secret{},
		namespaces: map[string]*corev1.Namespace{},
		configMaps: map[types.NamespacedName]*corev1.ConfigMap{},
	}

	var classes gwv1.GatewayClassList
	var gateways gwv1.GatewayList
	var httpRoutes gwv1.HTTPRouteList
	var services corev1.ServiceList
	var slices discoveryv1.EndpointSliceList
	var secrets corev1.SecretList
	var namespaces corev1.NamespaceList
	var configMaps corev1.ConfigMapList
	for _, l := range []client.ObjectList{&classes, &gateways, &httpRoutes, &services, &slices, &secrets, &namespaces, &configMaps} {
		if err := c.List(ctx, l); err != nil {
			return nil, fmt.Errorf("listing %T: %w", l, err)
		}
	}
	// GRPCRoute is optional in a cluster that only installed the HTTP CRDs.
	grpcRoutes, grpcExt, err := listGRPCRoutes(ctx, c)
	if err != nil {
		return nil, err
	}
	// TLSRoute too (the experimental channel's).
	var tlsRoutes gwv1.TLSRouteList
	if err := c.List(ctx, &tlsRoutes); err != nil && !isUnknownKind(err) {
		return nil, fmt.Errorf("listing TLSRoutes: %w", err)
	}

	o.classes = classes.Items
	o.gateways = gateways.Items
	o.httpRoutes = httpRoutes.Items
	o.grpcRoutes = grpcRoutes
	o.grpcExt = grpcExt
	o.tlsRoutes = tlsRoutes.Items
	for i := range services.Items {
		s := &services.Items[i]
		o.services[client.ObjectKeyFromObject(s)] = s
	}
	for i := range slices.Items {
		s := &slices.Items[i]
		svc := s.Labels[discoveryv1.LabelServiceName]
		if svc == "" {
			continue
		}
		key := types.NamespacedName{Namespace: s.Namespace, Name: svc}
		o.slices[key] = append(o.slices[key], s)
	}
	for i := range secrets.Items {
		s := &secrets.Items[i]
		o.secrets[client.ObjectKeyFromObject(s)] = s
	}
	for i := range configMaps.Items {
		cm := &configMaps.Items[i]
		o.configMaps[client.ObjectKeyFromObject(cm)] = cm
	}
	for i := range namespaces.Items {
		n := &namespaces.Items[i]
		o.namespaces[n.Name] = n
	}

	grants, err := listReferenceGrants(ctx, c)
	if err != nil {
		return nil, err
	}
	o.grants = grants
	return o, nil
}

func listReferenceGrants(ctx context.Context, c client.Client) ([]gwv1.ReferenceGrant, error) {
	seen := map[types.NamespacedName]bool{}
	var out []gwv1.ReferenceGrant

	var v1 gwv1.ReferenceGrantList
	errV1 := c.List(ctx, &v1)
	if errV1 != nil && !isUnknownKind(errV1) {
		return nil, fmt.Errorf("listing v1 ReferenceGrants: %w", errV1)
	}
	for _, g := range v1.Items {
		seen[client.ObjectKeyFromObject(&g)] = true
		out = append(out, g)
	}

	var beta gwv1beta1.ReferenceGrantList
	errBeta := c.List(ctx, &beta)
	if errBeta != nil && !isUnknownKind(errBeta) {
		return nil, fmt.Errorf("listing v1beta1 ReferenceGrants: %w", errBeta)
	}
	for _, g := range beta.Items {
		if seen[client.ObjectKeyFromObject(&g)] {
			continue
		}
		out = append(out, gwv1.ReferenceGrant(g))
	}
	return out, nil
}

// isUnknownKind reports whether err says the kind is not served: no CRD or
// version for it (a RESTMapper miss, or the server's 404 for the resource),
// or not in the client's scheme.
func isUnknownKind(err error) bool {
	return meta.IsNoMatchError(err) || runtime.IsNotRegisteredError(err) || apierrors.IsNotFound(err)
}
