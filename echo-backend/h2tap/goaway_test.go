package h2tap_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/onsi/gomega"
	"golang.org/x/net/http2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/gatewitness/gatewitness/echo-backend/h2tap"
)

// slowBody is what a held stream answers once released: more than the
// client's initial windows, so the stream needs the client's
// WINDOW_UPDATEs after GOAWAY.
var slowBody = bytes.Repeat([]byte("0123456789abcdef"), 200<<10/16)

// goAwayHandler serves /slow, which sends its headers, reports on arrived
// and answers slowBody once release is closed, and /goaway, whose first
// request sends GOAWAY excluding its own stream and whose later requests
// answer with their stream tag.
type goAwayHandler struct {
	t       *testing.T
	arrived chan string // the tag of each /slow request
	release chan struct{}
	goaways atomic.Int32
}

func newGoAwayHandler(t *testing.T) *goAwayHandler {
	return &goAwayHandler{t: t, arrived: make(chan string, 1), release: make(chan struct{})}
}

func (h *goAwayHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	tag := r.Header.Get(h2tap.StreamHeader)
	switch r.URL.Path {
	case "/slow":
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		h.arrived <- tag
		select {
		case <-h.release:
		case <-r.Context().Done():
			return
		}
		w.Write(slowBody)
	case "/goaway":
		if h.goaways.Add(1) > 1 {
			io.WriteString(w, tag)
			return
		}
		connID, streamID, _ := h2tap.ParseStreamHeader(tag)
		c, ok := h2tap.Lookup(connID)
		if !ok {
			h.t.Errorf("no connection %d", connID)
			return
		}
		if err := c.GoAway(streamID-2, uint32(http2.ErrCodeNo)); err != nil {
			h.t.Errorf("GoAway: %v", err)
		}
		io.WriteString(w, "dropped")
	}
}

// slowGet starts GET /slow and returns its tag once the handler holds it,
// and a channel with its body (or error) once it completes.
func slowGet(t *testing.T, rt http.RoundTripper, base string, h *goAwayHandler) (string, <-chan string) {
	t.Helper()
	done := make(chan string, 1)
	go func() {
		res, err := doGet(t, rt, base+"/slow", nil)
		if err != nil {
			done <- "error: " + err.Error()
			return
		}
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		if err != nil {
			done <- fmt.Sprintf("error after %d bytes of the body: %v", len(b), err)
			return
		}
		done <- string(b)
	}()
	select {
	case tag := <-h.arrived:
		return tag, done
	case s := <-done:
		t.Fatalf("/slow ended before the handler held it: %.100s", s)
	case <-time.After(testTimeout):
		t.Fatal("timed out waiting for /slow to reach the handler")
	}
	return "", nil
}

// checkSlowBody wants done to deliver slowBody in full.
func checkSlowBody(t *testing.T, done <-chan string) {
	t.Helper()
	select {
	case got := <-done:
		if got != string(slowBody) {
			t.Errorf("the lower stream got %d bytes (%.120q), want its full body of %d bytes", len(got), got, len(slowBody))
		}
	case <-time.After(testTimeout):
		t.Fatal("timed out waiting for the lower stream to complete")
	}
}

// connGone waits until the tapped connection named by tag has closed.
func connGone(t *testing.T, tag string) {
	t.Helper()
	connID, _, ok := h2tap.ParseStreamHeader(tag)
	if !ok {
		t.Fatalf("bad tag %q", tag)
	}
	gomega.NewWithT(t).Eventually(func() bool {
		_, open := h2tap.Lookup(connID)
		return open
	}).WithTimeout(testTimeout).Should(gomega.BeFalse(), "the tapped connection still looked up")
}

// GOAWAY on stream 3 while stream 1 is in flight on the same connection:
// stream 1 completes with its whole body (RFC 9113, section 6.8), stream 3
// fails on this connection, and the connection closes afterwards.
func TestGoAwayLetsLowerStreamsComplete(t *testing.T) {
	cert, roots := testCert(t)
	for _, tc := range []struct {
		name string
		dial func(t *testing.T, h http.Handler) *http2.ClientConn
	}{
		{"h2c", func(t *testing.T, h http.Handler) *http2.ClientConn { return dialH2C(t, serveH2C(t, h)) }},
		{"tls", func(t *testing.T, h http.Handler) *http2.ClientConn { return dialTLS(t, serveTLS(t, h, cert), roots) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newGoAwayHandler(t)
			cc := tc.dial(t, h)
			tag, done := slowGet(t, cc, "https://tap.test", h)
			if !strings.HasSuffix(tag, "/1") {
				t.Fatalf("/slow tag %q, want stream 1", tag)
			}
			res, err := doGet(t, cc, "https://tap.test/goaway", nil)
			if err == nil {
				t.Fatalf("/goaway answered %q on the connection that sent GOAWAY excluding it", readBody(t, res))
			}
			close(h.release)
			checkSlowBody(t, done)
			connGone(t, tag)
		})
	}
}

