package controller

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"
	gwxv1a1 "sigs.k8s.io/gateway-api/apisx/v1alpha1"
)

// Names of the watched kinds, as keys of the informers.
const (
	kindGatewayClass       = "GatewayClass"
	kindGateway            = "Gateway"
	kindHTTPRoute          = "HTTPRoute"
	kindGRPCRoute          = "GRPCRoute"
	kindTLSRoute           = "TLSRoute"
	kindReferenceGrant     = "ReferenceGrant"
	kindReferenceGrantBeta = "ReferenceGrant.v1beta1"
	kindService            = "Service"
	kindEndpointSlice      = "EndpointSlice"
	kindSecret             = "Secret"
	kindNamespace          = "Namespace"
	kindConfigMap          = "ConfigMap"
	kindTrafficPolicy      = "XBackendTrafficPolicy"
)

// watchedKind is one kind the controller reads.
type watchedKind struct {
	name    string
	newList func() client.ObjectList
	// status marks the kinds whose status the controller writes: an update
	// of one that changes nothing but its status schedules no recompute.
	status bool
}

// newObject returns an empty object of the kind, as informers want it.
func (k watchedKind) newObject() client.Object {
	if u, ok := k.newList().(*unstructured.UnstructuredList); ok {
		obj := &unstructured.Unstructured{}
		gvk := u.GroupVersionKind()
		gvk.Kind = gvk.Kind[:len(gvk.Kind)-len("List")]
		obj.SetGroupVersionKind(gvk)
		return obj
	}
	switch k.newList().(type) {
	case *gwv1.GatewayClassList:
		return &gwv1.GatewayClass{}
	case *gwv1.GatewayList:
		return &gwv1.Gateway{}
	case *gwv1.HTTPRouteList:
		return &gwv1.HTTPRoute{}
	case *gwv1.TLSRouteList:
		return &gwv1.TLSRoute{}
	case *gwv1.ReferenceGrantList:
		return &gwv1.ReferenceGrant{}
	case *gwv1beta1.ReferenceGrantList:
		return &gwv1beta1.ReferenceGrant{}
	case *corev1.ServiceList:
		return &corev1.Service{}
	case *discoveryv1.EndpointSliceList:
		return &discoveryv1.EndpointSlice{}
	case *corev1.SecretList:
		return &corev1.Secret{}
	case *corev1.NamespaceList:
		return &corev1.Namespace{}
	case *corev1.ConfigMapList:
		return &corev1.ConfigMap{}
	case *gwxv1a1.XBackendTrafficPolicyList:
		return &gwxv1a1.XBackendTrafficPolicy{}
	}
	panic("controller: watchedKind " + k.name + " has no object type")
}

// watchedKinds are the kinds the controller reads. GRPCRoutes are read
// unstructured, for the GEP-3139 fields the Go types lack
// (grpctimeouts.go). ConfigMaps hold GatewayClass parameters (tuning.go).
// XBackendTrafficPolicies hold retry budgets (retrybudget.go).
func watchedKinds() []watchedKind {
	return []watchedKind{
		{kindGatewayClass, func() client.ObjectList { return &gwv1.GatewayClassList{} }, true},
		{kindGateway, func() client.ObjectList { return &gwv1.GatewayList{} }, true},
		{kindHTTPRoute, func() client.ObjectList { return &gwv1.HTTPRouteList{} }, true},
		{kindGRPCRoute, func() client.ObjectList {
			l := &unstructured.UnstructuredList{}
			l.SetGroupVersionKind(gwv1.SchemeGroupVersion.WithKind("GRPCRouteList"))
			return l
		}, true},
		{kindTLSRoute, func() client.ObjectList { return &gwv1.TLSRouteList{} }, true},
		{kindReferenceGrant, func() client.ObjectList { return &gwv1.ReferenceGrantList{} }, false},
		{kindReferenceGrantBeta, func() client.ObjectList { return &gwv1beta1.ReferenceGrantList{} }, false},
		{kindService, func() client.ObjectList { return &corev1.ServiceList{} }, false},
		{kindEndpointSlice, func() client.ObjectList { return &discoveryv1.EndpointSliceList{} }, false},
		{kindSecret, func() client.ObjectList { return &corev1.SecretList{} }, false},
		{kindNamespace, func() client.ObjectList { return &corev1.NamespaceList{} }, false},
		{kindConfigMap, func() client.ObjectList { return &corev1.ConfigMapList{} }, false},
		{kindTrafficPolicy, func() client.ObjectList { return &gwxv1a1.XBackendTrafficPolicyList{} }, true},
	}
}

// Retry delays for a failed recompute: doubling from the first to the
// last, so a broken API server is not hammered and a healed one is picked
// up soon. maxRetry is also how often a kind the server does not serve is
// looked for again.
const (
	minRetry = 50 * time.Millisecond
	maxRetry = 5 * time.Second
)
