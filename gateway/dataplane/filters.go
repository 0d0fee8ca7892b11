package dataplane

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/gatewitness/gatewitness/gateway/ir"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// filterSet is a rule's (or a backend's) filters, grouped by kind. The data
// plane applies them in a fixed order: CORS, redirect, request headers, URL
// rewrite, mirrors (which see the modified request), and, on the way back,
// response headers. HTTPRoute filters (compileHTTP) and GRPCRoute filters
// (compileGRPC) compile to the same set: the two APIs share the header
// modifier and mirror types, and a GRPCRoute has no other kinds.
type filterSet struct {
	requestHeaders  []*gwv1.HTTPHeaderFilter
	responseHeaders []*gwv1.HTTPHeaderFilter
	redirect        *gwv1.HTTPRequestRedirectFilter
	rewrite         *gwv1.HTTPURLRewriteFilter
	mirrors         []mirror
	cors            *corsPolicy
}

// mirror sends numerator/denominator of the requests to a backend.
type mirror struct {
	backend                *backend
	numerator, denominator int
}

// compileHTTP compiles an HTTPRoute rule's or backendRef's filters. An
// error names the filter and the field or the accepted types.
func (fs *filterSet) compileHTTP(filters []ir.HTTPFilter) error {
	for i := range filters {
		f := &filters[i]
		missing := func(field string) error {
			return fmt.Errorf("filter %d: type %s needs the field %s", i, f.Type, field)
		}
		switch f.Type {
		case gwv1.HTTPRouteFilterRequestHeaderModifier:
			if f.RequestHeaderModifier == nil {
				return missing("requestHeaderModifier")
			}
			fs.requestHeaders = append(fs.requestHeaders, f.RequestHeaderModifier)
		case gwv1.HTTPRouteFilterResponseHeaderModifier:
			if f.ResponseHeaderModifier == nil {
				return missing("responseHeaderModifier")
			}
			fs.responseHeaders = append(fs.responseHeaders, f.ResponseHeaderModifier)
		case gwv1.HTTPRouteFilterRequestRedirect:
			if f.RequestRedirect == nil {
				return missing("requestRedirect")
			}
			if fs.redirect != nil || fs.rewrite != nil {
				return fmt.Errorf("filter %d: at most one RequestRedirect or URLRewrite filter is accepted per rule", i)
			}
			fs.redirect = f.RequestRedirect
		case gwv1.HTTPRouteFilterURLRewrite:
			if f.URLRewrite == nil {
				return missing("urlRewrite")
			}
			if fs.redirect != nil || fs.rewrite != nil {
				return fmt.Errorf("filter %d: at most one RequestRedirect or URLRewrite filter is accepted per rule", i)
			}
			fs.rewrite = f.URLRewrite
		case gwv1.HTTPRouteFilterRequestMirror:
			if f.RequestMirror == nil {
				return missing("requestMirror")
			}
			if err := fs.addMirror(f.RequestMirror, f.Mirror); err != nil {
				return fmt.Errorf("filter %d: %w", i, err)
			}
		case gwv1.HTTPRouteFilterCORS:
			if f.CORS == nil {
				return missing("cors")
			}
			fs.cors = newCORSPolicy(f.CORS)
		default:
			return fmt.Errorf("filter %d: type %q is not supported; accepted types are RequestHeaderModifier, ResponseHeaderModifier, RequestRedirect, URLRewrite, RequestMirror and CORS", i, f.Type)
		}
	}
	return nil
}

// compileGRPC compiles a GRPCRoute rule's or backendRef's filters, as
// compileHTTP does HTTPRoute ones.
func (fs *filterSet) compileGRPC(filters []ir.GRPCFilter) error {
	for i := range filters {
		f := &filters[i]
		missing := func(field string) error {
			return fmt.Errorf("filter %d: type %s needs the field %s", i, f.Type, field)
		}
		switch f.Type {
		case gwv1.GRPCRouteFilterRequestHeaderModifier:
			if f.RequestHeaderModifier == nil {
				return missing("requestHeaderModifier")
			}
			fs.requestHeaders = append(fs.requestHeaders, f.RequestHeaderModifier)
		case gwv1.GRPCRouteFilterResponseHeaderModifier:
			if f.ResponseHeaderModifier == nil {
				return missing("responseHeaderModifier")
			}
			fs.responseHeaders = append(fs.responseHeaders, f.ResponseHeaderModifier)
		case gwv1.GRPCRouteFilterRequestMirror:
			if f.RequestMirror == nil {
				return missing("requestMirror")
			}
			if err := fs.addMirror(f.RequestMirror, f.Mirror); err != nil {
				return fmt.Errorf("filter %d: %w", i, err)
			}
		default:
			return fmt.Errorf("filter %d: type %q is not supported; accepted types are RequestHeaderModifier, ResponseHeaderModifier and RequestMirror", i, f.Type)
		}
	}
	return nil
}

