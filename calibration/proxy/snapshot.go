package proxy

import (
	"cmp"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatewitness/gatewitness/gateway/ir"
)

// Port is one (Gateway, listener port): one socket of the proxy.
type Port struct {
	Namespace, Name string
	Port            int32
	// Addr is the socket the proxy binds for it ("ip:port").
	Addr string
	// TLS is true for an HTTPS port: the proxy terminates TLS with the
	// certificates of Certs, chosen by SNI.
	TLS   bool
	Certs []Cert
	// Timeouts are the Gateway's connection timeouts.
	Timeouts ir.ConnectionTimeouts
	// Entries are the port's matches in the order they must be tried:
	// the first that matches a request routes it.
	Entries []Entry
}

// Rules lists the rules p's entries route to (indexes of Snapshot.Rules),
// once each, in increasing order.
func (p Port) Rules() []int {
	var ids []int
	for _, e := range p.Entries {
		if !slices.Contains(ids, e.Rule) {
			ids = append(ids, e.Rule)
		}
	}
	slices.Sort(ids)
	return ids
}

// Cert is one listener's certificate, written as a PEM file (chain and
// key) for the proxy to read.
type Cert struct {
	Listener string
	Hostname string // the listener's hostname; "" for any
	PEM      []byte
}

// Entry is one HTTPRoute match on one hostname, and the rule it routes to.
type Entry struct {
	// Host is the hostname the request's Host must have: "" any,
	// "*.example.com" a wildcard (one or more labels), else exact.
	Host  string
	Match gwv1.HTTPRouteMatch
	// Rule indexes Snapshot.Rules.
	Rule int
}

// Rule is one HTTPRoute rule, with the name the proxy's configuration
// gives its backend.
type Rule struct {
	ID    string
	Route string // namespace/name of the route, for comments
	*ir.HTTPRule
}

// AttemptTimeout is the inactivity timeout of one attempt of the rule's
// requests, as a proxy with no deadline over a request's retries
// expresses the rule's timeouts: the backend request timeout when it is
// set, else the request timeout, else server (the Gateway's server
// timeout); 0 when the one that holds is off ("0s"). timed reports
// whether the rule sets one.
func (r Rule) AttemptTimeout(server time.Duration) (d time.Duration, timed bool, err error) {
	d, to := server, r.Timeouts
	if to == nil {
		return d, false, nil
	}
	for _, t := range []*gwv1.Duration{to.Request, to.BackendRequest} { // the per-attempt one wins
		if t == nil {
			continue
		}
		if d, err = ir.ParseDuration("timeouts", t); err != nil {
			return 0, false, err
		}
		timed = true
	}
	return d, timed, nil
}

// RetryConditions spells, with prefix, each of the retry stanza's codes
// that accepted lists (the codes a proxy's retry directive can name), in
// order. A code it does not list is left out, and named in the error with
// what the directive accepts (directive, e.g. "retry-on accepts").
func RetryConditions(codes []gwv1.HTTPRouteRetryStatusCode, accepted []int, prefix, directive string) ([]string, error) {
	var out []string
	var err error
	for _, c := range codes {
		if !slices.Contains(accepted, int(c)) {
			err = fmt.Errorf("retry code %d: %s only %v", c, directive, accepted)
			continue
		}
		out = append(out, prefix+strconv.Itoa(int(c)))
	}
	return out, err
}

// Forever stands for a timeout that is off ("0s" in the Gateway API):
// HAProxy wants every timeout set, and nginx has no "off" for its
// timeouts.
const Forever = "24h"

// Timeout writes d as both proxies' configurations take a timeout: in
// milliseconds, the finest unit either has (at least 1ms); Forever when d
// is 0 (off).
func Timeout(d time.Duration) string {
	if d <= 0 {
		return Forever
	}
	return strconv.FormatInt(max(d.Milliseconds(), 1), 10) + "ms"
}

// Snapshot is a routing snapshot flattened for a proxy's configuration:
// every port with its ordered matches, and every rule they route to.
type Snapshot struct {
	Ports []Port
	Rules []Rule
	// Omitted names the routes and rules left out because the proxy's
	// configuration cannot express them; the tests that need them need
	// features the proxy does not claim.
	Omitted []string
}

