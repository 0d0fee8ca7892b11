package h2tap_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/onsi/gomega"
	"golang.org/x/net/http2"

	"github.com/gatewitness/gatewitness/echo-backend/h2tap"
)

// tagHandler answers with the StreamHeader values it received, joined by
// commas, and checks the tag names a live tapped connection.
func tagHandler(t *testing.T) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		vals := r.Header.Values(h2tap.StreamHeader)
		if len(vals) == 1 {
			connID, _, ok := h2tap.ParseStreamHeader(vals[0])
			c, found := h2tap.Lookup(connID)
			if !ok || !found {
				t.Errorf("tag %q: parsed %v, found %v", vals[0], ok, found)
			} else if got, want := c.RemoteAddr().String(), r.RemoteAddr; got != want {
				t.Errorf("tag %q names a connection from %s, request came from %s", vals[0], got, want)
			}
		}
		io.WriteString(w, strings.Join(vals, ","))
	}
}

func doGet(t *testing.T, rt http.RoundTripper, url string, hdr http.Header) (*http.Response, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	return rt.RoundTrip(req)
}

func readBody(t *testing.T, res *http.Response) string {
	t.Helper()
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("reading body: %v", err)
	}
	return string(b)
}

func TestStreamIDsH2C(t *testing.T) {
	addr := serveH2C(t, tagHandler(t))
	cc := dialH2C(t, addr)
	var connID uint64
	for i, want := range []uint32{1, 3, 5, 7} {
		// Every other request spoofs the tag; it must be replaced.
		hdr := http.Header{}
		if i%2 == 1 {
			hdr.Set(h2tap.StreamHeader, "999/1")
		}
		res, err := doGet(t, cc, "http://tap.test/", hdr)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		tag := readBody(t, res)
		c, s, ok := h2tap.ParseStreamHeader(tag)
		if !ok {
			t.Fatalf("request %d: handler saw tag %q, want one <conn>/<stream> value", i, tag)
		}
		if s != want {
			t.Errorf("request %d: stream id %d, want %d", i, s, want)
		}
		if i == 0 {
			connID = c
		} else if c != connID {
			t.Errorf("request %d: conn id %d, want %d as before", i, c, connID)
		}
	}
}

func TestStreamIDsStdlibClient(t *testing.T) {
	addr := serveH2C(t, tagHandler(t))
	var protos http.Protocols
	protos.SetUnencryptedHTTP2(true)
	tr := &http.Transport{Protocols: &protos}
	t.Cleanup(tr.CloseIdleConnections)
	res, err := doGet(t, tr, "http://"+addr+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.ProtoMajor != 2 {
		t.Fatalf("proto %s, want HTTP/2", res.Proto)
	}
	if tag := readBody(t, res); !strings.HasSuffix(tag, "/1") {
		t.Errorf("tag %q, want stream 1", tag)
	}
}

func TestHTTP1PassesThrough(t *testing.T) {
	addr := serveH2C(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := r.Context().Value(connKey{}).(*h2tap.Conn)
		err := c.ResetStream(1, uint32(http2.ErrCodeCancel))
		fmt.Fprintf(w, "%s http2=%v tags=%q reset-error=%v", r.Proto, c.IsHTTP2(), r.Header.Values(h2tap.StreamHeader), err != nil)
	}))
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	hdr := http.Header{h2tap.StreamHeader: {"client-value"}}
	for range 2 { // the second request reuses the connection
		res, err := doGet(t, tr, "http://"+addr+"/", hdr)
		if err != nil {
			t.Fatal(err)
		}
		got := readBody(t, res)
		want := `HTTP/1.1 http2=false tags=["client-value"] reset-error=true`
		if got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
}

// resetHandler resets its stream with the code in ?code=, either before
// writing anything or, with ?after=1, after headers and a partial body that
// the client confirms reading by closing the channel for ?id=.
type resetHandler struct {
	t       *testing.T
	mu      sync.Mutex
	gotPart map[string]chan struct{}
}

func (h *resetHandler) partial(id string) chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.gotPart == nil {
		h.gotPart = make(map[string]chan struct{})
	}
	if h.gotPart[id] == nil {
		h.gotPart[id] = make(chan struct{})
	}
	return h.gotPart[id]
}