// addMirror adds a RequestMirror filter whose backend the controller
// resolved to target. An unresolved (or missing) target mirrors nothing;
// the controller reports it.
func (fs *filterSet) addMirror(rm *gwv1.HTTPRequestMirrorFilter, target *ir.Backend) error {
	m, err := newMirror(rm, target)
	if err != nil {
		return err
	}
	if m.backend != nil {
		fs.mirrors = append(fs.mirrors, m)
	}
	return nil
}

func newMirror(rm *gwv1.HTTPRequestMirrorFilter, target *ir.Backend) (mirror, error) {
	m := mirror{numerator: 100, denominator: 100}
	switch {
	case rm.Percent != nil && rm.Fraction != nil:
		return m, fmt.Errorf("requestMirror: set percent or fraction, not both")
	case rm.Percent != nil:
		if *rm.Percent < 0 || *rm.Percent > 100 {
			return m, fmt.Errorf("requestMirror.percent: %d is out of range; accepted values are 0-100", *rm.Percent)
		}
		m.numerator = int(*rm.Percent)
	case rm.Fraction != nil:
		m.numerator, m.denominator = int(rm.Fraction.Numerator), 100
		if rm.Fraction.Denominator != nil {
			m.denominator = int(*rm.Fraction.Denominator)
		}
		if m.denominator < 1 || m.numerator < 0 || m.numerator > m.denominator {
			return m, fmt.Errorf("requestMirror.fraction: %d/%d is not valid; accepted: 0 <= numerator <= denominator, denominator >= 1", m.numerator, m.denominator)
		}
	}
	// An unresolved mirror backend mirrors nothing; the controller reports it.
	if target != nil && !target.Invalid {
		m.backend = &backend{
			name:      target.Name,
			endpoints: target.Endpoints,
			h2c:       target.AppProtocol == appProtocolH2C,
		}
	}
	return m, nil
}

// applyHeaderFilter applies one header modifier: set, then add, then remove.
func applyHeaderFilter(h http.Header, f *gwv1.HTTPHeaderFilter) {
	for _, s := range f.Set {
		h.Set(string(s.Name), s.Value)
	}
	for _, a := range f.Add {
		h.Add(string(a.Name), a.Value)
	}
	for _, name := range f.Remove {
		h.Del(name)
	}
}

// rewritePath applies a path modifier. mp.prefix is the matched PathPrefix
// without its trailing "/" (mp.ok is false when the match was not a prefix
// or exact match, in which case ReplacePrefixMatch leaves the path alone).
func rewritePath(path string, m *gwv1.HTTPPathModifier, mp matchedPath) string {
	prefix := mp.prefix
	switch m.Type {
	case gwv1.FullPathHTTPPathModifier:
		if m.ReplaceFullPath != nil {
			return *m.ReplaceFullPath
		}
	case gwv1.PrefixMatchHTTPPathModifier:
		if m.ReplacePrefixMatch != nil && mp.ok && strings.HasPrefix(path, prefix) {
			p := strings.TrimRight(*m.ReplacePrefixMatch, "/") + path[len(prefix):]
			if p == "" {
				p = "/"
			}
			return p
		}
	}
	return path
}

// redirectLocation builds the Location of a RequestRedirect filter per the
// spec's defaults: the request's scheme and host; the listener's port unless
// the filter sets a scheme (then that scheme's well-known port); the port is
// left out when it is the scheme's well-known port.
func redirectLocation(r *http.Request, l *listenerTable, rd *gwv1.HTTPRequestRedirectFilter, mp matchedPath) string {
	scheme := "http"
	if l.https {
		scheme = "https"
	}
	port := int(l.port)
	if rd.Scheme != nil {
		scheme = strings.ToLower(*rd.Scheme)
		switch scheme {
		case "http":
			port = 80
		case "https":
			port = 443
		}
	}
	if rd.Port != nil {
		port = int(*rd.Port)
	}
	host := hostWithoutPort(r.Host)
	if rd.Hostname != nil {
		host = string(*rd.Hostname)
	}
	if (scheme == "http" && port == 80) || (scheme == "https" && port == 443) {
		if strings.Contains(host, ":") {
			host = "[" + host + "]"
		}
	} else {
		host = net.JoinHostPort(host, strconv.Itoa(port))
	}
	path := r.URL.Path
	if rd.Path != nil {
		path = rewritePath(path, rd.Path, mp)
	}
	u := url.URL{Scheme: scheme, Host: host, Path: path, RawQuery: r.URL.RawQuery}
	return u.String()
}

