package httpecho_test

import (
	"net/http"
	"net/url"
	"strconv"
	"testing"

	"github.com/gatewitness/gatewitness/echo-backend/httpecho"
	"github.com/gatewitness/gatewitness/echo-backend/ledger"
)

// discardWriter is the cheapest http.ResponseWriter that still flushes, so
// the benchmarks below measure the handler and not a recorder.
type discardWriter struct {
	h      http.Header
	code   int
	length int
}

func (w *discardWriter) Header() http.Header { return w.h }
func (w *discardWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
}
func (w *discardWriter) Write(p []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	w.length += len(p)
	return len(p), nil
}
func (w *discardWriter) Flush() {}

// reset readies w for the next request, keeping the header map's storage.
func (w *discardWriter) reset() {
	clear(w.h)
	w.code, w.length = 0, 0
}

// BenchmarkEchoHandler measures one echo through the handler alone (no
// network), with a request like the ones hack/perf sends: the load
// generator's few headers, no body. The scenarios are those of the
// hack/perf table. Compare runs with benchstat:
//
//	go test -run '^$' -bench EchoHandler -benchmem -count 10 ./echo-backend/httpecho/ > new.txt
func BenchmarkEchoHandler(b *testing.B) {
	cases := []struct {
		name   string
		target func(i int) string
		header map[string]string
		want   int
	}{
		{"plain", func(int) string { return "/echo" }, nil, http.StatusOK},
		{"new-id", func(i int) string { return "/echo?gatewitness-id=bench-" + strconv.Itoa(i) }, nil, http.StatusOK},
		{"same-id", func(int) string { return "/echo" }, map[string]string{"X-Gatewitness-Id": "bench-same"}, http.StatusOK},
		{"fault-418-new-id", func(i int) string { return "/echo?gatewitness-id=bench-" + strconv.Itoa(i) },
			map[string]string{"X-Gatewitness-Fault": "status=418"}, http.StatusTeapot},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			l := ledger.New(ledger.Options{})
			b.Cleanup(l.Close)
			h := httpecho.NewHandler(httpecho.Options{Pod: testPod, HTTPPort: "3000", Ledger: l, Listener: "http"})
			w := &discardWriter{h: make(http.Header)}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				r := newGet(b, tc.target(i), tc.header)
				w.reset()
				h.ServeHTTP(w, r)
				if w.code != tc.want || (tc.want == http.StatusOK && w.length == 0) {
					b.Fatalf("status %d, %d body bytes: want %d with a body", w.code, w.length, tc.want)
				}
				i++
			}
		})
	}
}

// newGet builds the request net/http's server would hand the handler for a
// GET of target from fortio's client; cheaper than httptest.NewRequest,
// which parses a serialised request with a 4 KiB reader.
func newGet(b *testing.B, target string, header map[string]string) *http.Request {
	u, err := url.ParseRequestURI(target)
	if err != nil {
		b.Fatal(err)
	}
	r := &http.Request{
		Method: http.MethodGet, URL: u, RequestURI: target, Host: "127.0.0.1:3000",
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:     http.Header{"User-Agent": {"fortio.org/fortio-1.68.2"}},
		Body:       http.NoBody,
		RemoteAddr: "127.0.0.1:40000",
	}
	for k, v := range header {
		r.Header.Set(k, v)
	}
	return r.WithContext(b.Context())
}
