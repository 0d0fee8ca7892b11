package dataplane_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatewitness/gatewitness/gateway/dataplane"
	"github.com/gatewitness/gatewitness/gateway/ir"
)

// BenchmarkHTTPProxy measures one HTTP/1.1 request through the data plane
// to a local backend that answers a small fixed body, with a route table of
// a realistic size in front (the match is the last prefix rule).
func BenchmarkHTTPProxy(b *testing.B) {
	payload := []byte(`{"ok":true}`)
	backendAddr := serve(b, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(payload)
	}))
	ref := ir.Backend{Name: "default/bench:80", Weight: 1, Endpoints: []string{backendAddr}}
	var rules []ir.HTTPRule
	for _, p := range []string{"/a", "/b", "/c", "/d", "/e", "/f", "/g", "/h", "/bench"} {
		rules = append(rules, ir.HTTPRule{
			Matches:  []gwv1.HTTPRouteMatch{pathMatch(gwv1.PathMatchPathPrefix, p)},
			Backends: httpBackends(ref),
		})
	}
	s := dataplane.New(dataplane.Options{})
	defer s.Close()
	if err := s.Apply(oneListener(route("r", 0, nil, rules...))); err != nil {
		b.Fatal(err)
	}
	addr, _ := s.Addr("gw-ns", "gw", 80)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 30 * time.Second}
	req, err := http.NewRequest(http.MethodGet, "http://"+addr+"/bench/x", nil)
	if err != nil {
		b.Fatal(err)
	}
	req.Host = "gw.test"

	b.ReportAllocs()
	before := sample(b) // grpc_bench_test.go
	ok := drainOK(b)
	for b.Loop() {
		ok(client.Do(req))
	}
	reportCPUPerOp(b, before)
}

// drainOK returns what checks an exchange of b: it fails b unless the
// request got 200, and reads and closes the response's body, so that its
// connection goes back to the pool. It takes a client call's results as
// they are: drainOK(b)(client.Do(req)).
func drainOK(b *testing.B) func(*http.Response, error) {
	return func(resp *http.Response, err error) {
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
}

// reportCPUPerOp reports the process's CPU time a request since before:
// client, gateway and backend together, so a change of the gateway's
// shows as a change of it.
func reportCPUPerOp(b *testing.B, before usage) {
	b.ReportMetric(float64(sample(b).minus(before).cpu.Microseconds())/float64(b.N), "cpu-µs/op")
}

// BenchmarkHTTPPostFraming measures an HTTP/1.1 POST of a small body
// through the data plane with Content-Length and chunked: a chunked
// request whose framing is in no doubt keeps its connection, so both cost
// about the same. It reports the process's CPU time a request and the
// client connections opened.
func BenchmarkHTTPPostFraming(b *testing.B) {
	backendAddr := serve(b, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = io.WriteString(w, "ok")
	}))
	ref := ir.Backend{Name: "default/bench:80", Weight: 1, Endpoints: []string{backendAddr}}
	s := dataplane.New(dataplane.Options{})
	defer s.Close()
	if err := s.Apply(oneListener(route("r", 0, nil, rule([]gwv1.HTTPRouteMatch{pathMatch(gwv1.PathMatchPathPrefix, "/")}, ref)))); err != nil {
		b.Fatal(err)
	}
	addr, _ := s.Addr("gw-ns", "gw", 80)
	for _, chunked := range []bool{false, true} {
		b.Run(map[bool]string{false: "Content-Length", true: "chunked"}[chunked], func(b *testing.B) {
			var dials atomic.Int64
			tr := &http.Transport{MaxIdleConnsPerHost: 64, DialContext: func(ctx context.Context, network, a string) (net.Conn, error) {
				dials.Add(1)
				return (&net.Dialer{}).DialContext(ctx, network, a)
			}}
			defer tr.CloseIdleConnections()
			client := &http.Client{Transport: tr, Timeout: 30 * time.Second}
			b.ReportAllocs()
			ok := drainOK(b)
			before := sample(b)
			for b.Loop() {
				var body io.Reader = strings.NewReader("hello")
				if chunked {
					body = struct{ io.Reader }{body} // of unknown length: sent chunked (and without WriteTo, which MultiReader would allocate for)
				}
				ok(client.Post("http://"+addr+"/", "text/plain", body))
			}
			reportCPUPerOp(b, before)
			b.ReportMetric(float64(dials.Load()), "conns")
		})
	}
}
