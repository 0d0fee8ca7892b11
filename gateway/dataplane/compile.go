package dataplane

import (
	"cmp"
	"crypto/tls"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// snapshot is a Config compiled for serving: per socket, the listeners in
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
	timeouts    ConnectionTimeouts
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

// stringMatch matches a string exactly or by a regular expression; the zero
// value matches anything.
type stringMatch struct {
	value string
	re    *regexp.Regexp
}

func (m stringMatch) matches(s string) bool {
	if m.re != nil {
		return m.re.MatchString(s)
	}
	return m.value == "" || m.value == s
}

// valueMatch matches one header or query parameter by name.
type valueMatch struct {
	name string // canonical header key, or the query parameter name as given
	stringMatch
}

// action is what a matched rule does: filters and weighted backends.
type action struct {
	filters     filterSet
	backends    []*backend
	totalWeight int64
	grpc        bool // a GRPCRoute rule: backends speak h2c, errors are gRPC statuses
	invalid     string
	// requestTimeout bounds the whole exchange and backendTimeout each
	// attempt (GEP-1742); zero means no limit.
	requestTimeout, backendTimeout time.Duration
	// retry is the rule's retry policy (GEP-1731); nil makes one attempt.
	retry *retryPolicy
	// grpcLimits are a GRPCRoute rule's timeouts (GEP-3139).
	grpcLimits grpcLimits
	// serverTimeout is the Gateway's ConnectionTimeouts.Server: the
	// longest silence of a backend during an attempt; zero means none.
	serverTimeout time.Duration
}

// backend is a resolved backendRef with its round-robin cursor.
type backend struct {
	name      string
	weight    int64
	invalid   bool
	endpoints []string
	h2c       bool
	filters   filterSet
	budget    *RetryBudget // nil: no retry budget
	next      atomic.Uint64
}

// pickEndpoint returns the next endpoint in round-robin order, or "" when
// there is none.
func (b *backend) pickEndpoint() string {
	if len(b.endpoints) == 0 {
		return ""
	}
	n := b.next.Add(1) - 1
	return b.endpoints[n%uint64(len(b.endpoints))]
}

// compile turns a Config into a snapshot. Listeners that cannot be served are
// left out and reported in the returned error; everything else is compiled.
func compile(cfg *Config) (*snapshot, error) {
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
func compileListener(l *Listener) (*listenerTable, error) {
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
func routeHosts(m *RouteMeta) []hostPattern {
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
func compileTLSRoute(r *TLSRoute) ([]*tlsEntry, error) {
	key := r.Namespace + "/" + r.Name
	where := "TLSRoute " + key
	act := &action{}
	err := act.compileBackends(r.Backends, false, where)
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

func (m stringMatch) len() int {
	if m.re != nil {
		return len(m.re.String())
	}
	return len(m.value)
}

func compileHTTPRoute(r *HTTPRoute) ([]*httpEntry, error) {
	key := r.Namespace + "/" + r.Name
	hosts := routeHosts(&r.RouteMeta)
	var entries []*httpEntry
	var errs []error
	for ri := range r.Rules {
		rule := &r.Rules[ri]
		where := fmt.Sprintf("HTTPRoute %s rule %d", key, ri)
		act := &action{}
		if err := act.compileFilters(rule.Filters); err != nil {
			errs = append(errs, act.fail(where, "500", err))
		}
		if err := act.compileTimeouts(rule.Timeouts); err != nil {
			errs = append(errs, act.fail(where, "500", err))
		}
		if err := act.compileRetry(rule.Retry); err != nil {
			errs = append(errs, act.fail(where, "500", err))
		}
		errs = append(errs, act.compileBackends(rule.Backends, false, where))
		matches := rule.Matches
		if len(matches) == 0 {
			matches = []gwv1.HTTPRouteMatch{{}}
		}
		common := entryCommon{order: routeOrder{created: r.Created, key: key, rule: ri}, route: where, action: act}
		entries, errs = appendEntries(entries, errs, matches, compileHTTPMatch, hosts, common,
			func(e *httpEntry, c entryCommon) { e.entryCommon = c })
	}
	return entries, errors.Join(errs...)
}

// fail marks the action invalid for err, so that its rule answers with an
// error (answers says which, for the report: "500", "INTERNAL"), and
// returns err as the route's report names it.
func (a *action) fail(where, answers string, err error) error {
	a.invalid = err.Error()
	return fmt.Errorf("%s: %w (the rule answers %s)", where, err, answers)
}

// appendEntries compiles each of a rule's matches with compile and appends
// a copy of the compiled match for every route hostname in hosts, with
// common (whose order lacks only the match's index and whose host is
// unset) completed and stored in it by set. A match that does not compile
// is left out, and an error naming it is appended to errs.
func appendEntries[M, E any](entries []*E, errs []error, matches []M, compile func(*M) (*E, error),
	hosts []hostPattern, common entryCommon, set func(*E, entryCommon)) ([]*E, []error) {
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
			set(&e, c)
			entries = append(entries, &e)
		}
	}
	return entries, errs
}

func compileHTTPMatch(m *gwv1.HTTPRouteMatch) (*httpEntry, error) {
	e := &httpEntry{pathKind: pathPrefix, pathLen: 1}
	if m.Path != nil {
		typ := gwv1.PathMatchPathPrefix
		if m.Path.Type != nil {
			typ = *m.Path.Type
		}
		value := "/"
		if m.Path.Value != nil {
			value = *m.Path.Value
		}
		e.pathLen = len(value)
		switch typ {
		case gwv1.PathMatchExact:
			if !strings.HasPrefix(value, "/") {
				return nil, fmt.Errorf("path: Exact value %q must start with \"/\"", value)
			}
			e.pathKind, e.path = pathExact, value
		case gwv1.PathMatchPathPrefix:
			if !strings.HasPrefix(value, "/") {
				return nil, fmt.Errorf("path: PathPrefix value %q must start with \"/\"", value)
			}
			e.pathKind, e.path = pathPrefix, strings.TrimRight(value, "/")
		case gwv1.PathMatchRegularExpression:
			re, err := compileFullRegexp(value)
			if err != nil {
				return nil, fmt.Errorf("path: %w", err)
			}
			e.pathKind, e.pathRe = pathRegex, re
		default:
			return nil, fmt.Errorf("path: type %q is not supported; accepted types are Exact, PathPrefix and RegularExpression", typ)
		}
	}
	if m.Method != nil {
		e.method = string(*m.Method)
	}
	for i, h := range m.Headers {
		vm, err := compileValueMatch(fmt.Sprintf("headers[%d]", i), canonicalHeader(string(h.Name)), h.Value, (*string)(h.Type))
		if err != nil {
			return nil, err
		}
		e.headers = append(e.headers, vm)
	}
	for i, q := range m.QueryParams {
		vm, err := compileValueMatch(fmt.Sprintf("queryParams[%d]", i), string(q.Name), q.Value, (*string)(q.Type))
		if err != nil {
			return nil, err
		}
		e.query = append(e.query, vm)
	}
	return e, nil
}

func compileGRPCRoute(r *GRPCRoute) ([]*grpcEntry, error) {
	key := r.Namespace + "/" + r.Name
	hosts := routeHosts(&r.RouteMeta)
	var entries []*grpcEntry
	var errs []error
	for ri := range r.Rules {
		rule := &r.Rules[ri]
		where := fmt.Sprintf("GRPCRoute %s rule %d", key, ri)
		act := &action{grpc: true}
		if err := act.compileFilters(grpcFilters(rule.Filters)); err != nil {
			errs = append(errs, act.fail(where, "INTERNAL", err))
		}
		if err := act.compileGRPCTimeouts(rule); err != nil {
			errs = append(errs, act.fail(where, "INTERNAL", err))
		}
		errs = append(errs, act.compileBackends(rule.Backends, true, where))
		matches := rule.Matches
		if len(matches) == 0 {
			matches = []gwv1.GRPCRouteMatch{{}}
		}
		common := entryCommon{order: routeOrder{created: r.Created, key: key, rule: ri}, route: where, action: act}
		entries, errs = appendEntries(entries, errs, matches, compileGRPCMatch, hosts, common,
			func(e *grpcEntry, c entryCommon) { e.entryCommon = c })
	}
	return entries, errors.Join(errs...)
}

func compileGRPCMatch(m *gwv1.GRPCRouteMatch) (*grpcEntry, error) {
	e := &grpcEntry{}
	if m.Method != nil {
		regex := m.Method.Type != nil && *m.Method.Type == gwv1.GRPCMethodMatchRegularExpression
		if m.Method.Type != nil && !regex && *m.Method.Type != gwv1.GRPCMethodMatchExact {
			return nil, fmt.Errorf("method: type %q is not supported; accepted types are Exact and RegularExpression", *m.Method.Type)
		}
		var err error
		if m.Method.Service != nil && *m.Method.Service != "" {
			if e.service, err = newStringMatch(*m.Method.Service, regex); err != nil {
				return nil, fmt.Errorf("method.service: %w", err)
			}
		}
		if m.Method.Method != nil && *m.Method.Method != "" {
			if e.method, err = newStringMatch(*m.Method.Method, regex); err != nil {
				return nil, fmt.Errorf("method.method: %w", err)
			}
		}
	}
	for i, h := range m.Headers {
		vm, err := compileValueMatch(fmt.Sprintf("headers[%d]", i), canonicalHeader(string(h.Name)), h.Value, (*string)(h.Type))
		if err != nil {
			return nil, err
		}
		e.headers = append(e.headers, vm)
	}
	return e, nil
}

// maxRegexpLen bounds the size of a regular expression in a match.
const maxRegexpLen = 1024

// compileFullRegexp compiles an RE2 expression that must match a whole value.
func compileFullRegexp(expr string) (*regexp.Regexp, error) {
	if len(expr) > maxRegexpLen {
		return nil, fmt.Errorf("regular expression is %d bytes; the limit is %d", len(expr), maxRegexpLen)
	}
	re, err := regexp.Compile("^(?:" + expr + ")$")
	if err != nil {
		return nil, fmt.Errorf("regular expression %q is not valid RE2 syntax: %w", expr, err)
	}
	return re, nil
}

func newStringMatch(value string, regex bool) (stringMatch, error) {
	if !regex {
		return stringMatch{value: value}, nil
	}
	re, err := compileFullRegexp(value)
	return stringMatch{re: re}, err
}

// compileValueMatch compiles the header or query parameter match that
// field names ("headers[0]"): name must hold value, exactly or by the
// regular expression, as typ says (nil means Exact). The HTTP and gRPC
// match types share their values, Exact and RegularExpression.
func compileValueMatch(field, name, value string, typ *string) (valueMatch, error) {
	regex := typ != nil && *typ == string(gwv1.HeaderMatchRegularExpression)
	if typ != nil && !regex && *typ != string(gwv1.HeaderMatchExact) {
		return valueMatch{}, fmt.Errorf("%s: type %q is not supported; accepted types are Exact and RegularExpression", field, *typ)
	}
	vm, err := newValueMatch(name, value, regex)
	if err != nil {
		return valueMatch{}, fmt.Errorf("%s: %w", field, err)
	}
	return vm, nil
}

func newValueMatch(name, value string, regex bool) (valueMatch, error) {
	sm, err := newStringMatch(value, regex)
	return valueMatch{name: name, stringMatch: sm}, err
}

// matchValue reports whether a present value matches; unlike
// stringMatch.matches, an empty Exact value only matches an empty value.
func (m valueMatch) matchValue(v string) bool {
	if m.re != nil {
		return m.re.MatchString(v)
	}
	return m.value == v
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

// compileBackends resolves a rule's backends. It never fails the rule: an
// invalid backend answers 500 for its share of the traffic.
func (a *action) compileBackends(bs []Backend, grpc bool, where string) error {
	var errs []error
	for i := range bs {
		b := &bs[i]
		if b.Weight < 0 {
			errs = append(errs, fmt.Errorf("%s backend %s: weight %d is negative; accepted weights are 0-1000000 (the backend gets no traffic)", where, b.Name, b.Weight))
			continue
		}
		cb := &backend{
			name:      b.Name,
			weight:    int64(b.Weight),
			invalid:   b.Invalid,
			endpoints: b.Endpoints,
			h2c:       grpc || b.AppProtocol == appProtocolH2C,
			budget:    b.RetryBudget,
		}
		if err := cb.filters.compile(b.Filters); err != nil {
			cb.invalid = true
			errs = append(errs, fmt.Errorf("%s backend %s: %w (the backend answers 500)", where, b.Name, err))
		}
		a.backends = append(a.backends, cb)
		a.totalWeight += cb.weight
	}
	return errors.Join(errs...)
}

func (a *action) compileTimeouts(t *gwv1.HTTPRouteTimeouts) error {
	if t == nil {
		return nil
	}
	var err error
	if a.requestTimeout, err = parseDuration("timeouts.request", t.Request); err != nil {
		return err
	}
	a.backendTimeout, err = parseDuration("timeouts.backendRequest", t.BackendRequest)
	return err
}

// durationPattern is the Gateway API Duration syntax (GEP-2257).
var durationPattern = regexp.MustCompile(`^([0-9]{1,5}(h|m|s|ms)){1,4}$`)

// parseDuration parses an optional Gateway API Duration; nil and "0s" mean
// no limit (zero).
func parseDuration(field string, d *gwv1.Duration) (time.Duration, error) {
	if d == nil {
		return 0, nil
	}
	if !durationPattern.MatchString(string(*d)) {
		return 0, fmt.Errorf("%s: %q is not a Gateway API duration; accepted form: 1 to 4 groups of up to 5 digits and a unit h, m, s or ms, such as 10s or 1m30s", field, *d)
	}
	v, err := time.ParseDuration(string(*d))
	if err != nil {
		return 0, fmt.Errorf("%s: %w", field, err)
	}
	return v, nil
}

// appProtocolH2C is the Service appProtocol that selects cleartext HTTP/2.
const appProtocolH2C = "kubernetes.io/h2c"

func (a *action) compileFilters(fs []HTTPFilter) error {
	return a.filters.compile(fs)
}

// grpcFilters converts GRPCRoute filters to their HTTPRoute equivalents: the
// supported types share names and types.
func grpcFilters(fs []GRPCFilter) []HTTPFilter {
	out := make([]HTTPFilter, len(fs))
	for i, f := range fs {
		out[i] = HTTPFilter{
			HTTPRouteFilter: gwv1.HTTPRouteFilter{
				Type:                   gwv1.HTTPRouteFilterType(f.Type),
				RequestHeaderModifier:  f.RequestHeaderModifier,
				ResponseHeaderModifier: f.ResponseHeaderModifier,
				RequestMirror:          f.RequestMirror,
				ExtensionRef:           f.ExtensionRef,
			},
			Mirror: f.Mirror,
		}
	}
	return out
}
