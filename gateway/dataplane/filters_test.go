package dataplane_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gatewitness/gatewitness/gateway/ir"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

func filter(f gwv1.HTTPRouteFilter) ir.HTTPFilter {
	return ir.HTTPFilter{HTTPRouteFilter: f}
}

func prefixRule(prefix string, filters []ir.HTTPFilter, backends ...ir.Backend) ir.HTTPRule {
	r := rule([]gwv1.HTTPRouteMatch{pathMatch(gwv1.PathMatchPathPrefix, prefix)}, backends...)
	r.Filters = filters
	return r
}

func TestHeaderModifiers(t *testing.T) {
	b := startBackend(t, "b")
	req := filter(gwv1.HTTPRouteFilter{
		Type: gwv1.HTTPRouteFilterRequestHeaderModifier,
		RequestHeaderModifier: &gwv1.HTTPHeaderFilter{
			Set:    []gwv1.HTTPHeader{{Name: "X-Set", Value: "set"}},
			Add:    []gwv1.HTTPHeader{{Name: "X-Add", Value: "added"}},
			Remove: []string{"x-remove"},
		},
	})
	resp := filter(gwv1.HTTPRouteFilter{
		Type: gwv1.HTTPRouteFilterResponseHeaderModifier,
		ResponseHeaderModifier: &gwv1.HTTPHeaderFilter{
			Set:    []gwv1.HTTPHeader{{Name: "X-Resp-Set", Value: "set"}},
			Add:    []gwv1.HTTPHeader{{Name: "X-Resp-Add", Value: "added"}},
			Remove: []string{"X-Resp-Remove"},
		},
	})
	// A backend-level filter applies after the rule's.
	r := prefixRule("/", []ir.HTTPFilter{req, resp}, b.ref())
	r.Backends[0].Filters = []ir.HTTPFilter{filter(gwv1.HTTPRouteFilter{
		Type:                  gwv1.HTTPRouteFilterRequestHeaderModifier,
		RequestHeaderModifier: &gwv1.HTTPHeaderFilter{Set: []gwv1.HTTPHeader{{Name: "X-Backend", Value: "b"}}},
	})}
	addr := mustAddr(t, startGateway(t, oneListener(route("r", 0, nil, r))), 80)

	res, body := get(t, addr, "gw.test", "/",
		"X-Set", "original", "X-Add", "first", "X-Remove", "gone", "X-Keep", "kept",
		"X-Echo-Set-Header", "X-Resp-Set:upstream,X-Resp-Add:upstream,X-Resp-Remove:upstream")
	e := decode(t, res, body)
	checks := []struct{ name, got, want string }{
		{"request X-Set", strings.Join(e.Headers.Values("X-Set"), ","), "set"},
		{"request X-Add", strings.Join(e.Headers.Values("X-Add"), ","), "first,added"},
		{"request X-Remove", strings.Join(e.Headers.Values("X-Remove"), ","), ""},
		{"request X-Keep", e.Headers.Get("X-Keep"), "kept"},
		{"request X-Backend", e.Headers.Get("X-Backend"), "b"},
		{"request X-Forwarded-Proto", e.Headers.Get("X-Forwarded-Proto"), "http"},
		{"request X-Forwarded-For", e.Headers.Get("X-Forwarded-For"), "127.0.0.1"},
		{"request Host", e.Host, "gw.test"},
		{"response X-Resp-Set", strings.Join(res.Header.Values("X-Resp-Set"), ","), "set"},
		{"response X-Resp-Add", strings.Join(res.Header.Values("X-Resp-Add"), ","), "upstream,added"},
		{"response X-Resp-Remove", strings.Join(res.Header.Values("X-Resp-Remove"), ","), ""},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %q, want %q", c.name, c.got, c.want)
		}
	}
}

