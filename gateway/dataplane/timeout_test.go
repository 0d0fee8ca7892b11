package dataplane_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatewitness/gatewitness/gateway/dataplane"
	"github.com/gatewitness/gatewitness/gateway/ir"
)

// tolerance is how late a timeout may fire on a loaded machine.
const tolerance = 5 * time.Second

func TestTimeouts(t *testing.T) {
	// The backend answers /fast at once; /hang and /stall block until the
	// gateway gives up on them (their request context ends), /stall after
	// sending its headers and a first chunk.
	backendAddr := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasSuffix(r.URL.Path, "/hang"):
			<-r.Context().Done()
		case strings.HasSuffix(r.URL.Path, "/stall"):
			_, _ = io.WriteString(w, "first chunk")
			http.NewResponseController(w).Flush()
			<-r.Context().Done()
		default:
			_, _ = io.WriteString(w, "fast")
		}
	}))
	ref := ir.Backend{Name: "default/slow:80", Weight: 1, Endpoints: []string{backendAddr}}
	withTimeouts := func(prefix string, request, backend string) ir.HTTPRule {
		r := prefixRule(prefix, nil, ref)
		r.Timeouts = &gwv1.HTTPRouteTimeouts{}
		if request != "" {
			r.Timeouts.Request = ptr(gwv1.Duration(request))
		}
		if backend != "" {
			r.Timeouts.BackendRequest = ptr(gwv1.Duration(backend))
		}
		return r
	}
	addr := mustAddr(t, startGateway(t, oneListener(route("r", 0, nil,
		withTimeouts("/request", "300ms", ""),
		withTimeouts("/backend", "10s", "300ms"),
		withTimeouts("/disabled", "0s", "0s"),
	))), 80)

	tests := []struct {
		path    string
		timeout time.Duration
	}{
		{"/request/hang", 300 * time.Millisecond},
		{"/backend/hang", 300 * time.Millisecond},
	}
	for _, tc := range tests {
		start := time.Now()
		resp, body := get(t, addr, "gw.test", tc.path)
		elapsed := time.Since(start)
		if resp.StatusCode != http.StatusGatewayTimeout {
			t.Errorf("%s: status %d, want 504 (body %q)", tc.path, resp.StatusCode, body)
		}
		if elapsed < tc.timeout || elapsed > tc.timeout+tolerance {
			t.Errorf("%s: answered after %v, want within [%v, %v]", tc.path, elapsed, tc.timeout, tc.timeout+tolerance)
		}
	}

	// The request timeout covers the response body too: a stalled stream
	// is cut off.
	start := time.Now()
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/request/stall", nil)
	req.Host = "gw.test"
	resp, err := noRedirects.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	elapsed := time.Since(start)
	if err == nil || string(body) != "first chunk" {
		t.Errorf("/request/stall: body %q, error %v; want the first chunk, then an error", body, err)
	}
	if elapsed < 300*time.Millisecond || elapsed > 300*time.Millisecond+tolerance {
		t.Errorf("/request/stall: cut after %v, want within [300ms, %v]", elapsed, 300*time.Millisecond+tolerance)
	}

	for _, path := range []string{"/request/fast", "/backend/fast", "/disabled/fast"} {
		if resp, body := get(t, addr, "gw.test", path); resp.StatusCode != http.StatusOK || string(body) != "fast" {
			t.Errorf("%s: %d %q, want 200 \"fast\"", path, resp.StatusCode, body)
		}
	}
}

func TestBadTimeoutIsReported(t *testing.T) {
	b := startBackend(t, "b")
	r := prefixRule("/", nil, b.ref())
	r.Timeouts = &gwv1.HTTPRouteTimeouts{Request: ptr(gwv1.Duration("10x"))}
	s := dataplane.New(dataplane.Options{})
	defer s.Close()
	err := s.Apply(oneListener(route("r", 0, nil, r)))
	if err == nil || !strings.Contains(err.Error(), `HTTPRoute default/r rule 0: timeouts.request: "10x" is not a Gateway API duration`) {
		t.Fatalf("Apply error %v, want one naming timeouts.request and the accepted form", err)
	}
	if resp, body := get(t, mustAddr(t, s, 80), "gw.test", "/"); resp.StatusCode != http.StatusInternalServerError {
		t.Errorf("rule with a bad timeout: %d %q, want 500", resp.StatusCode, body)
	}
}
