package dataplane_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatewitness/gatewitness/gateway/dataplane"
	"github.com/gatewitness/gatewitness/gateway/ir"
)

// limitsGateway serves one catch-all route to be, with the given limits.
func limitsGateway(t *testing.T, limits dataplane.Limits, be ir.Backend) string {
	t.Helper()
	s := dataplane.New(dataplane.Options{Limits: limits})
	t.Cleanup(func() { s.Close() })
	if err := s.Apply(oneListener(route("r", 0, nil, rule([]gwv1.HTTPRouteMatch{pathMatch(gwv1.PathMatchPathPrefix, "/")}, be)))); err != nil {
		t.Fatal(err)
	}
	return mustAddr(t, s, 80)
}

// paths returns the paths the backend has seen.
func (b *testBackend) paths() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, e := range b.seen {
		out = append(out, e.Path)
	}
	return out
}

// answerThenEOF reads one response from c and wants the connection closed
// after it: the next read ends (EOF or reset) within the deadline, with no
// byte of a second response. It returns the response's status.
func answerThenEOF(t *testing.T, c net.Conn, what string) int {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(20 * time.Second))
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("%s: reading the answer: %v", what, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	// The close follows the answer at once; a connection still open
	// after this long was kept.
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	rest, err := io.ReadAll(br)
	switch {
	case len(rest) > 0:
		t.Errorf("%s: after the %d answer the connection carried %q; want it closed", what, resp.StatusCode, firstLine(rest))
	case errors.Is(err, os.ErrDeadlineExceeded):
		t.Errorf("%s: the connection stayed open after the %d answer", what, resp.StatusCode)
	}
	return resp.StatusCode
}

func firstLine(b []byte) string { return strings.SplitN(string(b), "\r\n", 2)[0] }

// TestBrokenChunkedBodyClosesConnection is the smuggling probe: a chunked
// request body with a broken chunk, followed on the same connection by
// what would parse as another request. The gateway must answer one 400
// and close; the bytes after the broken chunk must never reach a backend
// as a request. Without a client timeout net/http's full-duplex mode used
// to keep the connection and parse "GET /smuggled". Two rules close it
// now, each alone enough here: the close after a chunked request and the
// close after a body that failed; TestSlowRequestBody needs the second
// alone.
func TestBrokenChunkedBodyClosesConnection(t *testing.T) {
	be := startBackend(t, "b")
	addr := limitsGateway(t, dataplane.Limits{}, be.ref())
	for _, tc := range []struct{ name, body string }{
		{"bad chunk size", "5\r\nhello\r\nzz\r\n"},
		{"chunk without its CRLF", "5\r\nhelloXX"},
	} {
		answeredThenClosed(t, addr, tc.name, "POST /x HTTP/1.1\r\nHost: gw.test\r\nTransfer-Encoding: chunked\r\n\r\n"+tc.body+
			"GET /smuggled HTTP/1.1\r\nHost: gw.test\r\n\r\n", http.StatusBadRequest)
	}
	be.neverSaw(t, "/smuggled")
}

// answeredThenClosed writes req on a new connection and wants one answer
// with one of the statuses, then the connection closed.
func answeredThenClosed(t *testing.T, addr, what, req string, statuses ...int) {
	t.Helper()
	c := dialGateway(t, addr)
	defer c.Close()
	fmt.Fprint(c, req)
	if status := answerThenEOF(t, c, what); !slices.Contains(statuses, status) {
		t.Errorf("%s: status %d, want one of %v", what, status, statuses)
	}
}

// neverSaw fails the test if the backend got a request for path.
func (b *testBackend) neverSaw(t *testing.T, path string) {
	t.Helper()
	if got := b.paths(); slices.Contains(got, path) {
		t.Errorf("a request for %s reached the backend (it saw %q)", path, got)
	}
}

// TestChunkedWithContentLengthClosesConnection sends requests whose
// framing parsers read differently (RFC 9112 section 6.1 and 11.2):
// Content-Length and Transfer-Encoding together, a Transfer-Encoding
// folded onto a second line, one after a tab, one given twice, another
// field folded. Each is followed by another request on the same
// connection. The gateway may reject the first (400, or 501 for a
// Transfer-Encoding given twice, which Go refuses) or process it as
// chunked, but must then close the connection: the
// second request must reach no backend.
func TestChunkedWithContentLengthClosesConnection(t *testing.T) {
	be := startBackend(t, "b")
	addr := limitsGateway(t, dataplane.Limits{}, be.ref())
	for _, tc := range []struct{ name, headers string }{
		{"CL+TE", "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n"},
		{"TE+CL", "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n"},
		{"TE folded", "Content-Length: 5\r\nTransfer-Encoding:\r\n chunked\r\n"},
		{"TE after a tab", "Content-Length: 5\r\nTransfer-Encoding:\tchunked\r\n"},
		{"TE twice", "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n"},
		{"another field folded", "Transfer-Encoding: chunked\r\nX-Folded: a\r\n b\r\n"},
	} {
		answeredThenClosed(t, addr, tc.name, "POST /first HTTP/1.1\r\nHost: gw.test\r\n"+tc.headers+"\r\n5\r\nhello\r\n0\r\n\r\n"+
			"GET /smuggled HTTP/1.1\r\nHost: gw.test\r\n\r\n", http.StatusOK, http.StatusBadRequest, http.StatusNotImplemented)
	}
	be.neverSaw(t, "/smuggled")
}