func TestRedirects(t *testing.T) {
	redirectRule := func(prefix string, rd gwv1.HTTPRequestRedirectFilter) ir.HTTPRule {
		return prefixRule(prefix, []ir.HTTPFilter{filter(gwv1.HTTPRouteFilter{
			Type: gwv1.HTTPRouteFilterRequestRedirect, RequestRedirect: &rd,
		})})
	}
	host := func(h string) *gwv1.PreciseHostname { p := gwv1.PreciseHostname(h); return &p }
	port := func(p int32) *gwv1.PortNumber { return &p }
	rules := []ir.HTTPRule{
		redirectRule("/host", gwv1.HTTPRequestRedirectFilter{Hostname: host("example.org")}),
		redirectRule("/port-80", gwv1.HTTPRequestRedirectFilter{Port: port(80)}),
		redirectRule("/port-9000", gwv1.HTTPRequestRedirectFilter{Port: port(9000)}),
		redirectRule("/https", gwv1.HTTPRequestRedirectFilter{Scheme: ptr("https")}),
		redirectRule("/https-8443", gwv1.HTTPRequestRedirectFilter{Scheme: ptr("https"), Port: port(8443)}),
		redirectRule("/status", gwv1.HTTPRequestRedirectFilter{StatusCode: ptr(301)}),
		redirectRule("/prefix", gwv1.HTTPRequestRedirectFilter{Path: &gwv1.HTTPPathModifier{
			Type: gwv1.PrefixMatchHTTPPathModifier, ReplacePrefixMatch: ptr("/replaced"),
		}}),
		redirectRule("/full", gwv1.HTTPRequestRedirectFilter{StatusCode: ptr(308), Path: &gwv1.HTTPPathModifier{
			Type: gwv1.FullPathHTTPPathModifier, ReplaceFullPath: ptr("/whole"),
		}}),
	}
	cfg := &ir.Config{Gateways: []ir.Gateway{{
		Namespace: "gw-ns", Name: "gw",
		Listeners: []ir.Listener{{Name: "http", Port: 8080, Protocol: gwv1.HTTPProtocolType,
			HTTPRoutes: []ir.HTTPRoute{route("r", 0, nil, rules...)}}},
	}}}
	addr := mustAddr(t, startGateway(t, cfg), 8080)
	tests := []struct {
		path     string
		status   int
		location string
	}{
		// Without a scheme, the listener's port (8080) is kept.
		{"/host/x", 302, "http://example.org:8080/host/x"},
		{"/port-80", 302, "http://gw.test/port-80"},
		{"/port-9000?q=1", 302, "http://gw.test:9000/port-9000?q=1"},
		// With a scheme, its well-known port, left out.
		{"/https", 302, "https://gw.test/https"},
		{"/https-8443", 302, "https://gw.test:8443/https-8443"},
		{"/status", 301, "http://gw.test:8080/status"},
		{"/prefix/lemon", 302, "http://gw.test:8080/replaced/lemon"},
		{"/full/one/two", 308, "http://gw.test:8080/whole"},
	}
	for _, tc := range tests {
		resp, body := get(t, addr, "gw.test:8080", tc.path)
		if resp.StatusCode != tc.status || resp.Header.Get("Location") != tc.location {
			t.Errorf("%s: %d %q, want %d %q (body %q)", tc.path, resp.StatusCode, resp.Header.Get("Location"), tc.status, tc.location, body)
		}
	}
}

