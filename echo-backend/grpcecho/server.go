// Package grpcecho is the echo-backend's gRPC side. One grpc.Server serves:
//
//   - upstream's gateway_api_conformance.echo_basic.grpcecho.GrpcEcho, with
//     the same contract as echo-basic, so the upstream conformance helpers
//     work against it unchanged (Echo and EchoTwo echo, EchoThree is
//     UNIMPLEMENTED);
//   - gatewitness.echo.v1.Echo, the superset: unary and streaming echoes that
//     carry the grpc-timeout received, the deadline left, the request id and
//     the attempt number;
//   - gatewitness.echo.v1.Admin, which flips the health statuses and the TCP
//     listener and reads the ledger;
//   - grpc.health.v1.Health and server reflection.
//
// Every echo call (GrpcEcho's and Echo's) is recorded in the ledger under its
// x-gatewitness-id metadata value and may carry a fault spec in
// x-gatewitness-fault (see package fault). The server applies the spec's
// action for the call's attempt number:
//
//   - delay=D waits before the response headers, body-delay=D after them and
//     before the first message; every wait ends early when the call's context
//     is done (the client cancelled or the deadline passed), and the ledger
//     then records the attempt as cancelled.
//   - messages=N and interval=D set how many messages ServerStream sends and
//     the gap between them; BidiStream waits interval=D between answers.
//   - grpc-status, grpc-message and trailer= end the call with that status and
//     trailing metadata. Without body-delay or reset the error is sent as a
//     trailers-only response. A server stream sends messages=N messages first
//     when messages is given, and none otherwise.
//   - status=N (HTTP, as in script=503|ok) ends the call with the gRPC code
//     that gRPC's HTTP-to-gRPC mapping gives N (see CodeForHTTPStatus); a 2xx
//     status answers normally. grpc-status wins when both are given.
//   - reset sends RST_STREAM with reset-code (default INTERNAL_ERROR) on the
//     call's stream: before-headers before any response frame, after-headers
//     right after the response headers, mid-body after the first message of a
//     stream, or after the headers and body-delay of a call that sends no
//     streamed message (unary, client stream).
//   - goaway sends GOAWAY whose last stream id excludes the call's stream
//     (stream-2, or 0 for stream 1) and closes the connection; its code is
//     reset-code (default NO_ERROR). A grpc-go client retries such a call
//     once, transparently, on a new connection.
//   - close closes the connection without a response.
//
// ClientStream applies the action once the client has half-closed, when its
// answer is due; BidiStream applies what comes before the first answer when
// the call starts. Every response carries the attempt number in the trailing
// metadata key x-gatewitness-attempt.
//
// A call's grpc-timeout is kept by the server itself (deadline.go), so a
// call that reaches it always ends the same way: DEADLINE_EXCEEDED
// (trailers-only before any message, trailers after), then RST_STREAM
// NO_ERROR if the client has not half-closed. Never a bare reset.
package grpcecho

import (
	"context"
	"crypto/tls"
	"net/http"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/stats"

	"github.com/gatewitness/gatewitness/contract/echowire"
	"github.com/gatewitness/gatewitness/echo-backend/control"
	"github.com/gatewitness/gatewitness/echo-backend/echopb"
	"github.com/gatewitness/gatewitness/echo-backend/fault"
	upstreampb "github.com/gatewitness/gatewitness/echo-backend/grpcechopb"
	"github.com/gatewitness/gatewitness/echo-backend/h2tap"
	"github.com/gatewitness/gatewitness/echo-backend/ledger"
	"github.com/gatewitness/gatewitness/echo-backend/podinfo"
)

// AttemptTrailer is the trailing metadata key that carries the call's
// attempt number on every echo call.
const AttemptTrailer = echowire.AttemptTrailer

// maxHeaderListSize bounds the request metadata the server accepts (and so
// what one ledger attempt copies): four times the 60 KiB that proxies such
// as Envoy allow by default.
const maxHeaderListSize = 256 << 10

// Options configure a server. Ledger and Controls are required.
type Options struct {
	Pod      podinfo.Info      // echoed in every response
	Ledger   *ledger.Ledger    // records every echo call
	Controls *control.Controls // health statuses and the TCP switch
	Limits   fault.Limits      // bounds on fault specs; zero fields take fault.DefaultLimits
	TLS      *tls.Config       // nil: plaintext
	Listener string            // ledger name of this port: "grpc" or "grpcs"

	// HandshakeTimeout bounds a new connection's TLS handshake and HTTP/2
	// preface (grpc.ConnectionTimeout); zero means 10s.
	HandshakeTimeout time.Duration
	// IdleTimeout closes, with a GOAWAY, a connection that has had no
	// call for this long (keepalive.ServerParameters.MaxConnectionIdle);
	// zero means 5m, as httpecho's Timeouts.Idle.
	IdleTimeout time.Duration
}

