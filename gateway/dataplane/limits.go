package dataplane

// The gateway's own bounds on what one request may take of it, whatever
// its routes say: header fields, a request body's pace, and requests in
// flight to one backend. docs/semantics/request-limits.md gives each
// default and compares it with Envoy's, nginx's and HAProxy's.

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gatewitness/gatewitness/gateway/dataplane/internal/h2guard"
)

// Limits are the gateway's own bounds on a request. A zero field takes
// its default (the Default... constants); a negative one turns the bound
// off.
type Limits struct {
	// MaxRequestHeaders is the most header fields a request may carry,
	// Host included (each field line counts, so two "Accept" lines are
	// two). A request with more is answered 431 (gRPC: RESOURCE_EXHAUSTED)
	// and reaches no backend.
	MaxRequestHeaders int
	// MaxRequestHeaderBytes bounds the bytes of a request's header block
	// (http.Server.MaxHeaderBytes; more: 431). Negative leaves net/http's
	// own default, also 1 MiB.
	MaxRequestHeaderBytes int
	// RequestHeaderTimeout bounds the wait for a request's headers, and
	// IdleConnectionTimeout the wait for the next request on a kept-alive
	// connection, where the Gateway's Client timeout sets neither
	// (conntimeouts.go); negative: no bound.
	RequestHeaderTimeout  time.Duration
	IdleConnectionTimeout time.Duration
	// MinRequestBodyRate, in bytes a second, and RequestBodyGrace bound a
	// slow request body: the body (which starts at the end of the request
	// headers) gets RequestBodyGrace as a head start, and must then keep
	// up with MinRequestBodyRate: by RequestBodyGrace + t, at least
	// MinRequestBodyRate × t bytes. A slower body is answered 408 and, on
	// HTTP/1.1, its connection closed. gRPC requests are exempt: a client
	// stream may rightly wait between messages, and GEP-3139's limits
	// bound the call.
	MinRequestBodyRate int64
	RequestBodyGrace   time.Duration
	// MaxBackendRequests is the most requests in flight to one backend
	// (a Service port) at once, from all clients together. A request
	// beyond it is answered 503 (gRPC: UNAVAILABLE) at once and reaches no
	// backend. A request counts while the backend works for it, not while
	// the gateway waits on its client: see WriteStallFreesSlot.
	MaxBackendRequests int
	// WriteStallFreesSlot is how long a response write may wait on the
	// client (an HTTP/2 stream without flow-control window, an HTTP/1.1
	// client that stopped reading) before its request stops counting
	// against MaxBackendRequests: from then on the backend waits on that
	// client, and the slot goes to someone else. The request goes on,
	// bounded by ResponseWriteTimeout.
	WriteStallFreesSlot time.Duration
	// ResponseWriteTimeout bounds a response write that makes no
	// progress: when a write to the client has not completed this long
	// after it started (give or take a sixteenth, the deadline being
	// moved at most that often), the HTTP/2 stream is reset or the
	// HTTP/1.1 connection closed. nginx's send_timeout (60 s) is the
	// anchor; Envoy's stream_idle_timeout (5 min) bounds the same stall.
	ResponseWriteTimeout time.Duration
	// MaxTunnels is the most upgraded connections (WebSocket) open
	// through the gateway at once. A tunnel holds no request slot once
	// the backend has switched protocols; an upgrade beyond the limit is
	// answered 503 and its backend connection closed.
	MaxTunnels int
	// TunnelIdleTimeout closes a tunnel silent both ways for this long
	// when the Gateway's connection timeouts (Tunnel, Client, Server) set
	// no idle limit of their own. HAProxy's "timeout tunnel" of 1 h in
	// its documentation's examples is the anchor (nginx closes one at its
	// proxy_read_timeout, 60 s).
	TunnelIdleTimeout time.Duration
	// IdleFrameBurst and IdleFrameRate bound the HTTP/2 frames a client
	// sends that do no work (SETTINGS, PING, WINDOW_UPDATE, PRIORITY,
	// RST_STREAM, DATA and CONTINUATION without payload): per connection,
	// at most IdleFrameBurst at once and IdleFrameRate a second after
	// that, plus 4 for each DATA frame and 1 for each HEADERS frame the
	// gateway sends (a client rightly answers those with window updates
	// and resets). Beyond it the connection ends with GOAWAY
	// ENHANCE_YOUR_CALM (internal/h2guard).
	IdleFrameBurst int
	IdleFrameRate  int
}