// Flatten turns cfg into a Snapshot, the sockets chosen by sockets. A
// listener a proxy cannot serve (TLS passthrough) is left out and named in
// the error, so the Gateways are not Programmed rather than served without
// it; routes and rules it cannot express (GRPCRoutes, filters) are left
// out and named in Snapshot.Omitted.
func Flatten(cfg *ir.Config, sockets *Sockets) (*Snapshot, error) {
	s := &Snapshot{}
	var errs []string
	for gi := range cfg.Gateways {
		g := &cfg.Gateways[gi]
		byPort := map[int32]*Port{}
		var order []int32
		for li := range g.Listeners {
			l := &g.Listeners[li]
			where := fmt.Sprintf("Gateway %s/%s listener %q", g.Namespace, g.Name, l.Name)
			switch l.Protocol {
			case gwv1.HTTPProtocolType, gwv1.HTTPSProtocolType:
			default:
				errs = append(errs, fmt.Sprintf("%s: protocol %s %v", where, l.Protocol, errUnsupported))
				continue
			}
			if len(l.GRPCRoutes) > 0 {
				s.Omitted = append(s.Omitted, fmt.Sprintf("%s: GRPCRoutes %v", where, errUnsupported))
			}
			p := byPort[l.Port]
			if p == nil {
				addr, err := sockets.For(g.Namespace, g.Name, l.Port)
				if err != nil {
					errs = append(errs, fmt.Sprintf("%s: %v", where, err))
					continue
				}
				p = &Port{Namespace: g.Namespace, Name: g.Name, Port: l.Port, Addr: addr, Timeouts: g.Timeouts,
					TLS: l.Protocol == gwv1.HTTPSProtocolType}
				byPort[l.Port] = p
				order = append(order, l.Port)
			}
			if l.Protocol == gwv1.HTTPSProtocolType {
				if len(l.Certificates) == 0 {
					errs = append(errs, fmt.Sprintf("%s: HTTPS without a certificate", where))
					continue
				}
				pemBytes, err := certPEM(l)
				if err != nil {
					errs = append(errs, fmt.Sprintf("%s: %v", where, err))
					continue
				}
				p.Certs = append(p.Certs, Cert{Listener: l.Name, Hostname: l.Hostname, PEM: pemBytes})
			}
			for ri := range l.HTTPRoutes {
				r := &l.HTTPRoutes[ri]
				hosts := r.Hostnames
				if len(hosts) == 0 {
					hosts = []string{l.Hostname}
				}
				for ki := range r.Rules {
					rule := &r.Rules[ki]
					if err := expressible(rule); err != nil {
						s.Omitted = append(s.Omitted, fmt.Sprintf("HTTPRoute %s/%s rule %d: %v", r.Namespace, r.Name, ki, err))
						continue
					}
					id := len(s.Rules)
					s.Rules = append(s.Rules, Rule{ID: fmt.Sprintf("r%d", id), Route: r.Namespace + "/" + r.Name, HTTPRule: rule})
					matches := rule.Matches
					if len(matches) == 0 {
						matches = []gwv1.HTTPRouteMatch{{}}
					}
					for _, h := range hosts {
						for _, m := range matches {
							p.Entries = append(p.Entries, Entry{Host: h, Match: m, Rule: id})
						}
					}
				}
			}
		}
		for _, port := range order {
			p := byPort[port]
			slices.SortStableFunc(p.Entries, compareEntries)
			s.Ports = append(s.Ports, *p)
		}
	}
	if len(errs) > 0 {
		return s, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return s, nil
}

// expressible says why rule cannot be written for a proxy, if it cannot.
func expressible(rule *ir.HTTPRule) error {
	if len(rule.Filters) > 0 {
		return fmt.Errorf("filters %v", errUnsupported)
	}
	for _, b := range rule.Backends {
		if len(b.Filters) > 0 {
			return fmt.Errorf("backendRef filters %v", errUnsupported)
		}
	}
	return nil
}

// compareEntries orders matches as HTTPRoute precedence does: the more
// specific hostname first (exact, then the longer wildcard, then any),
// then an Exact path, the longer prefix, a method, more headers, more
// query parameters. Ties keep the order of Flatten (routes by the
// controller's order, which has the oldest first).
func compareEntries(a, b Entry) int {
	if c := cmp.Compare(hostRank(b.Host), hostRank(a.Host)); c != 0 {
		return c
	}
	if c := cmp.Compare(pathRank(b.Match), pathRank(a.Match)); c != 0 {
		return c
	}
	if c := cmp.Compare(boolRank(b.Match.Method != nil), boolRank(a.Match.Method != nil)); c != 0 {
		return c
	}
	if c := cmp.Compare(len(b.Match.Headers), len(a.Match.Headers)); c != 0 {
		return c
	}
	return cmp.Compare(len(b.Match.QueryParams), len(a.Match.QueryParams))
}

func hostRank(h string) int {
	switch {
	case h == "":
		return 0
	case strings.HasPrefix(h, "*."):
		return 1 + len(h)
	default:
		return 1 << 20
	}
}

func pathRank(m gwv1.HTTPRouteMatch) int {
	t, v := PathOf(m)
	if t == gwv1.PathMatchExact {
		return 1 << 20
	}
	return len(v)
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}

// PathOf returns a match's path type and value, defaulted as the API
// defaults them (PathPrefix "/").
func PathOf(m gwv1.HTTPRouteMatch) (gwv1.PathMatchType, string) {
	t, v := gwv1.PathMatchPathPrefix, "/"
	if m.Path != nil {
		if m.Path.Type != nil {
			t = *m.Path.Type
		}
		if m.Path.Value != nil {
			v = *m.Path.Value
		}
	}
	return t, v
}

// certPEM writes the listener's first certificate as PEM: the chain, then
// the key as PKCS #8.
func certPEM(l *ir.Listener) ([]byte, error) {
	c := l.Certificates[0]
	var out []byte
	for _, der := range c.Certificate {
		out = append(out, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...)
	}
	key, err := x509.MarshalPKCS8PrivateKey(c.PrivateKey)
	if err != nil {
		return nil, fmt.Errorf("encoding the certificate's key: %w", err)
	}
	return append(out, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: key})...), nil
}
