package dataplane_test

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatewitness/gatewitness/gateway/dataplane"
	"github.com/gatewitness/gatewitness/gateway/ir"
)

// echo is what the test backends answer: who they are and what they got.
type echo struct {
	Backend string      `json:"backend"`
	Method  string      `json:"method"`
	Path    string      `json:"path"`
	Query   string      `json:"query"`
	Host    string      `json:"host"`
	Proto   string      `json:"proto"`
	Headers http.Header `json:"headers"`
	Body    string      `json:"body"`
}

// testBackend is a loopback HTTP/1.1 + h2c server that echoes requests as
// JSON and records them.
type testBackend struct {
	name string
	addr string

	mu   sync.Mutex
	seen []echo
	got  chan echo // every request, for tests that wait for one (mirrors)
}

func startBackend(t *testing.T, name string) *testBackend {
	t.Helper()
	b := &testBackend{name: name, got: make(chan echo, 1024)}
	b.addr = serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		e := echo{
			Backend: name, Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery,
			Host: r.Host, Proto: r.Proto, Headers: r.Header, Body: string(body),
		}
		b.mu.Lock()
		b.seen = append(b.seen, e)
		b.mu.Unlock()
		select {
		case b.got <- e:
		default:
		}
		for _, list := range r.Header.Values("X-Echo-Set-Header") {
			for kv := range strings.SplitSeq(list, ",") {
				if k, v, ok := strings.Cut(kv, ":"); ok {
					w.Header().Set(k, v)
				}
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(e)
	}))
	return b
}

// serve runs h on a loopback socket with HTTP/1.1 and h2c until the test
// ends, and returns its address.
func serve(t testing.TB, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := new(http.Protocols)
	p.SetHTTP1(true)
	p.SetUnencryptedHTTP2(true)
	srv := &http.Server{Handler: h, Protocols: p, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}

// ref is a valid weight-1 Backend for b.
func (b *testBackend) ref() ir.Backend {
	return ir.Backend{Name: "default/" + b.name + ":8080", Weight: 1, Endpoints: []string{b.addr}}
}

// newServer returns a new Server with opts, closed when t ends (a
// failure to close fails t).
func newServer(t *testing.T, opts dataplane.Options) *dataplane.Server {
	t.Helper()
	s := dataplane.New(opts)
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// startGateway applies cfg to a new Server and returns it; Apply must
// succeed.
func startGateway(t *testing.T, cfg *ir.Config) *dataplane.Server {
	t.Helper()
	s := newServer(t, dataplane.Options{})
	if err := s.Apply(cfg); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	return s
}

func mustAddr(t *testing.T, s *dataplane.Server, port int32) string {
	t.Helper()
	addr, ok := s.Addr("gw-ns", "gw", port)
	if !ok {
		t.Fatalf("Addr(gw-ns, gw, %d): not served", port)
	}
	return addr
}

// oneListener is a Config with one HTTP listener on port 80 and routes.
func oneListener(routes ...ir.HTTPRoute) *ir.Config {
	return &ir.Config{Gateways: []ir.Gateway{{
		Namespace: "gw-ns", Name: "gw",
		Listeners: []ir.Listener{{Name: "http", Port: 80, Protocol: gwv1.HTTPProtocolType, HTTPRoutes: routes}},
	}}}
}

// route builds an HTTPRoute named name created at minute created.
func route(name string, created int, hostnames []string, rules ...ir.HTTPRule) ir.HTTPRoute {
	return ir.HTTPRoute{
		RouteMeta: ir.RouteMeta{
			Namespace: "default", Name: name,
			Created:   time.Date(2025, 1, 1, 0, created, 0, 0, time.UTC),
			Hostnames: hostnames,
		},
		Rules: rules,
	}
}

func rule(matches []gwv1.HTTPRouteMatch, backends ...ir.Backend) ir.HTTPRule {
	return ir.HTTPRule{Matches: matches, Backends: httpBackends(backends...)}
}

// httpBackends makes each backend an HTTPRoute backendRef without filters.
func httpBackends(bs ...ir.Backend) []ir.HTTPBackend {
	out := make([]ir.HTTPBackend, len(bs))
	for i, b := range bs {
		out[i].Backend = b
	}
	return out
}

// grpcBackends makes each backend a GRPCRoute backendRef without filters.
func grpcBackends(bs ...ir.Backend) []ir.GRPCBackend {
	out := make([]ir.GRPCBackend, len(bs))
	for i, b := range bs {
		out[i].Backend = b
	}
	return out
}

func ptr[T any](v T) *T { return &v }

func pathMatch(typ gwv1.PathMatchType, value string) gwv1.HTTPRouteMatch {
	return gwv1.HTTPRouteMatch{Path: &gwv1.HTTPPathMatch{Type: ptr(typ), Value: ptr(value)}}
}

var noRedirects = &http.Client{
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	Transport:     &http.Transport{DisableCompression: true},
	Timeout:       30 * time.Second,
}

// get sends an HTTP/1.1 request and returns the response with its body read.
func do(t *testing.T, req *http.Request) (*http.Response, []byte) {
	t.Helper()
	resp, err := noRedirects.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading body: %v", req.Method, req.URL, err)
	}
	return resp, body
}

// get sends GET http://addr+path with the Host header host.
func get(t *testing.T, addr, host, path string, headers ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+addr+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Add(headers[i], headers[i+1])
	}
	return do(t, req)
}

// decode parses a backend echo; it fails the test on a non-200 answer.
func decode(t *testing.T, resp *http.Response, body []byte) echo {
	t.Helper()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d, want 200; body %q", resp.StatusCode, body)
	}
	var e echo
	if err := json.Unmarshal(body, &e); err != nil {
		t.Fatalf("decoding echo %q: %v", body, err)
	}
	return e
}
