package dataplane_test

import (
	"net/http"
	"strings"
	"testing"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatewitness/gatewitness/gateway/dataplane"
	"github.com/gatewitness/gatewitness/gateway/ir"
)

// TestHeaderAndQueryMatchTypes: header and query parameter matches route by
// an exact value or a whole-value regular expression; a match of a type the
// data plane does not know, or with a bad expression, is ignored and
// reported by Apply naming the route, rule, match and field; a rule whose
// timeouts cannot be read answers 500 and is reported too.
func TestHeaderAndQueryMatchTypes(t *testing.T) {
	b1, b2, b3 := startBackend(t, "b1"), startBackend(t, "b2"), startBackend(t, "b3")
	prefix := func(p string) gwv1.HTTPRouteMatch { return pathMatch(gwv1.PathMatchPathPrefix, p) }
	header := func(p, name, value string, typ gwv1.HeaderMatchType) []gwv1.HTTPRouteMatch {
		m := prefix(p)
		m.Headers = []gwv1.HTTPHeaderMatch{{Type: &typ, Name: gwv1.HTTPHeaderName(name), Value: value}}
		return []gwv1.HTTPRouteMatch{m}
	}
	query := func(p, name, value string, typ gwv1.QueryParamMatchType) []gwv1.HTTPRouteMatch {
		m := prefix(p)
		m.QueryParams = []gwv1.HTTPQueryParamMatch{{Type: &typ, Name: gwv1.HTTPHeaderName(name), Value: value}}
		return []gwv1.HTTPRouteMatch{m}
	}
	badTimeout := rule([]gwv1.HTTPRouteMatch{prefix("/slow")}, b2.ref())
	badTimeout.Timeouts = &gwv1.HTTPRouteTimeouts{Request: ptr(gwv1.Duration("soon"))}
	grpcType := gwv1.GRPCHeaderMatchType("Prefix")

	cfg := oneListener(route("types", 0, nil,
		rule(header("/h", "x-version", "v[0-9]+", gwv1.HeaderMatchRegularExpression), b2.ref()),
		rule(query("/q", "id", "[0-9]+", gwv1.QueryParamMatchRegularExpression), b3.ref()),
		rule(header("/bad", "x-version", "v", gwv1.HeaderMatchType("Prefix")), b2.ref()),
		rule(query("/badq", "id", "(", gwv1.QueryParamMatchRegularExpression), b3.ref()),
		rule(query("/exact", "id", "7", gwv1.QueryParamMatchExact), b2.ref()),
		badTimeout,
		rule(nil, b1.ref()),
	))
	cfg.Gateways[0].Listeners[0].GRPCRoutes = []ir.GRPCRoute{{
		RouteMeta: ir.RouteMeta{Namespace: "default", Name: "g"},
		Rules: []ir.GRPCRule{{
			Matches:  []gwv1.GRPCRouteMatch{{Headers: []gwv1.GRPCHeaderMatch{{Type: &grpcType, Name: "x-version", Value: "v"}}}},
			Backends: grpcBackends(b1.ref()),
		}},
	}}

	s := dataplane.New(dataplane.Options{})
	t.Cleanup(func() { s.Close() })
	err := s.Apply(cfg)
	if err == nil {
		t.Fatal("Apply took bad matches and a bad timeout without an error")
	}
	for _, want := range []string{
		`HTTPRoute default/types rule 2 match 0: headers[0]: type "Prefix" is not supported; accepted types are Exact and RegularExpression (the match is ignored)`,
		`HTTPRoute default/types rule 3 match 0: queryParams[0]: regular expression "(" is not valid RE2 syntax`,
		`HTTPRoute default/types rule 5: `,
		`(the rule answers 500)`,
		`GRPCRoute default/g rule 0 match 0: headers[0]: type "Prefix" is not supported; accepted types are Exact and RegularExpression (the match is ignored)`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Apply error does not say %q; it is:\n%v", want, err)
		}
	}
	addr := mustAddr(t, s, 80)

	for _, tc := range []struct {
		path    string
		headers []string
		want    string // backend, or a status code
	}{
		{path: "/h", headers: []string{"X-Version", "v12"}, want: "b2"},
		{path: "/h", headers: []string{"X-Version", "v12a"}, want: "b1"}, // the expression must match the whole value
		{path: "/h", want: "b1"},
		{path: "/q?id=42", want: "b3"},
		{path: "/q?id=x42", want: "b1"},
		{path: "/bad", headers: []string{"X-Version", "v"}, want: "b1"}, // the match was ignored
		{path: "/badq?id=(", want: "b1"},
		{path: "/exact?id=7", want: "b2"},
		{path: "/exact?id=77", want: "b1"},
		{path: "/slow", want: "500"},
	} {
		resp, body := get(t, addr, "gw.test", tc.path, tc.headers...)
		if tc.want == "500" {
			if resp.StatusCode != http.StatusInternalServerError {
				t.Errorf("%s: status %d, want 500; body %q", tc.path, resp.StatusCode, body)
			}
			continue
		}
		if e := decode(t, resp, body); e.Backend != tc.want {
			t.Errorf("%s %v: backend %s, want %s", tc.path, tc.headers, e.Backend, tc.want)
		}
	}
}