func TestURLRewrite(t *testing.T) {
	b := startBackend(t, "b")
	rewrite := func(prefix string, rw gwv1.HTTPURLRewriteFilter) ir.HTTPRule {
		return prefixRule(prefix, []ir.HTTPFilter{filter(gwv1.HTTPRouteFilter{
			Type: gwv1.HTTPRouteFilterURLRewrite, URLRewrite: &rw,
		})}, b.ref())
	}
	prefixMod := func(v string) *gwv1.HTTPPathModifier {
		return &gwv1.HTTPPathModifier{Type: gwv1.PrefixMatchHTTPPathModifier, ReplacePrefixMatch: &v}
	}
	host := gwv1.PreciseHostname("rewritten.example.org")
	addr := mustAddr(t, startGateway(t, oneListener(route("r", 0, nil,
		rewrite("/prefix/one", gwv1.HTTPURLRewriteFilter{Path: prefixMod("/one")}),
		rewrite("/strip-prefix", gwv1.HTTPURLRewriteFilter{Path: prefixMod("/")}),
		rewrite("/empty", gwv1.HTTPURLRewriteFilter{Path: prefixMod("")}),
		rewrite("/slash/", gwv1.HTTPURLRewriteFilter{Path: prefixMod("/xyz/")}),
		rewrite("/full/one", gwv1.HTTPURLRewriteFilter{Path: &gwv1.HTTPPathModifier{
			Type: gwv1.FullPathHTTPPathModifier, ReplaceFullPath: ptr("/one"),
		}}),
		rewrite("/host", gwv1.HTTPURLRewriteFilter{Hostname: &host}),
	))), 80)
	tests := []struct{ path, wantPath, wantQuery, wantHost string }{
		{"/prefix/one/two", "/one/two", "", "gw.test"},
		{"/prefix/one", "/one", "", "gw.test"},
		{"/strip-prefix/three?x=1", "/three", "x=1", "gw.test"},
		{"/strip-prefix", "/", "", "gw.test"},
		{"/empty/bar", "/bar", "", "gw.test"},
		{"/empty", "/", "", "gw.test"},
		{"/slash/bar", "/xyz/bar", "", "gw.test"},
		{"/full/one/two", "/one", "", "gw.test"},
		{"/host/a", "/host/a", "", "rewritten.example.org"},
	}
	for _, tc := range tests {
		resp, body := get(t, addr, "gw.test", tc.path)
		e := decode(t, resp, body)
		if e.Path != tc.wantPath || e.Query != tc.wantQuery || e.Host != tc.wantHost {
			t.Errorf("%s: backend saw %s?%s host %s, want %s?%s host %s", tc.path, e.Path, e.Query, e.Host, tc.wantPath, tc.wantQuery, tc.wantHost)
		}
	}
}

