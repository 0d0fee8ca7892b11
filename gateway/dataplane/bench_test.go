package dataplane_test

import (
	"io"
	"net/http"
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
	for b.Loop() {
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
	// The process's CPU time a request: client, gateway and backend
	// together, so a change of the gateway's shows as a change of it.
	b.ReportMetric(float64(sample(b).minus(before).cpu.Microseconds())/float64(b.N), "cpu-µs/op")
}
