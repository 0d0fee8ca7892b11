// Package proxytest checks a proxy adapter against its real proxy: a
// snapshot with one route, served through the proxy once Apply returns.
package proxytest

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatewitness/gatewitness/calibration/proxy"
	"github.com/gatewitness/gatewitness/gateway/ir"
)

// Snapshot routes the prefix /a on host h.test of Gateway ns/gw's port
// 80 to the backend at addr, retrying 503 and the codes given twice.
func Snapshot(addr string, codes ...gwv1.HTTPRouteRetryStatusCode) *ir.Config {
	prefix, value := gwv1.PathMatchPathPrefix, "/a"
	attempts := 2
	return &ir.Config{Gateways: []ir.Gateway{{Namespace: "ns", Name: "gw", Listeners: []ir.Listener{{
		Name: "http", Port: 80, Protocol: gwv1.HTTPProtocolType,
		HTTPRoutes: []ir.HTTPRoute{{RouteMeta: ir.RouteMeta{Namespace: "ns", Name: "r", Hostnames: []string{"h.test"}}, Rules: []ir.HTTPRule{{
			Matches:  []gwv1.HTTPRouteMatch{{Path: &gwv1.HTTPPathMatch{Type: &prefix, Value: &value}}},
			Retry:    &gwv1.HTTPRouteRetry{Attempts: &attempts, Codes: append([]gwv1.HTTPRouteRetryStatusCode{503}, codes...)},
			Backends: []ir.HTTPBackend{{Backend: ir.Backend{Name: "ns/b:80", Weight: 1, Endpoints: []string{addr}}}},
		}}}},
	}}}}}
}

// ServesAfterApply checks a, a new adapter of a real proxy: nothing is
// served before Apply; once Apply returns the route answers through the
// Gateway's socket (/a/x reaches the backend, /ab does not match); and a
// snapshot that changes nothing served does not reload the proxy.
func ServesAfterApply(t *testing.T, a *proxy.Adapter) {
	t.Helper()
	backend := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "backend "+r.URL.Path) })}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go backend.Serve(ln)
	defer backend.Close()
	defer a.Close()
	if _, ok := a.Addr("ns", "gw", 80); ok {
		t.Error("a port is served before any Apply")
	}
	if err := a.Apply(Snapshot(ln.Addr().String())); err != nil {
		t.Fatal(err)
	}
	addr, ok := a.Addr("ns", "gw", 80)
	if !ok {
		t.Fatal("no socket for the Gateway's port 80 after Apply")
	}
	for path, want := range map[string]string{"/a/x": "200 backend /a/x", "/ab": "404"} {
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+path, nil)
		req.Host = "h.test"
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("GET %s through the proxy: %v", path, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if got := resp.Status[:3] + " " + strings.TrimSpace(string(body)); !strings.HasPrefix(got, want) {
			t.Errorf("GET %s: %q, want %q", path, got, want)
		}
	}
	gen := a.Generation()
	if err := a.Apply(Snapshot(ln.Addr().String())); err != nil {
		t.Fatal(err)
	}
	if a.Generation() != gen {
		t.Errorf("the same snapshot again reloaded the proxy (generation %d to %d)", gen, a.Generation())
	}
	if err := a.Apply(Snapshot(ln.Addr().String(), 500)); err != nil {
		t.Fatal(err)
	}
	if a.Generation() != gen+1 {
		t.Errorf("a changed snapshot: generation %d, want %d", a.Generation(), gen+1)
	}
}
