package controller

import (
	"crypto/tls"
	"fmt"
	"net"
	"slices"
	"strconv"

	"github.com/gatewitness/gatewitness/gateway/ir"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// refError says why a reference did not resolve: Reason is the condition
// reason the spec prescribes (a ListenerConditionReason or a
// RouteConditionReason), Message names the reference.
type refError struct {
	Reason  string
	Message string
}

func (e *refError) Error() string { return e.Reason + ": " + e.Message }

// supportedAppProtocols are the Service port appProtocols the data plane can
// speak to a backend: plain HTTP/1.1 (with upgrades such as WebSocket) and
// HTTP/2 over cleartext. Anything else yields ResolvedRefs=False with reason
// UnsupportedProtocol, as the BackendRef docs require.
var supportedAppProtocols = map[string]bool{
	"":                  true,
	"http":              true,
	"kubernetes.io/h2c": true,
	"kubernetes.io/ws":  true,
}

// grantAllows reports whether a ReferenceGrant in the target namespace
// allows a reference from (fromGroup, fromKind) objects in fromNS to the
// object (toGroup, toKind, toName) in toNS. A grant's "to" entry without a
// name allows every object of that kind (ReferenceGrantTo.Name).
func (o *objects) grantAllows(fromGroup, fromKind, fromNS, toGroup, toKind, toNS, toName string) bool {
	for _, g := range o.grants {
		if g.Namespace != toNS {
			continue
		}
		fromOK := slices.ContainsFunc(g.Spec.From, func(f gwv1.ReferenceGrantFrom) bool {
			return string(f.Group) == fromGroup && string(f.Kind) == fromKind && string(f.Namespace) == fromNS
		})
		toOK := slices.ContainsFunc(g.Spec.To, func(t gwv1.ReferenceGrantTo) bool {
			return string(t.Group) == toGroup && string(t.Kind) == toKind && (t.Name == nil || string(*t.Name) == toName)
		})
		if fromOK && toOK {
			return true
		}
	}
	return false
}

// resolveCertificate resolves one certificateRef of a listener of gw to a
// key pair, with the listener ResolvedRefs reasons of the spec: a reference
// across namespaces without a ReferenceGrant is RefNotPermitted (checked
// first, so existence is not leaked); a wrong group or kind, a missing
// Secret or malformed key material is InvalidCertificateRef.
func (o *objects) resolveCertificate(gw *gwv1.Gateway, ref gwv1.SecretObjectReference) (tls.Certificate, *refError) {
	group := string(deref(ref.Group, ""))
	kind := string(deref(ref.Kind, "Secret"))
	ns := string(deref(ref.Namespace, gwv1.Namespace(gw.Namespace)))
	name := string(ref.Name)
	where := ns + "/" + name

	if ns != gw.Namespace && !o.grantAllows(gwv1.GroupName, "Gateway", gw.Namespace, "", "Secret", ns, name) {
		return tls.Certificate{}, &refError{string(gwv1.ListenerReasonRefNotPermitted),
			fmt.Sprintf("certificateRef to Secret %s is not permitted by any ReferenceGrant in namespace %s", where, ns)}
	}
	if group != "" || kind != "Secret" {
		return tls.Certificate{}, &refError{string(gwv1.ListenerReasonInvalidCertificateRef),
			fmt.Sprintf("certificateRef %s has group %q kind %q; only core Secrets (group \"\", kind Secret) are supported", where, group, kind)}
	}
	secret := o.secrets[types.NamespacedName{Namespace: ns, Name: name}]
	if secret == nil {
		return tls.Certificate{}, &refError{string(gwv1.ListenerReasonInvalidCertificateRef),
			fmt.Sprintf("certificateRef Secret %s does not exist", where)}
	}
	cert, err := tls.X509KeyPair(secret.Data[corev1.TLSCertKey], secret.Data[corev1.TLSPrivateKeyKey])
	if err != nil {
		return tls.Certificate{}, &refError{string(gwv1.ListenerReasonInvalidCertificateRef),
			fmt.Sprintf("certificateRef Secret %s does not hold a valid %s/%s key pair: %v", where, corev1.TLSCertKey, corev1.TLSPrivateKeyKey, err)}
	}
	return cert, nil
}

// resolveBackend resolves a backendRef of a route of kind routeKind in
// routeNS to a data plane Backend. The route ResolvedRefs reasons follow the
// BackendRef docs: a kind other than core Service is InvalidKind; a
// reference across namespaces without a ReferenceGrant is RefNotPermitted; a
// missing Service or Service port is BackendNotFound; a Service port whose
// appProtocol the data plane cannot speak is UnsupportedProtocol. On error
// the Backend is still returned, marked Invalid, so requests routed to it
// get 500 as the spec requires.
func (o *objects) resolveBackend(routeKind, routeNS string, ref gwv1.BackendObjectReference, weight int32) (ir.Backend, *refError) {
	group := string(deref(ref.Group, ""))
	kind := string(deref(ref.Kind, "Service"))
	ns := string(deref(ref.Namespace, gwv1.Namespace(routeNS)))
	name := string(ref.Name)
	b := ir.Backend{Name: ns + "/" + name, Weight: weight}
	if ref.Port != nil {
		b.Name += ":" + strconv.Itoa(int(*ref.Port))
	}
	fail := func(reason gwv1.RouteConditionReason, format string, args ...any) (ir.Backend, *refError) {
		b.Invalid = true
		return b, &refError{string(reason), fmt.Sprintf(format, args...)}
	}

	if group != "" || kind != "Service" {
		return fail(gwv1.RouteReasonInvalidKind, "backendRef %s has group %q kind %q; only core Services are supported", b.Name, group, kind)
	}
	if ns != routeNS && !o.grantAllows(gwv1.GroupName, routeKind, routeNS, "", "Service", ns, name) {
		return fail(gwv1.RouteReasonRefNotPermitted, "backendRef to Service %s is not permitted by any ReferenceGrant in namespace %s", b.Name, ns)
	}
	svc := o.services[types.NamespacedName{Namespace: ns, Name: name}]
	if svc == nil {
		return fail(gwv1.RouteReasonBackendNotFound, "Service %s/%s does not exist", ns, name)
	}
	if ref.Port == nil {
		return fail(gwv1.RouteReasonBackendNotFound, "backendRef to Service %s/%s has no port; a port is required", ns, name)
	}
	var port *corev1.ServicePort
	for i := range svc.Spec.Ports {
		if svc.Spec.Ports[i].Port == int32(*ref.Port) {
			port = &svc.Spec.Ports[i]
		}
	}
	if port == nil {
		return fail(gwv1.RouteReasonBackendNotFound, "Service %s/%s has no port %d", ns, name, *ref.Port)
	}
	b.AppProtocol = deref(port.AppProtocol, "")
	// A TLSRoute's bytes pass through unread: any appProtocol will do.
	if routeKind != "TLSRoute" && !supportedAppProtocols[b.AppProtocol] {
		return fail(gwv1.RouteReasonUnsupportedProtocol, "Service %s port %d has appProtocol %q; supported: \"\", http, kubernetes.io/h2c, kubernetes.io/ws", b.Name, port.Port, b.AppProtocol)
	}
	b.Endpoints = o.readyEndpoints(types.NamespacedName{Namespace: ns, Name: name}, port.Name)
	b.RetryBudget = o.retryBudgets[types.NamespacedName{Namespace: ns, Name: name}] // retrybudget.go
	return b, nil
}

// readyEndpoints returns the sorted, deduplicated "ip:port" addresses of the
// ready endpoints of a Service port, from the EndpointSlices labelled
// kubernetes.io/service-name. A slice port is the Service port's when their
// names are equal (both empty for a single unnamed port); its number is the
// target port. An endpoint whose ready condition is unset counts as ready,
// as the EndpointConditions docs say. FQDN slices are skipped.
func (o *objects) readyEndpoints(svc types.NamespacedName, portName string) []string {
	var eps []string
	for _, s := range o.slices[svc] {
		if s.AddressType == discoveryv1.AddressTypeFQDN {
			continue
		}
		var target int32
		for _, p := range s.Ports {
			if deref(p.Name, "") == portName && p.Port != nil {
				target = *p.Port
			}
		}
		if target == 0 {
			continue
		}
		for _, ep := range s.Endpoints {
			if ep.Conditions.Ready != nil && !*ep.Conditions.Ready {
				continue
			}
			if len(ep.Addresses) == 0 {
				continue
			}
			// The addresses of one endpoint are fungible; use the first.
			eps = append(eps, net.JoinHostPort(ep.Addresses[0], strconv.Itoa(int(target))))
		}
	}
	slices.Sort(eps)
	return slices.Compact(eps)
}

// deref returns *p, or def when p is nil.
func deref[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}