func (h *resetHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("code") == "" {
		io.WriteString(w, r.Header.Get(h2tap.StreamHeader))
		return
	}
	code, err := strconv.ParseUint(q.Get("code"), 10, 32)
	if err != nil {
		h.t.Errorf("bad code: %v", err)
		return
	}
	connID, streamID, ok := h2tap.ParseStreamHeader(r.Header.Get(h2tap.StreamHeader))
	c, found := h2tap.Lookup(connID)
	if !ok || !found {
		h.t.Errorf("tag %q: parsed %v, found %v", r.Header.Get(h2tap.StreamHeader), ok, found)
		return
	}
	if q.Get("after") != "" {
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, "partial")
		w.(http.Flusher).Flush()
		select {
		case <-h.partial(q.Get("id")):
		case <-r.Context().Done():
			h.t.Errorf("request %s ended before the client read the partial body", q.Get("id"))
			return
		}
	}
	if err := c.ResetStream(streamID, uint32(code)); err != nil {
		h.t.Errorf("ResetStream: %v", err)
	}
	if q.Get("abort") != "" {
		panic(http.ErrAbortHandler)
	}
	io.WriteString(w, strings.Repeat("must not arrive ", 100))
}

func testResetStream(t *testing.T, cc *http2.ClientConn, h *resetHandler, base string) {
	codes := []http2.ErrCode{http2.ErrCodeCancel, http2.ErrCodeRefusedStream, http2.ErrCodeInternal}
	n := 0
	for _, code := range codes {
		for _, after := range []bool{false, true} {
			for _, abort := range []bool{false, true} {
				n++
				id := strconv.Itoa(n)
				name := fmt.Sprintf("%v/after=%v/abort=%v", code, after, abort)
				url := fmt.Sprintf("%s/?id=%s&code=%d", base, id, code)
				if after {
					url += "&after=1"
				}
				if abort {
					url += "&abort=1"
				}
				res, err := doGet(t, cc, url, nil)
				if !after {
					if err == nil {
						res.Body.Close()
						t.Fatalf("%s: got status %d, want a stream error", name, res.StatusCode)
					}
					if got := streamCode(t, err); got != code {
						t.Errorf("%s: stream error code %v, want %v", name, got, code)
					}
				} else {
					if err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					part := make([]byte, len("partial"))
					if _, err := io.ReadFull(res.Body, part); err != nil || string(part) != "partial" {
						t.Fatalf("%s: read %q, %v; want \"partial\"", name, part, err)
					}
					close(h.partial(id))
					rest, err := io.ReadAll(res.Body)
					res.Body.Close()
					if len(rest) != 0 {
						t.Errorf("%s: got %q after the reset", name, rest)
					}
					if got := streamCode(t, err); got != code {
						t.Errorf("%s: stream error code %v, want %v", name, got, code)
					}
				}
				// The same connection still serves requests, and its
				// header compression is still in sync.
				res, err = doGet(t, cc, base+"/", nil)
				if err != nil {
					t.Fatalf("%s: request after the reset: %v", name, err)
				}
				if body := readBody(t, res); res.StatusCode != 200 || body == "" {
					t.Errorf("%s: request after the reset: %d %q", name, res.StatusCode, body)
				}
			}
		}
	}
}

func TestResetStreamH2C(t *testing.T) {
	h := &resetHandler{t: t}
	cc := dialH2C(t, serveH2C(t, h))
	testResetStream(t, cc, h, "http://tap.test")
}

func TestResetStreamTLS(t *testing.T) {
	cert, roots := testCert(t)
	h := &resetHandler{t: t}
	cc := dialTLS(t, serveTLS(t, h, cert), roots)
	testResetStream(t, cc, h, "https://localhost")
}

func TestTLSStdlibClient(t *testing.T) {
	cert, roots := testCert(t)
	addr := serveTLS(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil || !r.TLS.HandshakeComplete {
			t.Errorf("r.TLS = %v, want a completed handshake", r.TLS)
		}
		io.WriteString(w, r.Header.Get(h2tap.StreamHeader))
	}), cert)
	tr := &http.Transport{ForceAttemptHTTP2: true, TLSClientConfig: &tls.Config{RootCAs: roots}}
	t.Cleanup(tr.CloseIdleConnections)
	for _, want := range []string{"/1", "/3"} {
		res, err := doGet(t, tr, "https://"+addr+"/", nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.ProtoMajor != 2 {
			t.Fatalf("proto %s, want HTTP/2", res.Proto)
		}
		if tag := readBody(t, res); !strings.HasSuffix(tag, want) {
			t.Errorf("tag %q, want stream %s", tag, want)
		}
	}
}

