package proxy

import (
	"strings"
	"testing"
	"time"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatewitness/gatewitness/gateway/ir"
)

func pathMatch(t gwv1.PathMatchType, v string) gwv1.HTTPRouteMatch {
	return gwv1.HTTPRouteMatch{Path: &gwv1.HTTPPathMatch{Type: &t, Value: &v}}
}

// TestFlattenOrdersByPrecedence: a port's entries come in HTTPRoute
// precedence order, whatever the routes' order: the exact hostname before
// the wildcard and any host; then Exact, the longer prefix, a method, more
// headers. One socket per (Gateway, port), kept across snapshots.
func TestFlattenOrdersByPrecedence(t *testing.T) {
	get := gwv1.HTTPMethodGet
	rules := []ir.HTTPRule{
		{Name: "prefix-short", Matches: []gwv1.HTTPRouteMatch{pathMatch(gwv1.PathMatchPathPrefix, "/a")}},
		{Name: "exact", Matches: []gwv1.HTTPRouteMatch{pathMatch(gwv1.PathMatchExact, "/a/b")}},
		{Name: "prefix-long", Matches: []gwv1.HTTPRouteMatch{pathMatch(gwv1.PathMatchPathPrefix, "/a/b")}},
		{Name: "method", Matches: []gwv1.HTTPRouteMatch{{Path: pathMatch(gwv1.PathMatchPathPrefix, "/a").Path, Method: &get}}},
	}
	cfg := &ir.Config{Gateways: []ir.Gateway{{Namespace: "ns", Name: "gw", Listeners: []ir.Listener{
		{Name: "any", Port: 80, Protocol: gwv1.HTTPProtocolType, HTTPRoutes: []ir.HTTPRoute{{RouteMeta: ir.RouteMeta{Name: "r"}, Rules: rules}}},
		{Name: "wild", Port: 80, Protocol: gwv1.HTTPProtocolType, Hostname: "*.example.com",
			HTTPRoutes: []ir.HTTPRoute{{RouteMeta: ir.RouteMeta{Name: "w", Hostnames: []string{"*.example.com"}}, Rules: rules[:1]}}},
		{Name: "exact-host", Port: 80, Protocol: gwv1.HTTPProtocolType, Hostname: "a.example.com",
			HTTPRoutes: []ir.HTTPRoute{{RouteMeta: ir.RouteMeta{Name: "e"}, Rules: rules[:1]}}},
	}}}}
	sockets := NewSockets()
	s, err := Flatten(cfg, sockets)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Ports) != 1 {
		t.Fatalf("%d ports, want 1 (three listeners on port 80)", len(s.Ports))
	}
	var got []string
	for _, e := range s.Ports[0].Entries {
		got = append(got, e.Host+":"+s.Rules[e.Rule].Name)
	}
	want := "a.example.com:prefix-short *.example.com:prefix-short :exact :prefix-long :method :prefix-short"
	if strings.Join(got, " ") != want {
		t.Errorf("entries %q, want %q", strings.Join(got, " "), want)
	}
	again, _ := Flatten(cfg, sockets)
	if again.Ports[0].Addr != s.Ports[0].Addr {
		t.Errorf("the socket moved from %s to %s between snapshots", s.Ports[0].Addr, again.Ports[0].Addr)
	}
}

// TestFlattenRefusesWhatItCannotServe: a TLS passthrough listener fails
// the snapshot (its Gateway must not be Programmed); a rule with filters
// and a GRPCRoute are left out and named.
func TestFlattenRefusesWhatItCannotServe(t *testing.T) {
	cfg := &ir.Config{Gateways: []ir.Gateway{{Namespace: "ns", Name: "gw", Listeners: []ir.Listener{
		{Name: "tls", Port: 443, Protocol: gwv1.TLSProtocolType},
		{Name: "http", Port: 80, Protocol: gwv1.HTTPProtocolType, GRPCRoutes: []ir.GRPCRoute{{}},
			HTTPRoutes: []ir.HTTPRoute{{RouteMeta: ir.RouteMeta{Namespace: "ns", Name: "f"}, Rules: []ir.HTTPRule{{Filters: []ir.HTTPFilter{{}}}}}}},
	}}}}
	s, err := Flatten(cfg, NewSockets())
	if err == nil || !strings.Contains(err.Error(), `listener "tls": protocol TLS`) {
		t.Errorf("error %v, want one naming the TLS listener", err)
	}
	omitted := strings.Join(s.Omitted, "; ")
	for _, want := range []string{"GRPCRoutes", "HTTPRoute ns/f rule 0: filters"} {
		if !strings.Contains(omitted, want) {
			t.Errorf("omitted %q lacks %q", omitted, want)
		}
	}
	if len(s.Ports) != 1 || len(s.Ports[0].Entries) != 0 {
		t.Errorf("ports %+v, want port 80 alone, with no entries", s.Ports)
	}
}

