package dataplane

import (
	"cmp"
	"crypto/tls"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/gatewitness/gatewitness/gateway/ir"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// snapshot is an ir.Config compiled for serving: per socket, the listeners in
// hostname precedence order, and per listener the route matches flattened and
// sorted by the spec's precedence rules. A snapshot is immutable once built,
// except for the round-robin counters of its backends.
type snapshot struct {
	ports map[portKey]*portTable
}

// portKey names one socket: a Gateway and one of its listener ports.
type portKey struct {
	namespace, name string
	port            int32
}

func (k portKey) String() string {
	return fmt.Sprintf("%s/%s port %d", k.namespace, k.name, k.port)
}

// portTable is everything served on one socket.
type portTable struct {
	https       bool
	passthrough bool             // TLS passthrough (passthrough.go); neither: plain HTTP
	listeners   []*listenerTable // most specific hostname first
	timeouts    ir.ConnectionTimeouts
}

// listenerTable is one listener and its compiled routes.
type listenerTable struct {
	name  string
	port  int32 // the listener's port, used for redirects (not the socket's)
	https bool
	// passthrough marks a TLS listener: connections are routed by the
	// ClientHello's SNI to tls entries and tunnelled (passthrough.go).
	passthrough bool
	hostname    hostPattern
	certs       []tls.Certificate
	http        []*httpEntry // precedence order
	grpc        []*grpcEntry // precedence order
	tls         []*tlsEntry  // precedence order
}

// hostPattern is a lower-cased hostname that is exact, a wildcard
// ("*.example.com") or empty (any host).
type hostPattern string

// matches reports whether host (lower case, without port) matches p. A
// wildcard matches one or more labels in place of the "*".
func (p hostPattern) matches(host string) bool {
	switch {
	case p == "":
		return true
	case p[0] == '*':
		suffix := string(p[1:]) // ".example.com"
		return len(host) > len(suffix) && strings.HasSuffix(host, suffix)
	default:
		return string(p) == host
	}
}

// compareSpecificity orders patterns most specific first: the number of
// characters in a matching non-wildcard hostname, then the number of
// characters in a matching hostname (so exact > longer wildcard > shorter
// wildcard > empty).
func compareSpecificity(a, b hostPattern) int {
	exact := func(p hostPattern) int {
		if p == "" || p[0] == '*' {
			return 0
		}
		return len(p)
	}
	if c := cmp.Compare(exact(b), exact(a)); c != 0 {
		return c
	}
	return cmp.Compare(len(b), len(a))
}

// routeOrder carries the tie-breakers shared by HTTP and gRPC matches.
type routeOrder struct {
	created time.Time
	key     string // "namespace/name"
	rule    int
	match   int
}

func compareRouteOrder(a, b *routeOrder) int {
	if c := a.created.Compare(b.created); c != 0 {
		return c
	}
	if c := strings.Compare(a.key, b.key); c != 0 {
		return c
	}
	if c := cmp.Compare(a.rule, b.rule); c != 0 {
		return c
	}
	return cmp.Compare(a.match, b.match)
}

// pathKind orders path match types by precedence.
type pathKind int

const (
	pathExact pathKind = iota
	pathPrefix
	pathRegex
)

// entryCommon is what an HTTP or gRPC routing entry carries besides its
// match: the route hostname it is for, its place in precedence, its name
// for logs and what it does.
type entryCommon struct {
	host   hostPattern
	order  routeOrder
	route  string // "HTTPRoute namespace/name rule N" (or GRPCRoute) for logs
	action *action
}

// commonPart returns the entryCommon of the entry that embeds c.
func (c *entryCommon) commonPart() *entryCommon { return c }

// httpEntry is one (route hostname, rule, match) combination of an HTTPRoute.
type httpEntry struct {
	entryCommon
	pathKind pathKind
	path     string // Exact value, or PathPrefix value without trailing "/" ("" for "/")
	pathLen  int    // characters in the match value, for precedence
	pathRe   *regexp.Regexp
	method   string
	headers  []valueMatch
	query    []valueMatch
}

// grpcEntry is one (route hostname, rule, match) combination of a GRPCRoute.
type grpcEntry struct {
	entryCommon
	service stringMatch
	method  stringMatch
	headers []valueMatch
}

// tlsEntry is one (route hostname) of a TLSRoute: a ClientHello whose SNI
// the host matches goes to one of the action's backends.
type tlsEntry struct {
	host   hostPattern
	order  routeOrder
	route  string // "TLSRoute namespace/name" for logs
	action *action
}

// compile turns an ir.Config into a snapshot. Listeners that cannot be served are
// left out and reported in the returned error; everything else is compiled.
func compile(cfg *ir.Config) (*snapshot, error) {
	snap := &snapshot{ports: make(map[portKey]*portTable)}
	if cfg == nil {
		return snap, nil
	}
	var errs []error
	for gi := range cfg.Gateways {
		gw := &cfg.Gateways[gi]
		for li := range gw.Listeners {
			l := &gw.Listeners[li]
			where := fmt.Sprintf("gateway %s/%s listener %q (port %d)", gw.Namespace, gw.Name, l.Name, l.Port)
			lt, err := compileListener(l)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", where, err))
				if lt == nil {
					continue
				}
			}
			lt.setConnectionTimeouts(gw.Timeouts) // conntimeouts.go
			key := portKey{gw.Namespace, gw.Name, l.Port}
			pt := snap.ports[key]
			if pt == nil {
				pt = &portTable{https: lt.https, passthrough: lt.passthrough, timeouts: gw.Timeouts}
				snap.ports[key] = pt
			}
			if pt.https != lt.https || pt.passthrough != lt.passthrough {
				errs = append(errs, fmt.Errorf("%s: protocol %s conflicts with another listener on the same port; one port serves one of HTTP, HTTPS or TLS", where, l.Protocol))
				continue
			}
			if other := pt.find(lt.hostname); other != nil {
				errs = append(errs, fmt.Errorf("%s: hostname %q is already served on this port by listener %q", where, l.Hostname, other.name))
				continue
			}
			pt.listeners = append(pt.listeners, lt)
		}
	}
	for _, pt := range snap.ports {
		slices.SortStableFunc(pt.listeners, func(a, b *listenerTable) int {
			return compareSpecificity(a.hostname, b.hostname)
		})
	}
	return snap, errors.Join(errs...)
}

