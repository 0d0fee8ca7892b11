// Package part names the parts the reference data plane is built from, in
// the manner of net/http/httputil.ReverseProxy's Rewrite, Transport,
// ModifyResponse and ErrorHandler: how it retries (Retries), how it relays
// a response, a stream or a tunnel and ends one whose backend failed
// (Relay), how it times a request (Timer), how it sends a request upstream
// (Transport), how it bounds a gRPC call (Calls), and what it does when it
// is handed a configuration (Reload).
//
// The data plane's own parts (gateway/dataplane, parts.go) are the
// behaviour it specifies; its request path calls them and asks nothing
// else. A data plane broken on purpose is the same code with a part
// replaced or wrapped at construction (gateway/dataplane/internal/breakage,
// through package dataplanetest). The package is internal so that only
// the data plane and its test packages can name a part.
package part

import (
	"context"
	"io"
	"net"
	"net/http"
	"time"
)

// Parts are the parts of one data plane. Every field is set: the data
// plane's constructor hands its own parts to whoever builds a broken one,
// who returns them replaced or wrapped.
type Parts struct {
	Retries   Retries
	Relay     Relay
	Timer     Timer
	Transport Transport
	Calls     Calls
	Reload    Reload
}

// Retries is how an HTTPRoute request is retried (GEP-1731): which
// attempts it may make, where each goes, which failures are retried, and
// how a refusal of the retry budget is answered.
type Retries interface {
	// Attempts returns the most attempts a request with this method may
	// make when its route allows max.
	Attempts(method string, max int) int
	// Endpoint returns the round-robin position of attempt n (from 1) of
	// a request whose first attempt took position first.
	Endpoint(first uint64, n int) uint64
	// RetriesError reports whether an attempt that failed with err before
	// any response header, not by timeouts.backendRequest, may be retried.
	RetriesError(err error) bool
	// BudgetRefused says how a request whose retry the retry budget
	// refused is answered.
	BudgetRefused() Refusal
	// Hold keeps out's body (of at most limit bytes) so that it can be
	// sent again. It returns the body of the first attempt (nil: out's
	// own) and what gives the later ones theirs; ok is false when the
	// body cannot be kept, and the request is then not retried.
	Hold(out *http.Request, limit int64) (first []byte, later Held, ok bool)
}

// Held gives the body of a request's attempts after the first.
type Held interface {
	// Replay returns the body to send again, given the first attempt's
	// (from Hold), or false when it was not kept (the request is then
	// not retried).
	Replay(first []byte) ([]byte, bool)
}

// Refusal is how a request whose retry the retry budget refused is
// answered.
type Refusal int

// The answers to a refused retry.
const (
	// RefuseUnavailable answers 503 (GEP-3388: "After the retry budget
	// has been exceeded, additional retries to the backend MUST return a
	// 503 response to the client.").
	RefuseUnavailable Refusal = iota
	// RefuseWithAttempt relays the failed attempt's own answer.
	RefuseWithAttempt
)

// Relay is how a response, a gRPC stream or an upgraded tunnel is relayed
// to the client, and how one whose backend failed mid-way ends.
type Relay interface {
	// Framing is called with the header about to be sent for a response
	// whose body streams (no Content-Length) or not; it returns whether
	// the body is relayed as a stream, flushed as it arrives.
	Framing(h http.Header, stream bool) bool
	// Body returns the response body the relay reads (HTTP and gRPC).
	Body(body io.ReadCloser) io.ReadCloser
	// Aborted ends an HTTP response whose relay failed after it started;
	// backendFailed says the backend, not the gateway's own timeouts or
	// the client, ended it. It may return (the response is then ended as
	// it stands) or panic with http.ErrAbortHandler.
	Aborted(w http.ResponseWriter, backendFailed bool)
	// GRPCAborted is Aborted for a gRPC response; h is its header, where
	// trailers may still be set.
	GRPCAborted(w http.ResponseWriter, h http.Header, backendFailed bool)
	// HalfClose passes a tunnel side's half-close on to the other side's
	// connection to; fromBackend says the backend half-closed. False: it
	// was not passed on, and both connections are closed.
	HalfClose(to net.Conn, fromBackend bool) bool
	// GRPCEndedEarly ends a gRPC call that its budget or its backend ended
	// before any response header was sent, whose status is code and msg.
	// It may panic with http.ErrAbortHandler.
	GRPCEndedEarly(w http.ResponseWriter, code int, msg string)
	// Conn returns the connection a client is served on, given c as
	// accepted (decrypted, on an HTTPS socket).
	Conn(c net.Conn) net.Conn
}

// Timer is how a request's timeouts are kept: timeouts.request,
// timeouts.backendRequest and a gRPC call's budget.
type Timer interface {
	// Bound returns ctx ended with cause d after start.
	Bound(ctx context.Context, start time.Time, d time.Duration, cause error) (context.Context, context.CancelFunc)
	// Watch returns a response body read under a context Bound returned
	// (or one derived from it), wrapped as the timer needs to see it.
	Watch(ctx context.Context, body io.ReadCloser) io.ReadCloser
	// Passed reports whether a bound set to end at deadline has ended
	// by the clock, whatever its context's timer says yet.
	Passed(deadline time.Time) bool
}

// Transport sends requests upstream.
type Transport interface {
	// RoundTrip sends req (h2c: over cleartext HTTP/2 with prior
	// knowledge) and returns the response unread.
	RoundTrip(req *http.Request, h2c bool) (*http.Response, error)
	// ForbidResend is called on each attempt a retry policy makes, before
	// RoundTrip: it stops the transport from sending req again by itself
	// (h2: over HTTP/2), so that every attempt a backend sees is one the
	// policy made.
	ForbidResend(req *http.Request, h2 bool)
}

// Calls is how a GRPCRoute call's budget is chosen, told to the backend
// and ended (GEP-3139).
type Calls interface {
	// Budget chooses a call's budget from the route's limit (route; zero:
	// none; deny: StrictEnforcement Deny) and the client's grpc-timeout
	// (client, when hasClient).
	Budget(route time.Duration, deny bool, client time.Duration, hasClient bool) (time.Duration, BudgetSource)
	// Tell sets out's grpc-timeout, the request going upstream, from
	// received (the client's header) and the call's remaining budget
	// (when bounded). False: nothing remains, and the call expires.
	Tell(out, received http.Header, remaining time.Duration, bounded bool) bool
	// ExpiryCode is the grpc-status a call whose budget ran out ends with.
	ExpiryCode() int
}

// BudgetSource says where a gRPC call's budget comes from.
type BudgetSource int

// The sources of a call's budget.
const (
	BudgetNone   BudgetSource = iota // no limit at all
	BudgetRoute                      // the rule's maxStreamDuration
	BudgetClient                     // the client's grpc-timeout
)

func (s BudgetSource) String() string {
	switch s {
	case BudgetRoute:
		return "the route's maxStreamDuration"
	case BudgetClient:
		return "the client's grpc-timeout"
	}
	return "no limit"
}

// Reload is what the data plane does to the connections it holds when it
// is handed a configuration.
type Reload interface {
	// Applied is called once each configuration is in place.
	Applied()
	// ConnState returns the http.Server ConnState hook of a socket whose
	// client timeout is client (nil: none).
	ConnState(client time.Duration) func(net.Conn, http.ConnState)
	// Tunnel registers restart, which restarts an open tunnel's
	// inactivity limits, and returns its removal.
	Tunnel(restart func()) (remove func())
}
