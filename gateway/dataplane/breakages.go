package dataplane

// Test-only breakages: the ways real data planes go wrong, built into the
// reference data plane so that gatecheck's negative checks can show each
// conformance test fails against the data plane it is meant to catch
// (conformance/tests/breakages_test.go). Nothing outside those checks sets
// them; every knob is off in the zero value.

import (
	"context"
	"io"
	"net/http"
	"slices"
	"time"
)

// Breakages deliberately break the data plane the way real data planes go
// wrong. It is for gatecheck's negative conformance checks only; leave it
// zero. (GRPCTimeoutFaults holds the older, GRPCRoute-specific knobs.)
type Breakages struct {
	// TransportResends lets the upstream transport resend a request by
	// itself, as a plain httputil.ReverseProxy over net/http's transport
	// does: an idempotent request whose reused keep-alive connection fails
	// before a response is sent again on another connection, whatever the
	// route's retry policy says.
	TransportResends bool
	// InactivityTimeouts makes timeouts.request, timeouts.backendRequest
	// and a GRPCRoute call's bound (maxStreamDuration, the client's
	// grpc-timeout) inactivity timers that every byte (or message) of the
	// response restarts, as HAProxy's "timeout server" is; a call's bound
	// is then not propagated in grpc-timeout either. A response that keeps
	// flowing is never cut.
	InactivityTimeouts bool
	// NoNonIdempotentRetries never retries a request whose method is not
	// idempotent (POST, PATCH), as nginx's proxy_next_upstream does by
	// default.
	NoNonIdempotentRetries bool
	// CloseTunnelOnBackendFIN closes both sides of an upgraded HTTP tunnel
	// (WebSocket) at once when the backend half-closes, as HAProxy does in
	// HTTP mode, instead of passing the FIN on and giving the client side
	// the client-fin timeout. TLS passthrough tunnels are left alone.
	CloseTunnelOnBackendFIN bool
	// LateApply makes Apply return at once and the data plane take the
	// snapshot this long later, as a data plane fed asynchronously (xDS, a
	// configuration reload) does: the controller writes Accepted and
	// Programmed before the routes are served.
	LateApply time.Duration
	// RetryBudgetRelaysBackendStatus answers a request whose retry the
	// retry budget refused with the backend's own failed response instead
	// of 503, as Envoy does when its retry budget overflows.
	RetryBudgetRelaysBackendStatus bool
}

// lateApply takes cfg d from now, unless a later snapshot was taken by
// then; snapshots are taken in the order Apply got them.
func (s *Server) lateApply(cfg *Config, d time.Duration) {
	s.lateMu.Lock()
	s.lateSeq++
	seq := s.lateSeq
	s.lateMu.Unlock()
	time.AfterFunc(d, func() {
		s.lateMu.Lock()
		defer s.lateMu.Unlock()
		if seq <= s.lateApplied {
			return
		}
		s.lateApplied = seq
		if err := s.apply(cfg); err != nil {
			s.log.Error(err, "late snapshot (breakage LateApply)")
		}
	})
}

// inactivityKey is the context key of the inactivity timers
// (Breakages.InactivityTimeouts) that bound a request.
type inactivityKey struct{}

// withInactivity returns ctx bounded by an inactivity timer of d that
// cancels it with cause; the timer is restarted by every response read
// that watchInactivity wraps under the returned context.
func withInactivity(ctx context.Context, d time.Duration, cause error) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	it := &idleTimer{d: d, cancel: cancel}
	it.t = time.AfterFunc(d, func() { cancel(cause) })
	timers, _ := ctx.Value(inactivityKey{}).([]*idleTimer)
	ctx = context.WithValue(ctx, inactivityKey{}, append(slices.Clone(timers), it))
	return ctx, func() { it.stop(); cancel(context.Canceled) }
}

// watchInactivity returns body wrapped so that every read that returns
// bytes restarts each inactivity timer of ctx; without timers, body.
func watchInactivity(ctx context.Context, body io.ReadCloser) io.ReadCloser {
	timers, _ := ctx.Value(inactivityKey{}).([]*idleTimer)
	for _, it := range timers {
		body = it.watch(body)
	}
	return body
}

// idempotent reports whether a request with this method may be retried
// when non-idempotent retries are broken off (RFC 9110 section 9.2.2).
func idempotent(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace, http.MethodPut, http.MethodDelete:
		return true
	}
	return false
}