func (pt *portTable) find(h hostPattern) *listenerTable {
	for _, l := range pt.listeners {
		if l.hostname == h {
			return l
		}
	}
	return nil
}

// selectListener returns the listener whose hostname most specifically
// matches host, or nil.
func (pt *portTable) selectListener(host string) *listenerTable {
	for _, l := range pt.listeners {
		if l.hostname.matches(host) {
			return l
		}
	}
	return nil
}

// compileListener compiles one listener. A non-nil listener with a non-nil
// error means some routes or matches were left out; a nil listener means
// the listener cannot be served at all.
func compileListener(l *ir.Listener) (*listenerTable, error) {
	lt := &listenerTable{
		name:     l.Name,
		port:     l.Port,
		hostname: hostPattern(strings.ToLower(strings.TrimSuffix(l.Hostname, "."))),
		certs:    l.Certificates,
	}
	switch l.Protocol {
	case gwv1.HTTPProtocolType:
	case gwv1.HTTPSProtocolType:
		lt.https = true
		if len(l.Certificates) == 0 {
			return nil, errors.New("protocol HTTPS needs at least one certificate in Certificates")
		}
	case gwv1.TLSProtocolType:
		lt.passthrough = true
	default:
		return nil, fmt.Errorf("protocol %q is not served; accepted protocols are HTTP, HTTPS and TLS (passthrough)", l.Protocol)
	}
	if l.Port < 1 || l.Port > 65535 {
		return nil, fmt.Errorf("port %d is out of range; accepted ports are 1-65535", l.Port)
	}
	var errs []error
	if lt.passthrough {
		if len(l.HTTPRoutes)+len(l.GRPCRoutes) > 0 {
			errs = append(errs, errors.New("HTTPRoutes and GRPCRoutes are not served on a TLS passthrough listener; accepted: TLSRoutes (they are ignored)"))
		}
		for ri := range l.TLSRoutes {
			entries, err := compileTLSRoute(&l.TLSRoutes[ri])
			errs = append(errs, err)
			lt.tls = append(lt.tls, entries...)
		}
		slices.SortStableFunc(lt.tls, compareTLSEntries)
		return lt, errors.Join(errs...)
	}
	if len(l.TLSRoutes) > 0 {
		errs = append(errs, fmt.Errorf("TLSRoutes are not served on a %s listener; accepted: a TLS listener (they are ignored)", l.Protocol))
	}
	for ri := range l.HTTPRoutes {
		entries, err := compileHTTPRoute(&l.HTTPRoutes[ri])
		errs = append(errs, err)
		lt.http = append(lt.http, entries...)
	}
	for ri := range l.GRPCRoutes {
		entries, err := compileGRPCRoute(&l.GRPCRoutes[ri])
		errs = append(errs, err)
		lt.grpc = append(lt.grpc, entries...)
	}
	slices.SortStableFunc(lt.http, compareHTTPEntries)
	slices.SortStableFunc(lt.grpc, compareGRPCEntries)
	return lt, errors.Join(errs...)
}