// Go's pooled transport retries the request GOAWAY excluded on a new
// connection, while the lower stream completes on the old one.
func TestGoAwayRetryBesideLowerStream(t *testing.T) {
	h := newGoAwayHandler(t)
	addr := serveH2C(t, h)
	tr := &http2.Transport{
		AllowHTTP: true,
		DialTLSContext: func(ctx context.Context, network, addr string, _ *tls.Config) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		},
	}
	t.Cleanup(tr.CloseIdleConnections)
	slowTag, done := slowGet(t, tr, "http://"+addr, h)
	res, err := doGet(t, tr, "http://"+addr+"/goaway", nil)
	if err != nil {
		t.Fatalf("/goaway: %v, want it retried", err)
	}
	retryTag := readBody(t, res)
	if n := h.goaways.Load(); n != 2 {
		t.Errorf("/goaway handled %d times, want 2 (GOAWAY, then the retry)", n)
	}
	slowConn, _, _ := h2tap.ParseStreamHeader(slowTag)
	retryConn, _, ok := h2tap.ParseStreamHeader(retryTag)
	if !ok || retryConn == slowConn {
		t.Errorf("retry tag %q, want a connection other than /slow's (%q)", retryTag, slowTag)
	}
	close(h.release)
	checkSlowBody(t, done)
	connGone(t, slowTag)
}

// goAwayHealth's Watch("hold") sends SERVING, waits for release, sends
// NOT_SERVING and ends; its first Check sends GOAWAY excluding its own
// stream, and later Checks answer SERVING with their tag in header x-tag.
type goAwayHealth struct {
	healthpb.UnimplementedHealthServer
	t       *testing.T
	holding chan string
	release chan struct{}
	checks  atomic.Int32
}

func (s *goAwayHealth) Watch(req *healthpb.HealthCheckRequest, ss grpc.ServerStreamingServer[healthpb.HealthCheckResponse]) error {
	md, _ := metadata.FromIncomingContext(ss.Context())
	if err := ss.Send(&healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}); err != nil {
		return err
	}
	s.holding <- strings.Join(md.Get(h2tap.StreamHeader), ",")
	select {
	case <-s.release:
	case <-ss.Context().Done():
		return ss.Context().Err()
	}
	return ss.Send(&healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_NOT_SERVING})
}

func (s *goAwayHealth) Check(ctx context.Context, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	tag := strings.Join(md.Get(h2tap.StreamHeader), ",")
	if s.checks.Add(1) > 1 {
		grpc.SetHeader(ctx, metadata.Pairs("x-tag", tag))
		return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
	}
	connID, streamID, _ := h2tap.ParseStreamHeader(tag)
	c, ok := h2tap.Lookup(connID)
	if !ok {
		return nil, status.Errorf(codes.FailedPrecondition, "no connection for tag %q", tag)
	}
	if err := c.GoAway(streamID-2, uint32(http2.ErrCodeNo)); err != nil {
		s.t.Errorf("GoAway: %v", err)
	}
	return nil, status.Error(codes.Unavailable, "dropped")
}

// grpc-go: a server-streaming call in flight completes after GOAWAY
// excluded a later call on the same connection, and the later call is
// retried transparently on a new connection.
func TestGoAwayGRPCLowerStreamCompletes(t *testing.T) {
	ln := listen(t)
	hs := &goAwayHealth{t: t, holding: make(chan string, 1), release: make(chan struct{})}
	srv := grpc.NewServer(grpc.Creds(h2tap.Credentials(insecure.NewCredentials())))
	healthpb.RegisterHealthServer(srv, hs)
	go srv.Serve(ln)
	t.Cleanup(srv.Stop)
	client := dialGRPC(t, ln.Addr().String(), insecure.NewCredentials())

	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	ws, err := client.Watch(ctx, &healthpb.HealthCheckRequest{Service: "hold"})
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	if m, err := ws.Recv(); err != nil || m.Status != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("Watch: first message %v, %v; want SERVING", m, err)
	}
	var watchTag string
	select {
	case watchTag = <-hs.holding:
	case <-ctx.Done():
		t.Fatal("timed out waiting for Watch to hold")
	}

	hdr, err := check(t, client, context.Background(), "")
	if err != nil {
		t.Fatalf("Check: %v, want it retried after GOAWAY", err)
	}
	if n := hs.checks.Load(); n != 2 {
		t.Errorf("Check handled %d times, want 2 (GOAWAY, then the retry)", n)
	}
	watchConn, _, _ := h2tap.ParseStreamHeader(watchTag)
	checkConn, _, ok := h2tap.ParseStreamHeader(strings.Join(hdr.Get("x-tag"), ","))
	if !ok || checkConn == watchConn {
		t.Errorf("retried Check tag %q, want a connection other than Watch's (%q)", hdr.Get("x-tag"), watchTag)
	}

	close(hs.release)
	if m, err := ws.Recv(); err != nil || m.Status != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Fatalf("Watch after GOAWAY: %v, %v; want NOT_SERVING", m, err)
	}
	if m, err := ws.Recv(); err != io.EOF {
		t.Fatalf("Watch after GOAWAY: %v, %v; want the end of the stream (OK)", m, err)
	}
	connGone(t, watchTag)
}

