package httpecho

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// routeCases are request targets around the mux's routes, cleaning and
// redirects.
var routeCases = []string{
	"/", "/echo", "/echo/", "/a/b/c", "/healthz", "/health", "/health/", "/status", "/status/418",
	"/statusx", "/retry", "/retry/", "/retryx", "/ws", "/wsx", "/_gatewitness", "/_gatewitness/ledger/x",
	"/a/./b", "/a/../b", "/a/.", "/a/..", "/.well-known/x", "/a/.hidden", "//", "///echo", "/a//b",
	"/%68ealth", "/a%2Fb", "/caf%C3%A9", "/a%20b", "/a?x=1", "/echo?gatewitness-id=1", "*",
}

// TestEchoesDirectlyAgreesWithMux checks the shortcut past the mux: for
// every request it takes, NewHandler's mux would have run serveEcho on the
// same request, not another route, a redirect or a 404.
func TestEchoesDirectlyAgreesWithMux(t *testing.T) {
	h := NewHandler(Options{}).(*handler)
	direct := 0
	for _, method := range []string{http.MethodGet, http.MethodPost, http.MethodConnect, http.MethodOptions} {
		for _, target := range routeCases {
			r := httptest.NewRequest(method, "http://example.com"+strings.TrimPrefix(target, "*"), nil)
			if target == "*" {
				r.URL.Path, r.RequestURI = "*", "*"
			}
			r.URL.Path = strings.ReplaceAll(r.URL.Path, "//", "/") // as ServeHTTP does first
			if !echoesDirectly(r) {
				continue
			}
			direct++
			_, pattern := h.mux.Handler(r)
			if pattern != "/" {
				t.Errorf("%s %s: taken straight to the echo, but the mux routes it to %q", method, target, pattern)
			}
			// The mux also redirects to a cleaned path under pattern "/":
			// a request it serves must come back as is.
			w := httptest.NewRecorder()
			h.mux.ServeHTTP(w, r)
			if w.Code >= 300 && w.Code < 400 {
				t.Errorf("%s %s: taken straight to the echo, but the mux redirects it (%d to %q)", method, target, w.Code, w.Header().Get("Location"))
			}
		}
	}
	if direct == 0 {
		t.Fatal("no request was taken straight to the echo")
	}
}

// TestRoutePrefixes checks routePrefixes against the mux: every path under
// a prefix that goes elsewhere than the echo is covered.
func TestRoutePrefixes(t *testing.T) {
	h := NewHandler(Options{}).(*handler)
	for _, target := range []string{"/health", "/status/200", "/retry", "/retry/x", "/ws", "/_gatewitness/admin/state"} {
		_, pattern := h.mux.Handler(httptest.NewRequest(http.MethodGet, target, nil))
		if pattern == "/" {
			t.Errorf("%s: the mux routes it to the echo; the test list is stale", target)
			continue
		}
		covered := false
		for _, p := range routePrefixes {
			covered = covered || strings.HasPrefix(strings.TrimSuffix(pattern, "/"), p)
		}
		if !covered {
			t.Errorf("pattern %q is not covered by routePrefixes %q", pattern, routePrefixes)
		}
	}
}

func FuzzEchoesDirectly(f *testing.F) {
	for _, target := range routeCases {
		f.Add(target)
	}
	h := NewHandler(Options{}).(*handler)
	f.Fuzz(func(t *testing.T, target string) {
		r, err := http.NewRequest(http.MethodGet, "http://example.com"+target, nil)
		if err != nil || r.URL.Host != "example.com" {
			return
		}
		r.URL.Path = strings.ReplaceAll(r.URL.Path, "//", "/")
		if !echoesDirectly(r) {
			return
		}
		if _, pattern := h.mux.Handler(r); pattern != "/" {
			t.Errorf("%q: taken straight to the echo, but the mux routes it to %q", target, pattern)
		}
		w := httptest.NewRecorder()
		h.mux.ServeHTTP(w, r)
		if w.Code >= 300 && w.Code < 400 {
			t.Errorf("%q: taken straight to the echo, but the mux redirects it (%d)", target, w.Code)
		}
	})
}