// routeHosts returns the route's hostnames as patterns, or one empty pattern
// (any host) when it has none.
func routeHosts(m *ir.RouteMeta) []hostPattern {
	if len(m.Hostnames) == 0 {
		return []hostPattern{""}
	}
	hs := make([]hostPattern, len(m.Hostnames))
	for i, h := range m.Hostnames {
		hs[i] = hostPattern(strings.ToLower(strings.TrimSuffix(h, ".")))
	}
	return hs
}

// compareHTTPEntries orders HTTP matches by the HTTPRoute precedence rules:
// hostname, path (Exact, then longest PathPrefix, then RegularExpression),
// method, number of header matches, number of query matches, then the oldest
// route, the route's namespace/name, rule order and match order.
func compareHTTPEntries(a, b *httpEntry) int {
	if c := compareSpecificity(a.host, b.host); c != 0 {
		return c
	}
	if c := cmp.Compare(a.pathKind, b.pathKind); c != 0 {
		return c
	}
	if c := cmp.Compare(b.pathLen, a.pathLen); c != 0 {
		return c
	}
	if c := compareBool(b.method != "", a.method != ""); c != 0 {
		return c
	}
	if c := cmp.Compare(len(b.headers), len(a.headers)); c != 0 {
		return c
	}
	if c := cmp.Compare(len(b.query), len(a.query)); c != 0 {
		return c
	}
	return compareRouteOrder(&a.order, &b.order)
}

// compareGRPCEntries orders gRPC matches by the GRPCRoute precedence rules:
// hostname, characters in the service, characters in the method, number of
// header matches, then the route and rule order.
func compareGRPCEntries(a, b *grpcEntry) int {
	if c := compareSpecificity(a.host, b.host); c != 0 {
		return c
	}
	if c := cmp.Compare(b.service.len(), a.service.len()); c != 0 {
		return c
	}
	if c := cmp.Compare(b.method.len(), a.method.len()); c != 0 {
		return c
	}
	if c := cmp.Compare(len(b.headers), len(a.headers)); c != 0 {
		return c
	}
	return compareRouteOrder(&a.order, &b.order)
}

// compareTLSEntries orders TLSRoute hostnames most specific first, then by
// the oldest route and its namespace/name.
func compareTLSEntries(a, b *tlsEntry) int {
	if c := compareSpecificity(a.host, b.host); c != 0 {
		return c
	}
	return compareRouteOrder(&a.order, &b.order)
}

// compileTLSRoute returns one entry per hostname of a TLSRoute, all sharing
// the route's backends.
func compileTLSRoute(r *ir.TLSRoute) ([]*tlsEntry, error) {
	key := r.Namespace + "/" + r.Name
	where := "TLSRoute " + key
	act := &action{}
	err := act.compileTLSBackends(r.Backends, where)
	var entries []*tlsEntry
	for _, h := range routeHosts(&r.RouteMeta) {
		entries = append(entries, &tlsEntry{
			host:   h,
			order:  routeOrder{created: r.Created, key: key},
			route:  where,
			action: act,
		})
	}
	return entries, err
}