// Frame by frame: after GOAWAY(3), stream 5's frames (and the server's own
// GOAWAY) are dropped with the window given back, streams 1 and 3 go on,
// and the connection closes once both have ended, one by the client's
// RST_STREAM.
func TestGoAwayFrames(t *testing.T) {
	tp := newTapPipe(t)
	tp.read()
	tp.open(1)
	tp.open(3)
	tp.open(5)
	if err := tp.tap.GoAway(3, uint32(http2.ErrCodeNo)); err != nil {
		t.Fatalf("GoAway: %v", err)
	}
	if got := tp.next(); got != "GOAWAY 0" {
		t.Fatalf("client got %q, want GOAWAY", got)
	}
	if err := tp.tap.WaitWritten(context.Background(), 5, true, 0); !errors.Is(err, net.ErrClosed) {
		t.Errorf("WaitWritten(5) after GOAWAY(3): %v, want net.ErrClosed", err)
	}
	if err := tp.tap.ResetStream(5, uint32(http2.ErrCodeCancel)); err == nil {
		t.Error("ResetStream(5) after GOAWAY(3): no error")
	}
	lower := tp.waitAsync(3, true, 4)

	tp.headers(5, false, ":status", "200")
	if err := tp.server.WriteData(5, true, []byte("cut")); err != nil {
		t.Fatal(err)
	}
	tp.serverReads("WINDOW_UPDATE 0") // the 3 bytes given back
	if err := tp.server.WriteGoAway(5, http2.ErrCodeNo, nil); err != nil {
		t.Fatal(err)
	}
	tp.headers(3, false, ":status", "200")
	if err := tp.server.WriteData(3, false, []byte("kept")); err != nil {
		t.Fatal(err)
	}
	if err := <-lower; err != nil {
		t.Errorf("WaitWritten(3) after GOAWAY(3): %v", err)
	}
	if err := tp.cfr.WriteRSTStream(1, http2.ErrCodeCancel); err != nil {
		t.Fatal(err)
	}
	tp.serverReads("RST_STREAM 1")
	if err := tp.server.WriteData(3, true, []byte("!")); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`HEADERS 3 :status=200 end=false`, `DATA 3 "kept" end=false`, `DATA 3 "!" end=true`} {
		if got := tp.next(); got != want {
			t.Fatalf("client got %q, want %q", got, want)
		}
	}
	select {
	case got, ok := <-tp.got:
		if ok {
			t.Fatalf("client got %q, want the connection to end", got)
		}
	case <-time.After(testTimeout):
		t.Fatal("the connection is still open after the streams GOAWAY kept have ended")
	}
}

// A stream GOAWAY kept that never ends holds the connection open for the
// grace period only.
func TestGoAwayGracePeriod(t *testing.T) {
	const grace = 300 * time.Millisecond
	t.Cleanup(h2tap.SetGoAwayGrace(grace))
	tp := newTapPipe(t)
	tp.read()
	tp.open(1)
	start := time.Now()
	if err := tp.tap.GoAway(1, uint32(http2.ErrCodeNo)); err != nil {
		t.Fatalf("GoAway: %v", err)
	}
	tp.headers(1, false, ":status", "200")
	for _, want := range []string{"GOAWAY 0", "HEADERS 1 :status=200 end=false"} {
		if got := tp.next(); got != want {
			t.Fatalf("client got %q, want %q", got, want)
		}
	}
	select {
	case got, ok := <-tp.got:
		if ok {
			t.Fatalf("client got %q, want the connection to end", got)
		}
	case <-time.After(testTimeout):
		t.Fatal("the connection is still open long after the grace period")
	}
	if d := time.Since(start); d < grace {
		t.Errorf("the connection closed %v after GOAWAY, before the %v grace period", d, grace)
	}
}
