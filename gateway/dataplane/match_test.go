package dataplane_test

import (
	"net/http"
	"testing"

	"github.com/gatewitness/gatewitness/gateway/ir"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

func TestHTTPMatchingPrecedence(t *testing.T) {
	b1, b2, b3 := startBackend(t, "b1"), startBackend(t, "b2"), startBackend(t, "b3")
	exact, prefix, regex := gwv1.PathMatchExact, gwv1.PathMatchPathPrefix, gwv1.PathMatchRegularExpression
	withHeaders := func(m gwv1.HTTPRouteMatch, kv ...string) gwv1.HTTPRouteMatch {
		for i := 0; i+1 < len(kv); i += 2 {
			m.Headers = append(m.Headers, gwv1.HTTPHeaderMatch{Name: gwv1.HTTPHeaderName(kv[i]), Value: kv[i+1]})
		}
		return m
	}
	withQuery := func(m gwv1.HTTPRouteMatch, kv ...string) gwv1.HTTPRouteMatch {
		for i := 0; i+1 < len(kv); i += 2 {
			m.QueryParams = append(m.QueryParams, gwv1.HTTPQueryParamMatch{Name: gwv1.HTTPHeaderName(kv[i]), Value: kv[i+1]})
		}
		return m
	}
	withMethod := func(m gwv1.HTTPRouteMatch, method string) gwv1.HTTPRouteMatch {
		m.Method = ptr(gwv1.HTTPMethod(method))
		return m
	}
	one := func(m gwv1.HTTPRouteMatch) []gwv1.HTTPRouteMatch { return []gwv1.HTTPRouteMatch{m} }

	cfg := oneListener(
		// Path precedence inside one route, listed in the "wrong" order.
		route("paths", 1, nil,
			rule(one(pathMatch(prefix, "/match/")), b3.ref()),
			rule(one(pathMatch(exact, "/match")), b1.ref()),
			rule(one(pathMatch(prefix, "/match/prefix/one")), b2.ref()),
			rule(one(pathMatch(exact, "/match/exact")), b2.ref()),
			rule(one(pathMatch(prefix, "/match/prefix/")), b1.ref()),
			rule(one(pathMatch(prefix, "/abc")), b1.ref()),
			rule(one(pathMatch(regex, "/rx[0-9]+")), b3.ref()),
			rule(one(pathMatch(prefix, "/re")), b1.ref()),
			rule(one(pathMatch(regex, "/re/[0-9]+")), b3.ref()),
		),
		// Method, headers and query parameters break ties between equal paths.
		route("details", 2, nil,
			rule(one(pathMatch(prefix, "/m")), b1.ref()),
			rule(one(withMethod(pathMatch(prefix, "/m"), "POST")), b2.ref()),
			rule(one(withHeaders(pathMatch(prefix, "/h"), "version", "two")), b3.ref()),
			rule(one(withHeaders(pathMatch(prefix, "/h"), "version", "one")), b1.ref()),
			rule(one(withHeaders(pathMatch(prefix, "/h"), "version", "two", "color", "blue")), b2.ref()),
			rule(one(withQuery(pathMatch(prefix, "/q"), "animal", "whale")), b1.ref()),
			rule(one(withQuery(pathMatch(prefix, "/q"), "animal", "whale", "color", "blue")), b2.ref()),
			rule(one(pathMatch(prefix, "/dup")), b2.ref()),
			rule(one(pathMatch(prefix, "/dup")), b3.ref()),
		),
		// Ties across routes: the older route, then namespace/name.
		route("new", 5, nil, rule(one(pathMatch(prefix, "/tie")), b2.ref())),
		route("old", 3, nil, rule(one(pathMatch(prefix, "/tie")), b1.ref())),
		route("beta", 4, nil, rule(one(pathMatch(prefix, "/tie2")), b2.ref())),
		route("alpha", 4, nil, rule(one(pathMatch(prefix, "/tie2")), b3.ref())),
		// Hostnames come first: exact, then wildcard, then none.
		route("any-host", 0, nil, rule(one(pathMatch(exact, "/foo")), b1.ref())),
		route("wild-host", 9, []string{"*.example.com"}, rule(one(pathMatch(exact, "/foo")), b3.ref())),
		route("exact-host", 9, []string{"exact.example.com"}, rule(nil, b2.ref())),
	)
	s := startGateway(t, cfg)
	addr := mustAddr(t, s, 80)

	tests := []struct {
		name, method, host, path string
		headers                  []string
		want                     string // backend, or "" for 404
	}{
		{name: "exact beats prefix", path: "/match", want: "b1"},
		{name: "exact beats longer prefix", path: "/match/exact", want: "b2"},
		{name: "longest prefix", path: "/match/prefix/one/any", want: "b2"},
		{name: "longer prefix", path: "/match/prefix/any", want: "b1"},
		{name: "short prefix", path: "/match/any", want: "b3"},
		{name: "prefix with trailing slash matches the bare path", path: "/match/", want: "b3"},
		{name: "prefix matches itself", path: "/abc", want: "b1"},
		{name: "prefix matches subpath", path: "/abc/def", want: "b1"},
		{name: "prefix respects segments", path: "/abcd", want: ""},
		{name: "regular expression", path: "/rx42", want: "b3"},
		{name: "regular expression matches whole path", path: "/rx42a", want: ""},
		{name: "prefix beats regular expression", path: "/re/12", want: "b1"},
		{name: "method beats no method", method: "POST", path: "/m", want: "b2"},
		{name: "no method", path: "/m", want: "b1"},
		{name: "more headers win", path: "/h", headers: []string{"version", "two", "color", "blue"}, want: "b2"},
		{name: "header value", path: "/h", headers: []string{"Version", "one"}, want: "b1"},
		{name: "one header", path: "/h", headers: []string{"version", "two"}, want: "b3"},
		{name: "header value is case-sensitive", path: "/h", headers: []string{"version", "ONE"}, want: ""},
		{name: "more query params win", path: "/q?animal=whale&color=blue", want: "b2"},
		{name: "one query param", path: "/q?animal=whale", want: "b1"},
		{name: "query param mismatch", path: "/q?animal=dolphin", want: ""},
		{name: "first rule of a route", path: "/dup", want: "b2"},
		{name: "older route", path: "/tie", want: "b1"},
		{name: "alphabetical route", path: "/tie2", want: "b3"},
		{name: "exact hostname first", host: "exact.example.com", path: "/foo", want: "b2"},
		{name: "wildcard hostname next", host: "other.example.com", path: "/foo", want: "b3"},
		{name: "wildcard needs a label", host: "example.com", path: "/foo", want: "b1"},
		{name: "any hostname last", host: "any.org", path: "/foo", want: "b1"},
		{name: "no match", path: "/nothing", want: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			method := tc.method
			if method == "" {
				method = http.MethodGet
			}
			host := tc.host
			if host == "" {
				host = "gw.test"
			}
			req, err := http.NewRequest(method, "http://"+addr+tc.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Host = host
			for i := 0; i+1 < len(tc.headers); i += 2 {
				req.Header.Add(tc.headers[i], tc.headers[i+1])
			}
			resp, body := do(t, req)
			if tc.want == "" {
				if resp.StatusCode != http.StatusNotFound {
					t.Fatalf("status %d, want 404; body %q", resp.StatusCode, body)
				}
				return
			}
			if got := decode(t, resp, body).Backend; got != tc.want {
				t.Errorf("routed to %s, want %s", got, tc.want)
			}
		})
	}
}

func TestListenerIsolation(t *testing.T) {
	b1, b2, b3 := startBackend(t, "b1"), startBackend(t, "b2"), startBackend(t, "b3")
	catchAll := func(name string, b *testBackend) ir.HTTPRoute {
		return route(name, 0, nil, rule(nil, b.ref()))
	}
	// The empty-hostname listener has a more specific path for /specific:
	// requests for the other listeners' hosts must not reach it.
	emptyRoute := route("empty", 0, nil,
		rule([]gwv1.HTTPRouteMatch{pathMatch(gwv1.PathMatchPathPrefix, "/specific")}, b1.ref()))
	cfg := &ir.Config{Gateways: []ir.Gateway{{
		Namespace: "gw-ns", Name: "gw",
		Listeners: []ir.Listener{
			{Name: "empty", Port: 80, Protocol: gwv1.HTTPProtocolType, HTTPRoutes: []ir.HTTPRoute{emptyRoute}},
			{Name: "wild", Port: 80, Protocol: gwv1.HTTPProtocolType, Hostname: "*.example.com", HTTPRoutes: []ir.HTTPRoute{catchAll("wild", b2)}},
			{Name: "exact", Port: 80, Protocol: gwv1.HTTPProtocolType, Hostname: "foo.example.com", HTTPRoutes: []ir.HTTPRoute{catchAll("exact", b3)}},
		},
	}}}
	addr := mustAddr(t, startGateway(t, cfg), 80)
	tests := []struct{ host, want string }{
		{"foo.example.com", "b3"},
		{"FOO.example.com:80", "b3"},
		{"bar.example.com", "b2"},
		{"a.b.example.com", "b2"},
		{"example.com", "b1"},
		{"other.org", "b1"},
	}
	for _, tc := range tests {
		resp, body := get(t, addr, tc.host, "/specific")
		if got := decode(t, resp, body).Backend; got != tc.want {
			t.Errorf("Host %s: routed to %s, want %s", tc.host, got, tc.want)
		}
	}
	// The empty listener has no route for /other.
	if resp, body := get(t, addr, "other.org", "/other"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("other.org/other: status %d, want 404; body %q", resp.StatusCode, body)
	}
}
