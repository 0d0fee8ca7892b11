package controller

import (
	"crypto/tls"
	"fmt"
	"slices"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// listenerState is the controller's verdict on one listener of a Gateway and
// the routes that attached to it.
type listenerState struct {
	spec *gwv1.Listener

	// supportedKinds is the listener's status.supportedKinds: the route kinds
	// its protocol supports, narrowed by allowedRoutes.kinds.
	supportedKinds []gwv1.RouteGroupKind

	// accepted is the Accepted condition; notAccepted holds the reason and
	// message when it is False.
	accepted    bool
	notAccepted reason

	// unresolved holds the ResolvedRefs reason and message when that
	// condition is False (zero: True).
	unresolved reason

	// conflicted holds the Conflicted reason (HostnameConflict or
	// ProtocolConflict) when the listener is not distinct (zero: NoConflicts).
	conflicted reason

	// tlsMode is a TLS listener's tls.mode (defaulted); modeRejected is
	// set when that mode alone made it Accepted=False (UnsupportedValue),
	// so that it still takes part in the port's conflict check: the spec
	// wants a port mixing Terminate and Passthrough TLS listeners
	// reported as ProtocolConflict on every one of them.
	tlsMode      gwv1.TLSModeType
	modeRejected bool

	certificates []tls.Certificate

	// attachments are the routes attached to this listener, in attachment
	// order; attachedRoutes counts distinct routes among them.
	attachments []*attachment
}

// reason is a condition reason with its message. The zero value means the
// condition holds (its positive reason is used).
type reason struct {
	Reason  string
	Message string
}

func (r reason) isSet() bool { return r.Reason != "" }

// usable reports whether routes may attach to the listener: it is Accepted
// and not Conflicted. Routes do attach to listeners with unresolved
// certificate references (the listener is then not Programmed, but its
// attachedRoutes still counts them).
func (l *listenerState) usable() bool { return l.accepted && !l.conflicted.isSet() }

// programmable reports whether the data plane should serve the listener.
func (l *listenerState) programmable() bool { return l.usable() && !l.unresolved.isSet() }

// routeKindsFor returns the route kinds a listener protocol supports.
// The reference gateway serves HTTP and HTTPS (TLS terminated) listeners,
// each for HTTPRoute and GRPCRoute, and TLS (passthrough) listeners for
// TLSRoute.
func routeKindsFor(p gwv1.ProtocolType) []gwv1.Kind {
	switch p {
	case gwv1.HTTPProtocolType, gwv1.HTTPSProtocolType:
		return []gwv1.Kind{"HTTPRoute", "GRPCRoute"}
	case gwv1.TLSProtocolType:
		return []gwv1.Kind{"TLSRoute"}
	}
	return nil
}

// evaluateListener checks one listener on its own (conflicts between
// listeners are found by markConflicts):
//
//   - a protocol other than HTTP, HTTPS or TLS is Accepted=False,
//     UnsupportedProtocol, with no supportedKinds;
//   - an HTTPS listener must terminate TLS (mode Terminate, the default);
//     Passthrough is Accepted=False, UnsupportedValue;
//   - a TLS listener must pass TLS through (mode Passthrough, which it
//     must state: the default is Terminate); Terminate is Accepted=False,
//     UnsupportedValue. Its certificateRefs, if any, are not read;
//   - allowedRoutes.kinds that the protocol does not support are dropped
//     from supportedKinds and make ResolvedRefs=False, InvalidRouteKinds;
//   - certificateRefs must all resolve (see resolveCertificate), else
//     ResolvedRefs=False with that reference's reason.
func (o *objects) evaluateListener(gw *gwv1.Gateway, spec *gwv1.Listener) *listenerState {
	l := &listenerState{spec: spec, accepted: true}

	supported := routeKindsFor(spec.Protocol)
	if supported == nil {
		l.accepted = false
		l.notAccepted = reason{string(gwv1.ListenerReasonUnsupportedProtocol),
			fmt.Sprintf("protocol %q is not supported; supported protocols: HTTP, HTTPS, TLS (mode Passthrough)", spec.Protocol)}
		return l
	}

	if spec.AllowedRoutes != nil && len(spec.AllowedRoutes.Kinds) > 0 {
		var invalid []string
		for _, k := range spec.AllowedRoutes.Kinds {
			group := deref(k.Group, gwv1.GroupName)
			if group == gwv1.GroupName && containsKind(supported, k.Kind) {
				l.supportedKinds = appendKind(l.supportedKinds, k.Kind)
			} else {
				invalid = append(invalid, fmt.Sprintf("%s/%s", group, k.Kind))
			}
		}
		if len(invalid) > 0 {
			l.unresolved = reason{string(gwv1.ListenerReasonInvalidRouteKinds),
				fmt.Sprintf("allowedRoutes.kinds %v are not supported on a %s listener; supported kinds: %v", invalid, spec.Protocol, supported)}
		}
	} else {
		for _, k := range supported {
			l.supportedKinds = appendKind(l.supportedKinds, k)
		}
	}

	if spec.Protocol == gwv1.TLSProtocolType {
		l.tlsMode = gwv1.TLSModeTerminate
		if spec.TLS != nil {
			l.tlsMode = deref(spec.TLS.Mode, gwv1.TLSModeTerminate)
		}
		if l.tlsMode != gwv1.TLSModePassthrough {
			// Not served, so no kinds are supported (as upstream's
			// TLSRouteListenerTerminateNotSupported expects).
			l.supportedKinds = nil
			l.accepted, l.modeRejected = false, true
			l.notAccepted = reason{string(gwv1.ListenerReasonUnsupportedValue),
				fmt.Sprintf("tls.mode %q is not supported on a TLS listener; accepted: Passthrough (set tls.mode: Passthrough; the default is Terminate)", l.tlsMode)}
		}
		return l
	}

	if spec.Protocol == gwv1.HTTPSProtocolType {
		if spec.TLS == nil || len(spec.TLS.CertificateRefs) == 0 {
			if !l.unresolved.isSet() {
				l.unresolved = reason{string(gwv1.ListenerReasonInvalidCertificateRef),
					"an HTTPS listener needs tls.certificateRefs"}
			}
			return l
		}
		if mode := deref(spec.TLS.Mode, gwv1.TLSModeTerminate); mode != gwv1.TLSModeTerminate {
			l.accepted = false
			l.notAccepted = reason{string(gwv1.ListenerReasonUnsupportedValue),
				fmt.Sprintf("tls.mode %q is not supported on an HTTPS listener; accepted: Terminate", mode)}
			return l
		}
		for _, ref := range spec.TLS.CertificateRefs {
			cert, err := o.resolveCertificate(gw, ref)
			if err != nil {
				if !l.unresolved.isSet() {
					l.unresolved = reason{err.Reason, err.Message}
				}
				continue
			}
			l.certificates = append(l.certificates, cert)
		}
		if l.unresolved.isSet() {
			l.certificates = nil
		}
	}
	return l
}

// markConflicts applies the "Distinct Listeners" rules of GatewaySpec to the
// accepted listeners of one Gateway. Listeners sharing a port must share a
// protocol, and TLS listeners a tls.mode (else every one of them is
// Conflicted, ProtocolConflict, and a TLS listener rejected for its mode
// reports that instead), and listeners sharing port and protocol must have
// different hostnames (else every one of them is Conflicted,
// HostnameConflict). No listener is picked as a winner, as the spec
// requires. Other unsupported listeners take no part.
func markConflicts(listeners []*listenerState) {
	byPort := map[gwv1.PortNumber][]*listenerState{}
	for _, l := range listeners {
		if l.accepted || l.modeRejected {
			byPort[l.spec.Port] = append(byPort[l.spec.Port], l)
		}
	}
	for port, group := range byPort {
		protocols := map[string]bool{}
		for _, l := range group {
			protocols[string(l.spec.Protocol)+"/"+string(l.tlsMode)] = true
		}
		if len(protocols) > 1 {
			// A port mixing TLS modes serves neither: no kinds (as
			// upstream's TLSRouteListenerMixedTerminationNotSupported
			// expects).
			mixedModes := slices.ContainsFunc(group, func(l *listenerState) bool { return l.modeRejected })
			for _, l := range group {
				if mixedModes {
					l.supportedKinds = nil
				}
				l.conflicted = reason{string(gwv1.ListenerReasonProtocolConflict),
					fmt.Sprintf("port %d is used by listeners of different protocols (or TLS modes)", port)}
				if l.modeRejected {
					l.notAccepted = l.conflicted
				}
			}
			continue
		}
		// Listeners rejected for their TLS mode stop here.
		group = slices.DeleteFunc(group, func(l *listenerState) bool { return !l.accepted })
		byHost := map[string][]*listenerState{}
		for _, l := range group {
			h := string(deref(l.spec.Hostname, ""))
			byHost[h] = append(byHost[h], l)
		}
		for h, same := range byHost {
			if len(same) < 2 {
				continue
			}
			for _, l := range same {
				l.conflicted = reason{string(gwv1.ListenerReasonHostnameConflict),
					fmt.Sprintf("%d listeners on port %d share hostname %q", len(same), port, h)}
			}
		}
	}
}

// allowsKind reports whether the listener admits routes of kind.
func (l *listenerState) allowsKind(kind gwv1.Kind) bool {
	for _, k := range l.supportedKinds {
		if k.Kind == kind {
			return true
		}
	}
	return false
}

func containsKind(kinds []gwv1.Kind, k gwv1.Kind) bool {
	for _, x := range kinds {
		if x == k {
			return true
		}
	}
	return false
}

func appendKind(list []gwv1.RouteGroupKind, k gwv1.Kind) []gwv1.RouteGroupKind {
	for _, x := range list {
		if x.Kind == k {
			return list
		}
	}
	group := gwv1.Group(gwv1.GroupName)
	return append(list, gwv1.RouteGroupKind{Group: &group, Kind: k})
}