// The defaults of Limits.
const (
	DefaultMaxRequestHeaders     = 100
	DefaultMaxRequestHeaderBytes = 1 << 20
	DefaultRequestHeaderTimeout  = 30 * time.Second
	DefaultIdleConnectionTimeout = 2 * time.Minute
	DefaultMinRequestBodyRate    = 1024 // bytes a second
	DefaultRequestBodyGrace      = 10 * time.Second
	DefaultMaxBackendRequests    = 1024
	DefaultWriteStallFreesSlot   = time.Second
	DefaultResponseWriteTimeout  = 60 * time.Second
	DefaultMaxTunnels            = 1024
	DefaultTunnelIdleTimeout     = time.Hour
	DefaultIdleFrameBurst        = 1000
	DefaultIdleFrameRate         = 100 // frames a second
)

// withDefaults returns l with every zero field set to its default and
// every negative one to zero (off).
func (l Limits) withDefaults() Limits {
	l.MaxRequestHeaders = orDefault(l.MaxRequestHeaders, DefaultMaxRequestHeaders)
	l.MaxRequestHeaderBytes = orDefault(l.MaxRequestHeaderBytes, DefaultMaxRequestHeaderBytes)
	l.RequestHeaderTimeout = orDefault(l.RequestHeaderTimeout, DefaultRequestHeaderTimeout)
	l.IdleConnectionTimeout = orDefault(l.IdleConnectionTimeout, DefaultIdleConnectionTimeout)
	l.MinRequestBodyRate = orDefault(l.MinRequestBodyRate, DefaultMinRequestBodyRate)
	l.RequestBodyGrace = orDefault(l.RequestBodyGrace, DefaultRequestBodyGrace)
	l.MaxBackendRequests = orDefault(l.MaxBackendRequests, DefaultMaxBackendRequests)
	l.WriteStallFreesSlot = orDefault(l.WriteStallFreesSlot, DefaultWriteStallFreesSlot)
	l.ResponseWriteTimeout = orDefault(l.ResponseWriteTimeout, DefaultResponseWriteTimeout)
	l.MaxTunnels = orDefault(l.MaxTunnels, DefaultMaxTunnels)
	l.TunnelIdleTimeout = orDefault(l.TunnelIdleTimeout, DefaultTunnelIdleTimeout)
	l.IdleFrameBurst = orDefault(l.IdleFrameBurst, DefaultIdleFrameBurst)
	l.IdleFrameRate = orDefault(l.IdleFrameRate, DefaultIdleFrameRate)
	return l
}

// frameGuard returns the HTTP/2 frame guard's limits; a zero Burst turns
// the guard off.
func (l Limits) frameGuard() h2guard.Limits {
	return h2guard.Limits{Burst: l.IdleFrameBurst, Rate: l.IdleFrameRate}
}

func orDefault[T int | int64 | time.Duration](v, def T) T {
	switch {
	case v == 0:
		return def
	case v < 0:
		return 0
	}
	return v
}

// grpcResourceExhausted is the gRPC status of a request over a limit.
const grpcResourceExhausted = 8

// headerFields counts r's header field lines, Host included.
func headerFields(r *http.Request) int {
	n := 0
	if r.Host != "" {
		n++
	}
	for _, vv := range r.Header {
		n += len(vv)
	}
	return n
}

// checkHeaderCount answers 431 and returns false when r has more header
// fields than the limit allows.
func (s *Server) checkHeaderCount(w http.ResponseWriter, r *http.Request, grpc bool) bool {
	max := s.limits.MaxRequestHeaders
	if max <= 0 {
		return true
	}
	if n := headerFields(r); n > max {
		s.fail(w, grpc, http.StatusRequestHeaderFieldsTooLarge, grpcResourceExhausted,
			fmt.Sprintf("the request has %d header fields; at most %d are accepted", n, max))
		return false
	}
	return true
}

