package controller

import (
	"strings"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// intersectHostnames returns the hostnames a route serves on a listener, as
// the Listener.Hostname and HTTPRoute/GRPCRoute .spec.hostnames docs define
// them:
//
//   - a listener without a hostname accepts every route hostname;
//   - a route without hostnames takes the listener's hostname;
//   - otherwise only the route hostnames that match the listener hostname are
//     kept (an exact name under a wildcard, or a wildcard under or over the
//     other side, in which case the more specific of the two is kept).
//
// ok is false when both sides name hostnames and none intersect: the route
// then must not attach to that listener (NoMatchingListenerHostname).
// An empty result with ok true means "any host".
func intersectHostnames(listener *gwv1.Hostname, route []gwv1.Hostname) (hosts []string, ok bool) {
	lh := ""
	if listener != nil {
		lh = strings.ToLower(string(*listener))
	}
	if len(route) == 0 {
		if lh == "" {
			return nil, true
		}
		return []string{lh}, true
	}
	for _, r := range route {
		rh := strings.ToLower(string(r))
		if lh == "" {
			hosts = appendUnique(hosts, rh)
			continue
		}
		if h, match := intersectHostname(lh, rh); match {
			hosts = appendUnique(hosts, h)
		}
	}
	return hosts, len(hosts) > 0
}

// intersectHostname intersects two hostnames that may each be a wildcard
// ("*.example.com"). It returns the more specific of the two when one is
// contained in the other.
func intersectHostname(a, b string) (string, bool) {
	switch {
	case a == b:
		return a, true
	case isWildcard(a) && !isWildcard(b):
		return b, wildcardMatches(a, b)
	case !isWildcard(a) && isWildcard(b):
		return a, wildcardMatches(b, a)
	case isWildcard(a) && isWildcard(b):
		// "*.foo.example.com" lies inside "*.example.com".
		if wildcardMatches(a, strings.TrimPrefix(b, "*.")) {
			return b, true
		}
		if wildcardMatches(b, strings.TrimPrefix(a, "*.")) {
			return a, true
		}
	}
	return "", false
}

// isWildcard reports whether h is a wildcard hostname ("*.example.com").
func isWildcard(h string) bool { return strings.HasPrefix(h, "*.") }

// wildcardMatches reports whether the exact hostname host matches the
// wildcard pattern: the wildcard stands for one or more labels, so
// "*.example.com" matches "a.example.com" and "a.b.example.com" but not
// "example.com".
func wildcardMatches(pattern, host string) bool {
	suffix := strings.TrimPrefix(pattern, "*") // ".example.com"
	return len(host) > len(suffix) && strings.HasSuffix(host, suffix)
}

// hostnamesOverlap reports whether two effective hostname lists (as returned
// by intersectHostnames; empty means any host) share at least one hostname.
func hostnamesOverlap(a, b []string) bool {
	if len(a) == 0 || len(b) == 0 {
		return true
	}
	for _, x := range a {
		for _, y := range b {
			if _, ok := intersectHostname(x, y); ok {
				return true
			}
		}
	}
	return false
}

func appendUnique(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}
