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

// hostIndex holds effective hostname lists (as returned by
// intersectHostnames) so that hostnamesOverlap against all of them at once
// costs a few map lookups per hostname and label instead of a scan of every
// list: at 10,000 routes on one listener the scan made route attachment
// quadratic.
type hostIndex struct {
	size  int             // lists added
	any   bool            // a list that serves any host was added
	exact map[string]bool // exact hostnames
	// wild holds the suffix of every wildcard ("*.example.com" is kept as
	// ".example.com"), the part wildcardMatches compares.
	wild map[string]bool
	// exactUnder and wildUnder hold every proper dot-suffix of the exact
	// hostnames and of the wildcards' domains ("a.b.example.com" gives
	// ".b.example.com" and ".com"...): a wildcard ".example.com" covers an
	// exact hostname, or lies over a narrower wildcard, exactly when its
	// suffix is one of these.
	exactUnder map[string]bool
	wildUnder  map[string]bool
}

// add indexes one effective hostname list.
func (x *hostIndex) add(hosts []string) {
	x.size++
	if len(hosts) == 0 {
		x.any = true
		return
	}
	if x.exact == nil {
		x.exact, x.wild = map[string]bool{}, map[string]bool{}
		x.exactUnder, x.wildUnder = map[string]bool{}, map[string]bool{}
	}
	for _, h := range hosts {
		if isWildcard(h) {
			x.wild[h[1:]] = true
			forEachDotSuffix(h[2:], func(s string) { x.wildUnder[s] = true })
			continue
		}
		x.exact[h] = true
		forEachDotSuffix(h, func(s string) { x.exactUnder[s] = true })
	}
}

// overlaps reports whether hosts overlaps any list in x, as
// hostnamesOverlap would for some list added to x.
func (x *hostIndex) overlaps(hosts []string) bool {
	if x.size == 0 {
		return false
	}
	if x.any || len(hosts) == 0 {
		return true
	}
	for _, h := range hosts {
		if isWildcard(h) {
			suffix := h[1:] // ".example.com"
			// The same wildcard, an exact hostname or a narrower wildcard
			// under it, or a wider wildcard over it.
			if x.wild[suffix] || x.exactUnder[suffix] || x.wildUnder[suffix] {
				return true
			}
			found := false
			forEachDotSuffix(h[2:], func(s string) { found = found || x.wild[s] })
			if found {
				return true
			}
			continue
		}
		if x.exact[h] {
			return true
		}
		found := false
		forEachDotSuffix(h, func(s string) { found = found || x.wild[s] })
		if found {
			return true
		}
	}
	return false
}

// forEachDotSuffix calls f with every proper suffix of host that starts at
// a dot: "a.b.com" gives ".b.com" and ".com".
func forEachDotSuffix(host string, f func(string)) {
	for i := 1; i < len(host); i++ {
		if host[i] == '.' {
			f(host[i:])
		}
	}
}
