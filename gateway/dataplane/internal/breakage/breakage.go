// Package breakage holds the ways the reference data plane's own code can be
// broken on purpose, the way real data planes go wrong, for gatewitness's
// negative checks. A broken data plane is the same code with some of its
// parts (internal/part) replaced or wrapped at construction: Set is the
// declarative bag of what to break, and Build turns it into parts. It is
// internal so that production code cannot name it: the only way in is
// package dataplanetest, which re-exports Set as dataplanetest.Hooks and
// builds broken data planes with dataplane.NewBroken, as net/http/httptest
// builds test servers. The zero Set breaks nothing.
//
// A field of Set is a bool (the part is replaced by the alternative this
// package implements, in the file named after the part: retries.go,
// relay.go, timer.go, transport.go, calls.go, reload.go), or a func the
// alternative part calls. A named breakage that uses it is declared once,
// in conformance/tests/breakages_test.go.
//
// Breakages that are "the controller's snapshot with a field dropped" are
// not here: they are mutations of the snapshot the data plane is handed
// (conformance/tests/breakages_test.go). Only what a snapshot cannot say
// (how the data plane's own code behaves) is a part.
package breakage

// Set is the hook points of one broken data plane. Every field is a bool,
// a func or a struct of those, so that internal/hookset.Merge can add two
// Sets (TestSetMerges checks it).
type Set struct {
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
	// RetryBudgetRelaysBackendStatus answers a request whose retry the
	// retry budget refused with the backend's own failed response instead
	// of 503, as Envoy does when its retry budget overflows.
	RetryBudgetRelaysBackendStatus bool
	// RetriesAttemptError, when set, is asked whether an attempt that
	// failed with err before any response header (not by
	// timeouts.backendRequest) may be retried; false makes its error the
	// answer. Nil: every such error may be, as GEP-1731's connection
	// errors are.
	RetriesAttemptError func(err error) bool
	// BodyNotHeld starts a request's first attempt as soon as its
	// headers arrive, streaming the body to the backend as it comes, and
	// retries it only if the whole body had arrived before the attempt
	// began to send it, as HAProxy does without "option
	// http-buffer-request": a body still arriving is not kept for a
	// retry, and the first attempt's answer is relayed.
	BodyNotHeld bool
	// RetrySameEndpoint sends every retry of a request to the endpoint
	// of its first attempt, as a data plane that picks an endpoint per
	// request rather than per attempt does.
	RetrySameEndpoint bool
	// ReloadRestartsTimers restarts, at every configuration the data
	// plane is handed, the inactivity timers of its open connections:
	// the client timeout of a connection waiting for a request, and both
	// sides' limits of a tunnel. So does a data plane that applies
	// configuration by reloading (HAProxy, nginx), whose new workers
	// restart the timers of connections the old ones still hold.
	ReloadRestartsTimers bool
	// GRPC breaks parts of the GRPCRoute timeout behaviour (GEP-3139).
	GRPC GRPCTimeouts
	// Relay breaks how responses and streams are relayed.
	Relay Relay
}

// Relay breaks how the data plane relays a response, or a request stream,
// whose backend fails or streams.
type Relay struct {
	// CompletesTruncated relays every response body re-framed (chunked on
	// HTTP/1.1, DATA frames on HTTP/2, the backend's Content-Length
	// dropped) and, when the backend fails in the middle of it, ends it
	// as if it were complete: a last-chunk, an END_STREAM. HAProxy 2.6
	// ended an HTTP/2 client's stream so when its backend reset mid-body.
	CompletesTruncated bool
	// DropsOnAbort aborts a response whose backend failed mid-way without
	// sending what it had buffered: a response small enough to sit in the
	// buffers (status, headers and all) becomes an empty reply, which
	// clients take for a stale keep-alive connection and resend.
	DropsOnAbort bool
	// BareResetOverHTTP2 resets an HTTP/2 client's stream whose backend
	// failed mid-way without sending what it had buffered: a response
	// small enough to sit in the buffers reaches the client as a bare
	// RST_STREAM, no HEADERS, which RFC 9113 allows and HTTP/2 clients do
	// not resend. HTTP/1.1 clients get the data plane's own relay.
	BareResetOverHTTP2 bool
	// EndsTruncatedHTTP2Stream ends an HTTP/2 client's stream whose
	// backend failed mid-way with a clean END_STREAM after what had
	// arrived, the backend's Content-Length kept (so short of it), as
	// HAProxy 2.6 does. HTTP/1.1 clients get the data plane's own relay.
	EndsTruncatedHTTP2Stream bool
	// BuffersResponses reads a whole response body (HTTP and gRPC) before
	// relaying any of it, as a proxy with response buffering on does
	// (nginx's proxy_buffering; HAProxy coalescing a stream's messages).
	BuffersResponses bool
	// BuffersRequests reads a whole request body before sending the
	// request upstream, as nginx's proxy_request_buffering does: a gRPC
	// client stream reaches the backend only once the client half-closes.
	BuffersRequests bool
	// GRPCResetAsOK ends a gRPC response whose backend stream failed
	// mid-way with grpc-status 0 in trailers, as a proxy that synthesises
	// trailers for a stream it saw end does.
	GRPCResetAsOK bool
	// RefusesEarlyGRPCEnds ends a gRPC call that ends before any
	// response header (its backend failed, or its deadline passed) with
	// RST_STREAM REFUSED_STREAM to an HTTP/2 client, as HAProxy passes on
	// a backend's reset of a stream it has sent no headers for; a gRPC
	// backend whose own deadline (from the forwarded grpc-timeout) resets
	// the stream gets there at the deadline. REFUSED_STREAM tells the
	// client the call was never processed, and clients send it again.
	RefusesEarlyGRPCEnds bool
}

// GRPCTimeouts breaks parts of the GRPCRoute timeout behaviour. Clearing
// a rule's MaxStreamDuration or flipping its StrictDeny in the snapshot
// breaks the others.
type GRPCTimeouts struct {
	// IgnoreClientTimeout makes the data plane leave the client's
	// grpc-timeout out of the call's budget (it is still forwarded when the
	// route sets no limit).
	IgnoreClientTimeout bool
	// LooserWins makes StrictEnforcement Allow pick the longer of the
	// route's limit and the client's grpc-timeout instead of the shorter.
	LooserWins bool
	// UnavailableOnExpiry ends an expired call with UNAVAILABLE (14), the
	// code an HTTP 504 maps to, instead of DEADLINE_EXCEEDED (4).
	UnavailableOnExpiry bool
	// NoTimeoutPropagation forwards the client's grpc-timeout header as
	// received (or none) instead of the remaining budget.
	NoTimeoutPropagation bool
}
