// Package ir is the contract between the reference gateway's controller
// (gateway/controller) and its data plane (gateway/dataplane): one routing
// snapshot, Config, and every type it carries. The name is Envoy Gateway's
// for the same idea, an intermediate representation between the Gateway API
// objects and what serves traffic.
//
// The controller does what needs the API server: attachment, hostname
// intersection, reference resolution, defaulting, and the policies that
// target Services. What it cannot resolve it still writes down (a Backend
// marked Invalid, an unresolved mirror), so that the data plane answers for
// it as the spec says. The data plane compiles a Config once when it is
// applied (matching order, filters, weights, retries, timeouts) and never
// reads the API server.
//
// The types are plain data with no behaviour beyond walking and parsing
// helpers; a Config handed to the data plane must not be modified
// afterwards. Gatewitness's negative checks mutate a Config before it is
// applied to break the reference gateway the way real data planes go wrong
// (conformance/tests/breakages_test.go), so a field here is also a knob
// those checks can turn.
package ir

import (
	"crypto/tls"
	"time"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// Config is one complete routing snapshot: everything the data plane
// serves. It replaces the previous one whole (the data plane swaps it
// atomically), so a Gateway, listener or route left out stops being served.
type Config struct {
	// Gateways are the Gateways that serve: accepted, addressed and with
	// at least one programmable listener.
	Gateways []Gateway
}

// Gateway is one programmed Gateway. The data plane opens one socket per
// (Gateway, listener port).
type Gateway struct {
	Namespace, Name string
	Listeners       []Listener // several listeners may share a port (distinct hostnames)
	// Timeouts are the connection-level timeouts of every listener, from
	// the GatewayClass's parametersRef (conntimeouts.go).
	Timeouts ConnectionTimeouts
}

// EachRequestBackend calls f for every backend of every HTTPRoute and
// GRPCRoute rule of the Gateway: the backends that serve requests, and so
// the ones retries and retry budgets apply to (TLSRoute backends carry
// connections, which are never retried).
func (g *Gateway) EachRequestBackend(f func(*Backend)) {
	for li := range g.Listeners {
		l := &g.Listeners[li]
		for ri := range l.HTTPRoutes {
			for _, rule := range l.HTTPRoutes[ri].Rules {
				for bi := range rule.Backends {
					f(&rule.Backends[bi].Backend)
				}
			}
		}
		for ri := range l.GRPCRoutes {
			for _, rule := range l.GRPCRoutes[ri].Rules {
				for bi := range rule.Backends {
					f(&rule.Backends[bi].Backend)
				}
			}
		}
	}
}

// Listener is one accepted listener of a Gateway.
type Listener struct {
	Name         string
	Port         int32
	Protocol     gwv1.ProtocolType // HTTP, HTTPS (TLS termination) or TLS (passthrough)
	Hostname     string            // "" matches any host; may be a wildcard "*.example.com"
	Certificates []tls.Certificate // HTTPS: from the listener's certificateRefs
	HTTPRoutes   []HTTPRoute       // routes attached to this listener (HTTP, HTTPS)
	GRPCRoutes   []GRPCRoute       // (HTTP, HTTPS)
	TLSRoutes    []TLSRoute        // (TLS)
}

// RouteMeta identifies a route and orders it for precedence ties.
type RouteMeta struct {
	Namespace, Name string
	Created         time.Time
	// Hostnames are the route's hostnames intersected with the listener's
	// hostname; empty means the listener's hostname (or any host).
	Hostnames []string
}

// HTTPRoute is an HTTPRoute attached to a listener.
type HTTPRoute struct {
	RouteMeta
	Rules []HTTPRule
}

// HTTPRule is one rule of an HTTPRoute with its references resolved.
type HTTPRule struct {
	Name     string
	Matches  []gwv1.HTTPRouteMatch // defaulted: an empty list means prefix "/"
	Filters  []HTTPFilter
	Backends []HTTPBackend // none, or all invalid with zero weight: the rule answers 500
	Timeouts *gwv1.HTTPRouteTimeouts
	Retry    *gwv1.HTTPRouteRetry
}

// HTTPFilter is an HTTPRoute filter, of a rule or of a backendRef. Mirror
// is the resolved backend of a RequestMirror filter (nil for other types;
// Invalid when the reference did not resolve, and then nothing is
// mirrored).
type HTTPFilter struct {
	gwv1.HTTPRouteFilter
	Mirror *Backend
}

// GRPCRoute is a GRPCRoute attached to a listener.
type GRPCRoute struct {
	RouteMeta
	Rules []GRPCRule
}

// GRPCRule is one rule of a GRPCRoute with its references resolved.
type GRPCRule struct {
	Name     string
	Matches  []gwv1.GRPCRouteMatch
	Filters  []GRPCFilter
	Backends []GRPCBackend
	// MaxStreamDuration is the rule's timeouts.maxStreamDuration
	// (GEP-3139; zero: the route sets no limit), and StrictDeny says its
	// strictEnforcement is Deny (the client's grpc-timeout, when present,
	// bounds the call) rather than Allow (the shorter of the two does).
	MaxStreamDuration time.Duration
	StrictDeny        bool
}

// GRPCFilter is a GRPCRoute filter, of a rule or of a backendRef, kept as
// the GRPCRoute API spells it: the data plane compiles it as it is, with no
// detour through the HTTPRoute types. (The two APIs share the header
// modifier and mirror types, not the filter type; a GRPCRoute filter has no
// redirect, rewrite or CORS.) Mirror is as in HTTPFilter.
type GRPCFilter struct {
	gwv1.GRPCRouteFilter
	Mirror *Backend
}

// TLSRoute is a TLSRoute attached to a TLS passthrough listener: a
// connection whose ClientHello names one of Hostnames (SNI) is passed,
// still encrypted, to one of Backends.
type TLSRoute struct {
	RouteMeta
	// Backends are the backendRefs of the route's rule (a v1 TLSRoute
	// has exactly one rule). None, or none with weight, closes the
	// connection.
	Backends []Backend
}

// HTTPBackend is one backendRef of an HTTPRoute rule: the resolved
// reference and the filters that apply to requests sent to it, after the
// rule's own.
type HTTPBackend struct {
	Backend
	Filters []HTTPFilter
}

// GRPCBackend is one backendRef of a GRPCRoute rule: the resolved
// reference and its GRPCRoute filters, applied after the rule's own.
type GRPCBackend struct {
	Backend
	Filters []GRPCFilter
}

// Backend is one resolved backendRef: where requests (or, for a TLSRoute,
// connections) go, and what the Service's policies say about them. The
// filters of a backendRef belong to the route type, so they are in
// HTTPBackend and GRPCBackend; a mirror's backend has none.
type Backend struct {
	Name        string // "namespace/service:port", for logs and reports
	Weight      int32
	Invalid     bool     // the reference did not resolve: requests routed here get 500
	Endpoints   []string // ready endpoints, "ip:port"
	AppProtocol string   // from the Service port: "kubernetes.io/h2c" selects h2c upstream
	// RetryBudget is the retry budget of the backend's Service
	// (XBackendTrafficPolicy retryConstraint); nil: retries are bounded by
	// the route's retry stanza alone.
	RetryBudget *RetryBudget
}