// TestChunkedKeepsConnection: a chunked request whose framing is in no
// doubt keeps its connection, and the request after it on the same
// connection is answered too (RFC 9112 section 6.1 asks the close only of
// a message with both Content-Length and Transfer-Encoding).
func TestChunkedKeepsConnection(t *testing.T) {
	be := startBackend(t, "b")
	addr := limitsGateway(t, dataplane.Limits{}, be.ref())
	c := dialGateway(t, addr)
	c.SetDeadline(time.Now().Add(20 * time.Second))
	fmt.Fprint(c, "POST /first HTTP/1.1\r\nHost: gw.test\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"+
		"POST /second HTTP/1.1\r\nHost: gw.test\r\nContent-Length: 5\r\n\r\nhello"+
		"POST /third HTTP/1.1\r\nHost: gw.test\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nX-Trailer: t\r\n\r\n")
	br := bufio.NewReader(c)
	for _, path := range []string{"/first", "/second", "/third"} {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("the answer to %s on the same connection: %v", path, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Close {
			t.Errorf("%s: status %d, close %v; want 200 and the connection kept", path, resp.StatusCode, resp.Close)
		}
	}
	if got := be.paths(); !slices.Equal(got, []string{"/first", "/second", "/third"}) {
		t.Errorf("the backend saw %q, want /first, /second, /third", got)
	}
}

// TestSlowRequestBody sends a request body at 20 bytes a second to a
// gateway whose pace bound is 1 KiB a second after 300ms. The gateway must
// answer 408 no earlier than the grace and not much later, close the
// connection, and must not read the rest of the body as a request. A body
// sent at once passes.
func TestSlowRequestBody(t *testing.T) {
	const grace, tolerance = 300 * time.Millisecond, 2 * time.Second
	be := startBackend(t, "b")
	addr := limitsGateway(t, dataplane.Limits{MinRequestBodyRate: 1024, RequestBodyGrace: grace}, be.ref())

	resp, body := do(t, mustRequest(t, http.MethodPost, "http://"+addr+"/fast", strings.Repeat("x", 4000)))
	decode(t, resp, body)

	smuggled := "GET /smuggled HTTP/1.1\r\nHost: gw.test\r\n\r\n"
	c := dialGateway(t, addr)
	defer c.Close()
	start := time.Now()
	fmt.Fprintf(c, "POST /slow HTTP/1.1\r\nHost: gw.test\r\nContent-Length: %d\r\n\r\n", 100+len(smuggled))
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for range 100 {
			select {
			case <-done:
				// The rest of the body, which a gateway that keeps the
				// connection would read as the next request.
				_, _ = fmt.Fprint(c, smuggled)
				return
			case <-tick.C:
				if _, err := c.Write([]byte("x")); err != nil {
					return
				}
			}
		}
	})
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	br := bufio.NewReader(c)
	r, err := http.ReadResponse(br, nil)
	elapsed := time.Since(start)
	close(done)
	wg.Wait()
	if err != nil {
		t.Fatalf("reading the answer to the slow body: %v", err)
	}
	answer, _ := io.ReadAll(r.Body)
	r.Body.Close()
	if r.StatusCode != http.StatusRequestTimeout {
		t.Errorf("slow body: status %d %q, want 408", r.StatusCode, answer)
	}
	if elapsed < grace || elapsed > grace+tolerance {
		t.Errorf("slow body: answered after %v, want within [%v, %v]", elapsed, grace, grace+tolerance)
	}
	rest, err := io.ReadAll(br)
	if len(rest) > 0 || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("after the 408 the connection carried %q (%v); want it closed", firstLine(rest), err)
	}
	be.neverSaw(t, "/smuggled")
}

// TestSlowBodyBoundOff: a negative pace turns the bound off; a body as
// slow as in TestSlowRequestBody then reaches the backend whole.
func TestSlowBodyBoundOff(t *testing.T) {
	be := startBackend(t, "b")
	addr := limitsGateway(t, dataplane.Limits{MinRequestBodyRate: -1, RequestBodyGrace: 100 * time.Millisecond}, be.ref())
	pr, pw := io.Pipe()
	go func() {
		tick := time.NewTicker(50 * time.Millisecond) // the client's pace
		defer tick.Stop()
		for range 10 {
			<-tick.C
			pw.Write([]byte("x"))
		}
		pw.Close()
	}()
	req := mustRequest(t, http.MethodPost, "http://"+addr+"/slow", "")
	req.Body, req.ContentLength = pr, 10
	resp, body := do(t, req)
	if e := decode(t, resp, body); e.Body != "xxxxxxxxxx" {
		t.Errorf("the backend got %q", e.Body)
	}
}