// server holds what every service of one grpc.Server shares.
type server struct {
	opts Options
}

// NewServer returns a grpc.Server that serves upstream's GrpcEcho, our Echo
// and Admin services, grpc.health.v1 from opts.Controls.GRPCHealth and server
// reflection. Every connection it serves, plaintext or TLS, is tapped by
// h2tap so that faults can act on the HTTP/2 stream. The caller calls Serve
// and Stop. NewServer panics if opts.Ledger or opts.Controls is nil.
func NewServer(opts Options) *grpc.Server {
	if opts.Ledger == nil {
		panic("grpcecho.NewServer: Options.Ledger is nil")
	}
	if opts.Controls == nil {
		panic("grpcecho.NewServer: Options.Controls is nil")
	}
	creds := insecure.NewCredentials()
	if opts.TLS != nil {
		creds = credentials.NewTLS(opts.TLS)
	}
	if opts.HandshakeTimeout <= 0 {
		opts.HandshakeTimeout = 10 * time.Second
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = 5 * time.Minute
	}
	s := &server{opts: opts}
	gs := grpc.NewServer(
		grpc.ConnectionTimeout(opts.HandshakeTimeout),
		grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionIdle: opts.IdleTimeout}),
		// The server keeps deadlines itself (deadline.go).
		grpc.Creds(h2tap.DeadlineCredentials(creds)),
		grpc.ChainUnaryInterceptor(unaryDeadline),
		grpc.ChainStreamInterceptor(streamDeadline),
		grpc.StatsHandler(connCounter{}),
		grpc.MaxHeaderListSize(maxHeaderListSize),
		// A test backend observes what a proxy does rather than policing
		// it: keepalive pings from a proxy must not earn a GOAWAY.
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{
			MinTime:             time.Second,
			PermitWithoutStream: true,
		}),
	)
	upstreampb.RegisterUpstreamGrpcEchoServer(gs, &upstreamService{s: s})
	echopb.RegisterEchoServer(gs, &echoService{s: s})
	echopb.RegisterAdminServer(gs, &adminService{s: s})
	healthpb.RegisterHealthServer(gs, opts.Controls.GRPCHealth)
	registerReflection(gs)
	return gs
}

// CodeForHTTPStatus returns the gRPC code a client derives from an HTTP
// status that is not 200, following gRPC's HTTP-to-gRPC status mapping:
// 400 INTERNAL, 401 UNAUTHENTICATED, 403 PERMISSION_DENIED, 404
// UNIMPLEMENTED, 429, 502, 503 and 504 UNAVAILABLE, any other UNKNOWN. A 2xx
// status yields OK: the server answers normally.
func CodeForHTTPStatus(s int) codes.Code {
	switch {
	case s >= 200 && s <= 299:
		return codes.OK
	case s == http.StatusBadRequest:
		return codes.Internal
	case s == http.StatusUnauthorized:
		return codes.Unauthenticated
	case s == http.StatusForbidden:
		return codes.PermissionDenied
	case s == http.StatusNotFound:
		return codes.Unimplemented
	case s == http.StatusTooManyRequests, s == http.StatusBadGateway,
		s == http.StatusServiceUnavailable, s == http.StatusGatewayTimeout:
		return codes.Unavailable
	}
	return codes.Unknown
}

// connCounter numbers the RPCs of each connection in the order grpc-go
// accepts them, for ledger.Attempt.ConnRequest, and notes when each began,
// for its deadline. The counter lives in the connection's context, so it
// goes away with the connection.
type connCounter struct{}

type connCountKey struct{}
type rpcNumberKey struct{}

// TagConn gives the connection its counter.
func (connCounter) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context {
	return context.WithValue(ctx, connCountKey{}, new(atomic.Int64))
}

// TagRPC numbers the RPC and notes when its headers arrived, where its
// deadline counts from (deadline.go).
func (connCounter) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context {
	ctx = context.WithValue(ctx, rpcStartKey{}, time.Now())
	n, ok := ctx.Value(connCountKey{}).(*atomic.Int64)
	if !ok {
		return ctx
	}
	return context.WithValue(ctx, rpcNumberKey{}, int(n.Add(1)))
}

// HandleConn does nothing.
func (connCounter) HandleConn(context.Context, stats.ConnStats) {}

// HandleRPC does nothing.
func (connCounter) HandleRPC(context.Context, stats.RPCStats) {}

// rpcNumber is the RPC's number on its connection, or 0 if unknown.
func rpcNumber(ctx context.Context) int {
	n, _ := ctx.Value(rpcNumberKey{}).(int)
	return n
}
