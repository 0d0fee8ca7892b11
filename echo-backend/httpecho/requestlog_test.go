package httpecho_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/gatewitness/gatewitness/echo-backend/httpecho"
	"github.com/gatewitness/gatewitness/echo-backend/ledger"
)

// writes records each Write call separately.
type writes struct {
	mu    sync.Mutex
	calls []string
}

func (w *writes) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.calls = append(w.calls, string(p))
	return len(p), nil
}

func (w *writes) get() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.calls...)
}

// TestRequestLog checks echo-basic's line, which upstream's mirror tests
// match, for echoed requests only, one Write each, over a real connection
// so RemoteAddr is the client's.
func TestRequestLog(t *testing.T) {
	log := &writes{}
	l := ledger.New(ledger.Options{})
	t.Cleanup(l.Close)
	srv := httptest.NewServer(httpecho.NewHandler(httpecho.Options{Pod: testPod, HTTPPort: "3000", Ledger: l, Listener: "http", Log: log}))
	t.Cleanup(srv.Close)

	get := func(target string) string {
		t.Helper()
		resp, err := http.Get(srv.URL + target)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: status %d", target, resp.StatusCode)
		}
		return resp.Request.URL.RequestURI()
	}
	// What the client sent, as the server's RequestURI holds it: the
	// doubled slash and the query stay. The long one outgrows the pooled
	// line buffers; the short one after it must not see its leftovers.
	targets := []string{"/mirror", "/a//b?x=1&y=%20", "/long/" + strings.Repeat("x", 5000), "/"}
	for _, target := range targets {
		get(target)
	}
	// Not echoes: echo-basic prints nothing for these either.
	get("/health")
	get("/status/200")

	calls := log.get()
	if len(calls) != len(targets) {
		t.Fatalf("got %d writes, want %d (one per echoed request):\n%q", len(calls), len(targets), calls)
	}
	for i, target := range targets {
		want := "Echoing back request made to " + target + " to client (127.0.0.1:"
		if !strings.HasPrefix(calls[i], want) || !strings.HasSuffix(calls[i], ")\n") || strings.Count(calls[i], "\n") != 1 {
			t.Errorf("write %d = %q, want one line starting %q and ending with the client's port", i, calls[i], want)
		}
	}
}

// TestRequestLogNil checks that a handler without Log echoes as before.
func TestRequestLogNil(t *testing.T) {
	h := httpecho.NewHandler(httpecho.Options{Pod: testPod, HTTPPort: "3000", Listener: "http"})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/mirror", nil))
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"/mirror"`) {
		t.Errorf("status %d, body %q: want an echo of /mirror", rec.Code, rec.Body.String())
	}
}

// BenchmarkEchoHandlerLog is BenchmarkEchoHandler's plain case with and
// without the request log, so the cost of the log line shows in -benchmem.
func BenchmarkEchoHandlerLog(b *testing.B) {
	for _, tc := range []struct {
		name string
		log  io.Writer
	}{
		{"nil", nil},
		{"discard", io.Discard},
		{"locked", &lockedDiscard{}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			l := ledger.New(ledger.Options{})
			b.Cleanup(l.Close)
			h := httpecho.NewHandler(httpecho.Options{Pod: testPod, HTTPPort: "3000", Ledger: l, Listener: "http", Log: tc.log})
			w := &discardWriter{h: make(http.Header)}
			b.ReportAllocs()
			for b.Loop() {
				r := newGet(b, "/echo", nil)
				w.reset()
				h.ServeHTTP(w, r)
				if w.code != http.StatusOK {
					b.Fatalf("status %d", w.code)
				}
			}
		})
	}
}

// lockedDiscard stands for a log buffer: a mutex around a copy.
type lockedDiscard struct {
	mu  sync.Mutex
	buf []byte
}

func (w *lockedDiscard) Write(p []byte) (int, error) {
	w.mu.Lock()
	w.buf = append(w.buf[:0], p...)
	w.mu.Unlock()
	return len(p), nil
}