// TestPortRules: the rules a port's entries route to, once each, in
// increasing order, whatever the entries' order.
func TestPortRules(t *testing.T) {
	p := Port{Entries: []Entry{{Rule: 2}, {Rule: 0}, {Rule: 2}, {Rule: 1}, {Rule: 0}}}
	if got := p.Rules(); len(got) != 3 || got[0] != 0 || got[1] != 1 || got[2] != 2 {
		t.Errorf("Rules() = %v; want [0 1 2]", got)
	}
	if got := (Port{}).Rules(); len(got) != 0 {
		t.Errorf("Rules() of a port with no entries = %v; want none", got)
	}
}

// TestAttemptTimeout: the backend request timeout wins over the request
// timeout, either over the Gateway's server timeout; "0s" is off.
func TestAttemptTimeout(t *testing.T) {
	dur := func(s string) *gwv1.Duration { d := gwv1.Duration(s); return &d }
	for _, tc := range []struct {
		name      string
		timeouts  *gwv1.HTTPRouteTimeouts
		want      time.Duration
		wantTimed bool
	}{
		{"none: the server timeout", nil, 7 * time.Second, false},
		{"request", &gwv1.HTTPRouteTimeouts{Request: dur("2s")}, 2 * time.Second, true},
		{"backend request wins", &gwv1.HTTPRouteTimeouts{Request: dur("2s"), BackendRequest: dur("500ms")}, 500 * time.Millisecond, true},
		{"off", &gwv1.HTTPRouteTimeouts{Request: dur("0s")}, 0, true},
	} {
		r := Rule{HTTPRule: &ir.HTTPRule{Timeouts: tc.timeouts}}
		got, timed, err := r.AttemptTimeout(7 * time.Second)
		if err != nil || got != tc.want || timed != tc.wantTimed {
			t.Errorf("%s: AttemptTimeout = %v, %v, %v; want %v, %v", tc.name, got, timed, err, tc.want, tc.wantTimed)
		}
	}
	r := Rule{HTTPRule: &ir.HTTPRule{Timeouts: &gwv1.HTTPRouteTimeouts{Request: dur("soon")}}}
	if _, _, err := r.AttemptTimeout(0); err == nil {
		t.Error("AttemptTimeout of a request timeout \"soon\": no error; want one")
	}
}

func TestTimeout(t *testing.T) {
	for d, want := range map[time.Duration]string{0: Forever, time.Microsecond: "1ms", 1500 * time.Millisecond: "1500ms"} {
		if got := Timeout(d); got != want {
			t.Errorf("Timeout(%v) = %q; want %q", d, got, want)
		}
	}
}

// TestRetryConditions: the codes a directive accepts, spelled in order;
// one it does not is left out and named in the error.
func TestRetryConditions(t *testing.T) {
	got, err := RetryConditions([]gwv1.HTTPRouteRetryStatusCode{503, 418, 502}, []int{502, 503}, "http_", "proxy_next_upstream names")
	if len(got) != 2 || got[0] != "http_503" || got[1] != "http_502" {
		t.Errorf("RetryConditions = %v; want [http_503 http_502]", got)
	}
	if err == nil || err.Error() != "retry code 418: proxy_next_upstream names only [502 503]" {
		t.Errorf("error = %v; want one naming 418 and what the directive names", err)
	}
	if got, err := RetryConditions(nil, []int{503}, "", "retry-on accepts"); len(got) != 0 || err != nil {
		t.Errorf("RetryConditions of no codes = %v, %v; want none, nil", got, err)
	}
}