// closeAfterResponse makes net/http close an HTTP/1.1 connection once the
// response to its current request is written, even when the response
// has started: the bytes after this request cannot be trusted to be the
// start of the next one. http.MaxBytesReader, once its limit is passed,
// tells the server just that (its documented purpose), and is the only
// way to ask it without hijacking the connection; an empty limit passes
// at the first byte.
func closeAfterResponse(w http.ResponseWriter) {
	var one [1]byte
	// MaxBytesReader looks for net/http's own writer, not through wrappers.
	_, _ = http.MaxBytesReader(unwrapped(w), io.NopCloser(strings.NewReader("x")), 0).Read(one[:])
}

// requestBody wraps a request body that the gateway reads itself (while
// it streams it to a backend) with the bounds of the client's side:
//
//   - the client timeout (the Gateway's connection timeouts): the client
//     may be silent for at most idle between reads;
//   - the pace (Limits.MinRequestBodyRate after Limits.RequestBodyGrace);
//   - on HTTP/1.1, the connection is closed after the response unless the
//     body was read to its end: a body that failed (broken chunk framing,
//     too slow) or was left unread leaves bytes on the connection that
//     must not be read as the next request. net/http does this itself
//     unless full duplex is on, which runRule turns on.
//
// Both time bounds are the connection's (HTTP/1.1) or stream's (HTTP/2)
// read deadline, moved before each read; it is cleared at the end of the
// body.
type requestBody struct {
	body   io.ReadCloser
	w      http.ResponseWriter
	rc     *http.ResponseController
	h1     bool
	idle   time.Duration // 0: no client timeout
	rate   int64         // bytes a second; 0: no pace bound
	grace  time.Duration
	paceAt time.Time // when the pace bound starts: the body's start + grace
	read   int64
	eof    bool
	slow   bool // the pace deadline was the one set for the read that failed

	// mu guards eof (once set) and err: the transport reads the body on
	// a goroutine of its own, which may outlive the handler.
	mu  sync.Mutex
	err error // the first read error, other than the end
}

// failure returns the first read error of the body, other than its end;
// nil for a nil body.
func (b *requestBody) failure() error {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}

// guardRequestBody returns body, r's body as it goes upstream, wrapped as
// requestBody says, or body itself when no bound applies. A gRPC request
// is exempt from the pace bound.
func (s *Server) guardRequestBody(w http.ResponseWriter, r *http.Request, body io.ReadCloser) (io.ReadCloser, *requestBody) {
	if body == nil || body == http.NoBody {
		return body, nil
	}
	b := &requestBody{body: body, w: w, h1: r.ProtoMajor == 1, idle: connectionTimeouts(r.Context()).Client}
	if s.limits.MinRequestBodyRate > 0 && !isGRPC(r) {
		b.rate, b.grace = s.limits.MinRequestBodyRate, s.limits.RequestBodyGrace
		b.paceAt = time.Now().Add(b.grace)
	}
	if !b.h1 && b.idle <= 0 && b.rate <= 0 {
		return body, nil
	}
	if b.idle > 0 || b.rate > 0 {
		b.rc = http.NewResponseController(w)
	}
	return b, b
}

func (b *requestBody) Read(p []byte) (int, error) {
	if b.rc != nil && !b.eof {
		_ = b.rc.SetReadDeadline(b.deadline())
	}
	n, err := b.body.Read(p)
	b.read += int64(n)
	switch {
	case err == io.EOF:
		b.mu.Lock()
		b.eof = true
		b.mu.Unlock()
		if b.rc != nil {
			_ = b.rc.SetReadDeadline(time.Time{})
		}
	case err != nil:
		if b.slow && errors.Is(err, os.ErrDeadlineExceeded) {
			err = &slowBodyError{err: err, rate: b.rate, grace: b.grace, read: b.read}
		}
		b.mu.Lock()
		if b.err == nil {
			b.err = err
		}
		b.mu.Unlock()
	}
	return n, err
}