// matchTLS returns the TLSRoute entry for a connection whose ClientHello
// named serverName ("" without SNI): the most specific listener hostname
// that matches, then the most specific route hostname on it. Nil means no
// route: the connection is closed.
func (pt *portTable) matchTLS(serverName string) *tlsEntry {
	l := pt.selectListener(serverName)
	if l == nil {
		return nil
	}
	for _, e := range l.tls {
		if e.host.matches(serverName) {
			return e
		}
	}
	return nil
}

func compileHTTPRoute(r *ir.HTTPRoute) ([]*httpEntry, error) {
	key := r.Namespace + "/" + r.Name
	hosts := routeHosts(&r.RouteMeta)
	var entries []*httpEntry
	var errs []error
	for ri := range r.Rules {
		rule := &r.Rules[ri]
		where := fmt.Sprintf("HTTPRoute %s rule %d", key, ri)
		act := &action{}
		if err := act.filters.compileHTTP(rule.Filters); err != nil {
			errs = append(errs, act.fail(where, "500", err))
		}
		if err := act.compileTimeouts(rule.Timeouts); err != nil {
			errs = append(errs, act.fail(where, "500", err))
		}
		if err := act.compileRetry(rule.Retry); err != nil {
			errs = append(errs, act.fail(where, "500", err))
		}
		errs = append(errs, act.compileHTTPBackends(rule.Backends, where))
		matches := rule.Matches
		if len(matches) == 0 {
			matches = []gwv1.HTTPRouteMatch{{}}
		}
		common := entryCommon{order: routeOrder{created: r.Created, key: key, rule: ri}, route: where, action: act}
		es, merrs := ruleEntries(matches, compileHTTPMatch, hosts, common)
		entries, errs = append(entries, es...), append(errs, merrs...)
	}
	return entries, errors.Join(errs...)
}

// ruleEntries compiles each of a rule's matches with compile and returns
// a copy of the compiled match for every route hostname in hosts, each
// with common (whose order lacks only the match's index and whose host is
// unset) completed and stored in it. A match that does not compile is left
// out, and an error naming it is returned. E is httpEntry or grpcEntry;
// PE, its pointer type, reaches the entryCommon both embed.
func ruleEntries[M, E any, PE interface {
	*E
	commonPart() *entryCommon
}](matches []M, compile func(*M) (*E, error), hosts []hostPattern, common entryCommon) (entries []*E, errs []error) {
	for mi := range matches {
		base, err := compile(&matches[mi])
		if err != nil {
			errs = append(errs, fmt.Errorf("%s match %d: %w (the match is ignored)", common.route, mi, err))
			continue
		}
		for _, h := range hosts {
			c := common
			c.host, c.order.match = h, mi
			e := *base
			*PE(&e).commonPart() = c
			entries = append(entries, &e)
		}
	}
	return entries, errs
}

func compileGRPCRoute(r *ir.GRPCRoute) ([]*grpcEntry, error) {
	key := r.Namespace + "/" + r.Name
	hosts := routeHosts(&r.RouteMeta)
	var entries []*grpcEntry
	var errs []error
	for ri := range r.Rules {
		rule := &r.Rules[ri]
		where := fmt.Sprintf("GRPCRoute %s rule %d", key, ri)
		act := &action{grpc: true}
		if err := act.filters.compileGRPC(rule.Filters); err != nil {
			errs = append(errs, act.fail(where, "INTERNAL", err))
		}
		if err := act.compileGRPCTimeouts(rule); err != nil {
			errs = append(errs, act.fail(where, "INTERNAL", err))
		}
		errs = append(errs, act.compileGRPCBackends(rule.Backends, where))
		matches := rule.Matches
		if len(matches) == 0 {
			matches = []gwv1.GRPCRouteMatch{{}}
		}
		common := entryCommon{order: routeOrder{created: r.Created, key: key, rule: ri}, route: where, action: act}
		es, merrs := ruleEntries(matches, compileGRPCMatch, hosts, common)
		entries, errs = append(entries, es...), append(errs, merrs...)
	}
	return entries, errors.Join(errs...)
}

// compareBool orders false before true.
func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case !a:
		return -1
	default:
		return 1
	}
}