// TestResetStreamRestoresWindow resets 200 streams whose 4 KiB bodies the
// tap drops: 800 KiB, far more than the client's 64 KiB connection window
// (Go's client normally opens it to 1 GiB; this one keeps the minimum). A
// 64 KiB response must still arrive, which it can only if the tap gave the
// window back to the server.
func TestResetStreamRestoresWindow(t *testing.T) {
	const resets, dropped, big = 200, 4 << 10, 64 << 10
	addr := serveH2C(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/big" {
			w.Write(make([]byte, big))
			return
		}
		connID, streamID, _ := h2tap.ParseStreamHeader(r.Header.Get(h2tap.StreamHeader))
		c, ok := h2tap.Lookup(connID)
		if !ok {
			t.Errorf("no connection %d", connID)
			return
		}
		if err := c.ResetStream(streamID, uint32(http2.ErrCodeCancel)); err != nil {
			t.Errorf("ResetStream: %v", err)
		}
		w.Write(make([]byte, dropped))
	}))
	cc := dialH2CConfig(t, addr, &http.HTTP2Config{MaxReceiveBufferPerConnection: 65535})
	for i := range resets {
		_, err := doGet(t, cc, "http://tap.test/drop", nil)
		if got := streamCode(t, err); got != http2.ErrCodeCancel {
			t.Fatalf("reset %d: code %v, want CANCEL", i, got)
		}
	}
	res, err := doGet(t, cc, "http://tap.test/big", nil)
	if err != nil {
		t.Fatalf("big request: %v", err)
	}
	if n := len(readBody(t, res)); n != big {
		t.Fatalf("big response has %d bytes, want %d", n, big)
	}
}

// TestGoAwayAfterStream: GOAWAY whose last stream id covers the request:
// the request completes (the client must not retry it), then the
// connection ends.
func TestGoAwayAfterStream(t *testing.T) {
	conns := make(chan uint64, 1)
	addr := serveH2C(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		connID, streamID, _ := h2tap.ParseStreamHeader(r.Header.Get(h2tap.StreamHeader))
		c, ok := h2tap.Lookup(connID)
		if !ok {
			t.Errorf("no connection %d", connID)
			return
		}
		conns <- connID
		if err := c.GoAway(streamID, uint32(http2.ErrCodeEnhanceYourCalm)); err != nil {
			t.Errorf("GoAway: %v", err)
		}
		if err := c.GoAway(streamID, 0); err == nil {
			t.Errorf("second GoAway: no error")
		}
		io.WriteString(w, "kept")
	}))
	cc := dialH2C(t, addr)
	res, err := doGet(t, cc, "http://tap.test/", nil)
	if err != nil {
		t.Fatalf("got %v, want the answer of the stream GOAWAY covers", err)
	}
	if body := readBody(t, res); body != "kept" {
		t.Errorf("body %q, want %q", body, "kept")
	}
	connID := <-conns
	gomega.NewWithT(t).Eventually(func() bool {
		_, open := h2tap.Lookup(connID)
		return open
	}).WithTimeout(testTimeout).Should(gomega.BeFalse(), "the tapped connection still looked up")
}

// TestGoAwayBeforeStream: GOAWAY(last=0, NO_ERROR) tells the client its
// request was not processed; Go's client retries it on a new connection.
func TestGoAwayBeforeStream(t *testing.T) {
	var attempts atomic.Int32
	addr := serveH2C(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		connID, _, _ := h2tap.ParseStreamHeader(r.Header.Get(h2tap.StreamHeader))
		if attempts.Add(1) == 1 {
			c, ok := h2tap.Lookup(connID)
			if !ok {
				t.Errorf("no connection %d", connID)
				return
			}
			if err := c.GoAway(0, uint32(http2.ErrCodeNo)); err != nil {
				t.Errorf("GoAway: %v", err)
			}
		}
		io.WriteString(w, r.Header.Get(h2tap.StreamHeader))
	}))
	tr := &http2.Transport{
		AllowHTTP: true,
		DialTLSContext: func(ctx context.Context, network, addr string, _ *tls.Config) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		},
	}
	t.Cleanup(tr.CloseIdleConnections)
	res, err := doGet(t, tr, "http://"+addr+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	tag := readBody(t, res)
	if n := attempts.Load(); n != 2 {
		t.Fatalf("handler ran %d times, want 2 (GOAWAY, then a retry)", n)
	}
	if !strings.HasSuffix(tag, "/1") {
		t.Errorf("retry tag %q, want stream 1 of a new connection", tag)
	}
}