// TestTooManyHeaders: a request with more header fields than the limit
// (Host included) is answered 431 and reaches no backend; one at the
// limit passes.
func TestTooManyHeaders(t *testing.T) {
	be := startBackend(t, "b")
	addr := limitsGateway(t, dataplane.Limits{}, be.ref())
	for _, n := range []int{dataplane.DefaultMaxRequestHeaders, dataplane.DefaultMaxRequestHeaders + 1} {
		var h strings.Builder
		for i := range n - 1 { // and Host
			fmt.Fprintf(&h, "X-H%d: v\r\n", i)
		}
		c := dialGateway(t, addr)
		fmt.Fprintf(c, "GET /h%d HTTP/1.1\r\nHost: gw.test\r\n%s\r\n", n, h.String())
		c.SetReadDeadline(time.Now().Add(20 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("%d fields: %v", n, err)
		}
		body, _ := io.ReadAll(resp.Body)
		c.Close()
		want := http.StatusOK
		if n > dataplane.DefaultMaxRequestHeaders {
			want = http.StatusRequestHeaderFieldsTooLarge
		}
		if resp.StatusCode != want {
			t.Errorf("%d fields: status %d %q, want %d", n, resp.StatusCode, body, want)
		}
	}
	if got := be.paths(); len(got) != 1 || got[0] != fmt.Sprintf("/h%d", dataplane.DefaultMaxRequestHeaders) {
		t.Errorf("the backend saw %q; want only the request at the limit", got)
	}
}

// TestBackendConcurrencyCap: with a cap of 2, two requests the backend
// holds are in flight; a third, after a new snapshot, is answered 503 at
// once and never reaches the backend; once the two are done, requests
// pass again.
func TestBackendConcurrencyCap(t *testing.T) {
	release := make(chan struct{})
	arrived := make(chan string, 10)
	addr := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- r.URL.Path
		if r.URL.Path == "/hold" {
			<-release
		}
	}))
	ref := ir.Backend{Name: "default/capped:8080", Weight: 1, Endpoints: []string{addr}}
	cfg := func() *ir.Config {
		return oneListener(route("r", 0, nil, rule([]gwv1.HTTPRouteMatch{pathMatch(gwv1.PathMatchPathPrefix, "/")}, ref)))
	}
	s := dataplane.New(dataplane.Options{Limits: dataplane.Limits{MaxBackendRequests: 2}})
	t.Cleanup(func() { s.Close() })
	if err := s.Apply(cfg()); err != nil {
		t.Fatal(err)
	}
	gw := mustAddr(t, s, 80)
	client := &http.Client{Timeout: 20 * time.Second}
	var wg sync.WaitGroup
	statuses := make(chan int, 2)
	for range 2 {
		wg.Go(func() {
			resp, err := client.Get("http://" + gw + "/hold")
			if err != nil {
				t.Errorf("held request: %v", err)
				return
			}
			resp.Body.Close()
			statuses <- resp.StatusCode
		})
	}
	for range 2 {
		select {
		case <-arrived:
		case <-time.After(20 * time.Second):
			close(release)
			t.Fatal("the two held requests did not reach the backend")
		}
	}
	// A new snapshot naming the same backend keeps counting the requests
	// the old one let in.
	if err := s.Apply(cfg()); err != nil {
		close(release)
		t.Fatal(err)
	}
	resp, err := client.Get("http://" + gw + "/third")
	if err != nil {
		close(release)
		t.Fatalf("third request: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("third request: status %d %q, want 503", resp.StatusCode, body)
	}
	close(release)
	wg.Wait()
	close(statuses)
	for s := range statuses {
		if s != http.StatusOK {
			t.Errorf("held request: status %d, want 200", s)
		}
	}
	select {
	case p := <-arrived:
		if p == "/third" {
			t.Errorf("the request over the cap reached the backend")
		}
	default:
	}
	resp, err = client.Get("http://" + gw + "/after")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("after the held requests: status %d, want 200", resp.StatusCode)
	}
}

func mustRequest(t *testing.T, method, url, body string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Host = "gw.test"
	return req
}

// TestGRPCTooManyHeaders: a gRPC call with more metadata entries than
// the header-field limit fails RESOURCE_EXHAUSTED at the gateway; one with
// a few passes.
func TestGRPCTooManyHeaders(t *testing.T) {
	addr, _, _ := grpcGateway(t)
	client := testpb.NewTestServiceClient(dialGRPC(t, addr, "grpc.example.com"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, n := range []int{5, dataplane.DefaultMaxRequestHeaders + 1} {
		kv := make([]string, 0, 2*n)
		for i := range n {
			kv = append(kv, fmt.Sprintf("x-m%d", i), "v")
		}
		_, err := client.EmptyCall(metadata.AppendToOutgoingContext(ctx, kv...), &testpb.Empty{})
		want := codes.OK
		if n > dataplane.DefaultMaxRequestHeaders {
			want = codes.ResourceExhausted
		}
		if got := status.Code(err); got != want {
			t.Errorf("%d metadata entries: %v, want %v", n, err, want)
		}
	}
}