// deadline is the earlier of the client timeout from now and the moment
// the body falls below the pace it must keep; it notes which it is.
func (b *requestBody) deadline() time.Time {
	var d time.Time
	if b.idle > 0 {
		d = time.Now().Add(b.idle)
	}
	b.slow = false
	if b.rate > 0 {
		// By paceAt + t, rate*t bytes are due; read of them have come,
		// so the next byte is due by paceAt + read/rate.
		pace := b.paceAt.Add(time.Duration(float64(b.read) / float64(b.rate) * float64(time.Second)))
		if d.IsZero() || pace.Before(d) {
			d, b.slow = pace, true
		}
	}
	return d
}

func (b *requestBody) Close() error { return b.body.Close() }

// finish is called when the handler is done with the request: an
// HTTP/1.1 connection whose request body was not read to its end is
// closed after the response.
func (b *requestBody) finish() {
	if b == nil || !b.h1 {
		return
	}
	b.mu.Lock()
	eof := b.eof
	b.mu.Unlock()
	if !eof {
		closeAfterResponse(b.w)
	}
}

// slowBodyError is a request body read that failed because the body came
// slower than the pace bound.
type slowBodyError struct {
	err   error
	rate  int64
	grace time.Duration
	read  int64
}

func (e *slowBodyError) Error() string {
	return fmt.Sprintf("the request body came slower than %d bytes a second after its first %v (%d bytes in all)", e.rate, e.grace, e.read)
}
func (e *slowBodyError) Unwrap() error { return e.err }

// backendLoad holds the counters of requests in flight to each backend,
// by name, across snapshots: a request keeps its counter when a snapshot
// replaces the one it started with, and a backend that stays gets the
// same counter in the new snapshot. The Server's lock guards it.
type backendLoad struct {
	counts map[string]*atomic.Int64
}

// attach gives every backend of snap's routes its counter, and forgets the
// counters of backends snap no longer has (a request in flight to one
// still releases its own).
func (l *backendLoad) attach(snap *snapshot) {
	old := l.counts
	l.counts = make(map[string]*atomic.Int64)
	give := func(a *action) {
		for _, b := range a.backends {
			c := l.counts[b.name]
			if c == nil {
				if c = old[b.name]; c == nil {
					c = new(atomic.Int64)
				}
				l.counts[b.name] = c
			}
			b.inflight = c
		}
	}
	for _, pt := range snap.ports {
		for _, lt := range pt.listeners {
			for _, e := range lt.http {
				give(e.action)
			}
			for _, e := range lt.grpc {
				give(e.action)
			}
		}
	}
}

// backendSlot is a request's place among the requests in flight to one
// backend. It is given back once: when the request ends, or earlier when
// a response write stalls (clientWriter).
type backendSlot struct {
	count *atomic.Int64 // nil: no slot held
	freed atomic.Bool
}

// acquire takes a slot of b for the request, unless max are in flight
// already (max 0: no limit, and no slot is held). The caller calls
// release when the request is done.
func (sl *backendSlot) acquire(b *backend, max int) bool {
	if max <= 0 || b.inflight == nil {
		return true
	}
	if b.inflight.Add(1) > int64(max) {
		b.inflight.Add(-1)
		return false
	}
	sl.count = b.inflight
	return true
}

// release gives the slot back; later calls do nothing.
func (sl *backendSlot) release() {
	if sl.count != nil && sl.freed.CompareAndSwap(false, true) {
		sl.count.Add(-1)
	}
}

// overloaded answers a request that a backend's cap turned away.
func (s *Server) overloaded(w http.ResponseWriter, grpc bool, b *backend) {
	s.fail(w, grpc, http.StatusServiceUnavailable, grpcUnavailable,
		fmt.Sprintf("backend %s has %d requests in flight, the most the gateway sends it at once", b.name, s.limits.MaxBackendRequests))
}
