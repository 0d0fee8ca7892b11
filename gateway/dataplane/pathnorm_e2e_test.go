package dataplane_test

import (
	"net/http"
	"sync"
	"testing"

	"github.com/gatewitness/gatewitness/gateway/ir"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// targetRecorder is a backend that records the request-target of every
// request, as it came on the wire.
type targetRecorder struct {
	mu      sync.Mutex
	targets []string
	addr    string
}

func recordTargets(t *testing.T) *targetRecorder {
	rec := &targetRecorder{}
	rec.addr = serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec.mu.Lock()
		rec.targets = append(rec.targets, r.RequestURI)
		rec.mu.Unlock()
	}))
	return rec
}

func (rec *targetRecorder) take() []string {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	out := rec.targets
	rec.targets = nil
	return out
}

func (rec *targetRecorder) ref(name string) ir.Backend {
	return ir.Backend{Name: "default/" + name + ":8080", Weight: 1, Endpoints: []string{rec.addr}}
}

// TestPathsAreNormalisedBeforeMatching sends paths whose dot-segments,
// plain or percent-encoded, climb out of a PathPrefix /public route, and
// wants the route's backend never to see them: routes match the path with
// its dot-segments removed, and that is the path forwarded.
func TestPathsAreNormalisedBeforeMatching(t *testing.T) {
	public, secret := recordTargets(t), recordTargets(t)
	withSecret := oneListener(route("r", 0, nil,
		rule([]gwv1.HTTPRouteMatch{pathMatch(gwv1.PathMatchPathPrefix, "/public")}, public.ref("public")),
		rule([]gwv1.HTTPRouteMatch{pathMatch(gwv1.PathMatchPathPrefix, "/secret")}, secret.ref("secret")),
	))
	onlyPublic := oneListener(route("r", 0, nil,
		rule([]gwv1.HTTPRouteMatch{pathMatch(gwv1.PathMatchPathPrefix, "/public")}, public.ref("public")),
	))
	for _, tc := range []struct {
		cfg        string
		target     string
		wantStatus int
		wantPublic string // what the /public backend gets ("" nothing)
		wantSecret string // what the /secret backend gets ("" nothing)
	}{
		{"only /public", "/public/../secret", 404, "", ""},
		{"only /public", "/public/%2e%2e/secret", 404, "", ""},
		{"only /public", "/public/%2E%2E/secret", 404, "", ""},
		{"only /public", "/public/.%2e/secret", 404, "", ""},
		{"only /public", "/public%2F..%2Fsecret", 404, "", ""},
		{"only /public", "/public/x/../../secret", 404, "", ""},
		{"/public and /secret", "/public/../secret", 200, "", "/secret"},
		{"/public and /secret", "/public/%2e%2e/secret/a", 200, "", "/secret/a"},
		{"/public and /secret", "/public/./x/../y?q=1", 200, "/public/y?q=1", ""},
		{"/public and /secret", "/public/x/%2e%2e/", 200, "/public/", ""},
		{"/public and /secret", "/public/a%2Fb", 200, "/public/a%2Fb", ""}, // no dot-segment: as sent
		// Escaped slashes stay escaped when dot-segments go...
		{"/public and /secret", "/public/./a%2Fb", 200, "/public/a%2Fb", ""},
		{"/public and /secret", "/public/x/../a%2Fb/%2e/c?q=1", 200, "/public/a%2Fb/c?q=1", ""},
		{"/public and /secret", "/public/%2e/a%2F..%2Fb", 200, "/public/b", ""}, // ...unless one delimits a dot-segment
		{"/public and /secret", "/public%2F..%2Fsecret%2Fa", 200, "", "/secret/a"},
		{"/public and /secret", "/public/..x/y..", 200, "/public/..x/y..", ""},
	} {
		cfg := onlyPublic
		if tc.cfg != "only /public" {
			cfg = withSecret
		}
		s := startGateway(t, cfg)
		resp, body := get(t, mustAddr(t, s, 80), "gw.test", tc.target)
		if resp.StatusCode != tc.wantStatus {
			t.Errorf("%s: GET %s = %d %q, want %d", tc.cfg, tc.target, resp.StatusCode, body, tc.wantStatus)
		}
		for _, b := range []struct {
			name string
			rec  *targetRecorder
			want string
		}{{"/public", public, tc.wantPublic}, {"/secret", secret, tc.wantSecret}} {
			got := b.rec.take()
			switch {
			case b.want == "" && len(got) > 0:
				t.Errorf("%s: GET %s reached the %s backend as %q", tc.cfg, tc.target, b.name, got)
			case b.want != "" && (len(got) != 1 || got[0] != b.want):
				t.Errorf("%s: GET %s: the %s backend got %q, want [%q]", tc.cfg, tc.target, b.name, got, b.want)
			}
		}
		s.Close()
	}
}