// corsPolicy is a compiled CORS filter.
type corsPolicy struct {
	origins     []string // lower case; "*" and "scheme://*.host" wildcards allowed
	credentials bool
	methods     string // comma-separated, or "*"
	headers     string // comma-separated, or "*"
	expose      string
	maxAge      string
}

func newCORSPolicy(c *gwv1.HTTPCORSFilter) *corsPolicy {
	p := &corsPolicy{credentials: c.AllowCredentials != nil && *c.AllowCredentials}
	for _, o := range c.AllowOrigins {
		p.origins = append(p.origins, strings.ToLower(string(o)))
	}
	methods := make([]string, len(c.AllowMethods))
	for i, m := range c.AllowMethods {
		methods[i] = string(m)
	}
	p.methods = strings.Join(methods, ", ")
	headers := make([]string, len(c.AllowHeaders))
	for i, h := range c.AllowHeaders {
		headers[i] = string(h)
	}
	p.headers = strings.Join(headers, ", ")
	expose := make([]string, len(c.ExposeHeaders))
	for i, h := range c.ExposeHeaders {
		expose[i] = string(h)
	}
	p.expose = strings.Join(expose, ", ")
	if c.MaxAge > 0 {
		p.maxAge = strconv.Itoa(int(c.MaxAge))
	}
	return p
}

// allows reports whether origin is one of the allowed origins.
func (p *corsPolicy) allows(origin string) bool {
	origin = strings.ToLower(origin)
	for _, o := range p.origins {
		if o == "*" || o == origin {
			return true
		}
		before, after, wild := strings.Cut(o, "*")
		if wild && len(origin) > len(before)+len(after) &&
			strings.HasPrefix(origin, before) && strings.HasSuffix(origin, after) &&
			!strings.Contains(origin[len(before):len(origin)-len(after)], "/") {
			return true
		}
	}
	return false
}

// isPreflight reports whether r is a CORS preflight request.
func isPreflight(r *http.Request) bool {
	return r.Method == http.MethodOptions && r.Header.Get("Origin") != "" &&
		r.Header.Get("Access-Control-Request-Method") != ""
}

// writePreflight answers a preflight request without contacting a backend.
// A disallowed origin gets an answer without CORS headers, so the browser
// refuses the actual request.
func (p *corsPolicy) writePreflight(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	origin := r.Header.Get("Origin")
	h.Add("Vary", "Origin")
	if p.allows(origin) {
		h.Set("Access-Control-Allow-Origin", origin)
		if p.credentials {
			h.Set("Access-Control-Allow-Credentials", "true")
		}
		methods := p.methods
		if methods == "*" && p.credentials {
			// "*" is literal when credentials are allowed: name the method.
			methods = r.Header.Get("Access-Control-Request-Method")
		}
		if methods != "" {
			h.Set("Access-Control-Allow-Methods", methods)
		}
		headers := p.headers
		if headers == "*" && p.credentials {
			headers = r.Header.Get("Access-Control-Request-Headers")
		}
		if headers != "" {
			h.Set("Access-Control-Allow-Headers", headers)
		}
		if p.expose != "" {
			h.Set("Access-Control-Expose-Headers", p.expose)
		}
		if p.maxAge != "" {
			h.Set("Access-Control-Max-Age", p.maxAge)
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

// addResponseHeaders adds the CORS headers of an actual (non-preflight)
// request from an allowed origin.
func (p *corsPolicy) addResponseHeaders(h http.Header, origin string) {
	if origin == "" || !p.allows(origin) {
		return
	}
	h.Set("Access-Control-Allow-Origin", origin)
	h.Add("Vary", "Origin")
	if p.credentials {
		h.Set("Access-Control-Allow-Credentials", "true")
	}
	if p.expose != "" {
		h.Set("Access-Control-Expose-Headers", p.expose)
	}
}