func TestRequestMirror(t *testing.T) {
	b, m1, m2 := startBackend(t, "b"), startBackend(t, "mirror1"), startBackend(t, "mirror2")
	mirrorTo := func(mb *testBackend, percent *int32) ir.HTTPFilter {
		ref := mb.ref()
		return ir.HTTPFilter{
			HTTPRouteFilter: gwv1.HTTPRouteFilter{
				Type:          gwv1.HTTPRouteFilterRequestMirror,
				RequestMirror: &gwv1.HTTPRequestMirrorFilter{Percent: percent},
			},
			Mirror: &ref,
		}
	}
	setHeader := filter(gwv1.HTTPRouteFilter{
		Type:                  gwv1.HTTPRouteFilterRequestHeaderModifier,
		RequestHeaderModifier: &gwv1.HTTPHeaderFilter{Set: []gwv1.HTTPHeader{{Name: "X-Modified", Value: "yes"}}},
	})
	addr := mustAddr(t, startGateway(t, oneListener(route("r", 0, nil,
		prefixRule("/mirror", []ir.HTTPFilter{setHeader, mirrorTo(m1, nil), mirrorTo(m2, nil)}, b.ref()),
		prefixRule("/never", []ir.HTTPFilter{mirrorTo(m1, ptr[int32](0))}, b.ref()),
	))), 80)

	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/mirror/x", strings.NewReader("payload"))
	req.Host = "gw.test"
	resp, body := do(t, req)
	if got := decode(t, resp, body); got.Backend != "b" || got.Body != "payload" {
		t.Fatalf("primary got backend %s body %q, want b %q", got.Backend, got.Body, "payload")
	}
	for _, mb := range []*testBackend{m1, m2} {
		select {
		case e := <-mb.got:
			if e.Path != "/mirror/x" || e.Method != http.MethodPost || e.Body != "payload" || e.Headers.Get("X-Modified") != "yes" || e.Host != "gw.test" {
				t.Errorf("%s saw %s %s host %s body %q X-Modified %q", mb.name, e.Method, e.Path, e.Host, e.Body, e.Headers.Get("X-Modified"))
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: no mirrored request within 10s", mb.name)
		}
	}

	// Percent 0 mirrors nothing. The primary answer arrives after the
	// mirror would have been sent, and a following mirrored request
	// shows the mirror pipe is not stuck.
	for range 20 {
		resp, body := get(t, addr, "gw.test", "/never")
		decode(t, resp, body)
	}
	get(t, addr, "gw.test", "/mirror/after")
	select {
	case e := <-m1.got:
		if e.Path != "/mirror/after" {
			t.Fatalf("mirror1 saw %s, want only /mirror/after (percent 0 must not mirror)", e.Path)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("mirror1: no mirrored request within 10s")
	}
}

func TestCORS(t *testing.T) {
	b := startBackend(t, "b")
	cors := func(c gwv1.HTTPCORSFilter) []ir.HTTPFilter {
		return []ir.HTTPFilter{filter(gwv1.HTTPRouteFilter{Type: gwv1.HTTPRouteFilterCORS, CORS: &c})}
	}
	addr := mustAddr(t, startGateway(t, oneListener(route("r", 0, nil,
		prefixRule("/cors-1", cors(gwv1.HTTPCORSFilter{
			AllowOrigins:     []gwv1.CORSOrigin{"https://www.foo.com", "https://*.bar.com"},
			AllowMethods:     []gwv1.HTTPMethodWithWildcard{"GET", "OPTIONS"},
			AllowHeaders:     []gwv1.HTTPHeaderName{"x-header-1", "x-header-2"},
			ExposeHeaders:    []gwv1.HTTPHeaderName{"x-header-3"},
			AllowCredentials: ptr(true),
			MaxAge:           3600,
		}), b.ref()),
		prefixRule("/cors-2", cors(gwv1.HTTPCORSFilter{
			AllowOrigins: []gwv1.CORSOrigin{"*"},
			AllowMethods: []gwv1.HTTPMethodWithWildcard{"*"},
		}), b.ref()),
	))), 80)

	preflight := func(path, origin, method string) *http.Response {
		req, _ := http.NewRequest(http.MethodOptions, "http://"+addr+path, nil)
		req.Host = "gw.test"
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", method)
		resp, _ := do(t, req)
		return resp
	}
	tests := []struct {
		name string
		resp *http.Response
		want map[string]string // "" means absent
	}{
		{"exact origin", preflight("/cors-1", "https://www.foo.com", "GET"), map[string]string{
			"Access-Control-Allow-Origin": "https://www.foo.com", "Access-Control-Allow-Methods": "GET, OPTIONS",
			"Access-Control-Allow-Headers": "x-header-1, x-header-2", "Access-Control-Expose-Headers": "x-header-3",
			"Access-Control-Max-Age": "3600", "Access-Control-Allow-Credentials": "true",
		}},
		{"wildcard origin, two labels", preflight("/cors-1", "https://a.www.bar.com", "GET"), map[string]string{
			"Access-Control-Allow-Origin": "https://a.www.bar.com",
		}},
		{"wildcard needs a label", preflight("/cors-1", "https://bar.com", "GET"), map[string]string{
			"Access-Control-Allow-Origin": "", "Access-Control-Allow-Methods": "",
		}},
		{"foreign origin", preflight("/cors-1", "https://foobar.com", "GET"), map[string]string{
			"Access-Control-Allow-Origin": "", "Access-Control-Allow-Credentials": "",
		}},
		{"any origin and method", preflight("/cors-2", "https://x.org:1234", "PUT"), map[string]string{
			"Access-Control-Allow-Origin": "https://x.org:1234", "Access-Control-Allow-Methods": "*",
			"Access-Control-Allow-Credentials": "",
		}},
	}
	for _, tc := range tests {
		if tc.resp.StatusCode != http.StatusNoContent {
			t.Errorf("%s: status %d, want 204 (answered by the gateway)", tc.name, tc.resp.StatusCode)
		}
		for k, want := range tc.want {
			if got := tc.resp.Header.Get(k); got != want {
				t.Errorf("%s: %s = %q, want %q", tc.name, k, got, want)
			}
		}
	}

	// An actual request is forwarded and gets the origin headers.
	resp, body := get(t, addr, "gw.test", "/cors-1", "Origin", "https://www.foo.com")
	e := decode(t, resp, body)
	if e.Method != http.MethodGet || resp.Header.Get("Access-Control-Allow-Origin") != "https://www.foo.com" ||
		resp.Header.Get("Access-Control-Expose-Headers") != "x-header-3" {
		t.Errorf("actual request: backend saw %s, response headers %v", e.Method, resp.Header)
	}
	resp, body = get(t, addr, "gw.test", "/cors-1", "Origin", "https://evil.org")
	decode(t, resp, body)
	if got := resp.Header.Get("Access-Control-Allow-Origin"); got != "" {
		t.Errorf("actual request from a foreign origin: Access-Control-Allow-Origin %q, want none", got)
	}
}
