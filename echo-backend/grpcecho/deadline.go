package grpcecho

// The server keeps its calls' deadlines itself, so that a call that
// reaches its deadline always ends the same way: the handler's
// DEADLINE_EXCEEDED status first (trailers-only before any response
// header, trailers after them), then, if the client has not half-closed,
// RST_STREAM NO_ERROR, as grpc-go ends any call whose client is still
// sending (RFC 9113 section 8.1). Left to grpc-go, the deadline ends the
// call twice at the same instant: the handler's context and a timer of
// grpc-go's transport that resets the stream with CANCEL. Whichever came
// first went out, so a proxy saw a status or a bare reset (which HAProxy
// passes on as REFUSED_STREAM). The tap (h2tap.DeadlineCredentials) gives
// grpc-go the header block without grpc-timeout, and these interceptors
// set the deadline from the tap's copy instead, counted from when the
// stream's headers arrived (rpcStart).

import (
	"context"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/gatewitness/gatewitness/echo-backend/h2tap"
	"github.com/gatewitness/gatewitness/internal/grpctimeout"
)

// rpcStartKey is the context key of when grpc-go took the call's headers
// (connCounter.TagRPC).
type rpcStartKey struct{}

// callDeadline returns ctx with the deadline of the call's grpc-timeout
// (the tap's copy), counted from when its headers arrived. ok is false
// without one. A malformed value is an error with INTERNAL, as grpc-go
// answers it.
func callDeadline(ctx context.Context) (_ context.Context, cancel context.CancelFunc, ok bool, err error) {
	md, _ := metadata.FromIncomingContext(ctx)
	v := md.Get(h2tap.GRPCTimeoutHeader)
	if len(v) == 0 {
		return ctx, func() {}, false, nil
	}
	d, err := grpctimeout.Parse(v[0])
	if err != nil {
		return ctx, func() {}, false, status.Errorf(codes.Internal, "malformed grpc-timeout: %v", err)
	}
	start, found := ctx.Value(rpcStartKey{}).(time.Time)
	if !found {
		start = time.Now()
	}
	ctx, cancel = context.WithDeadline(ctx, start.Add(d))
	return ctx, cancel, true, nil
}

// unaryDeadline runs a unary handler under the call's deadline.
func unaryDeadline(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	ctx, cancel, _, err := callDeadline(ctx)
	if err != nil {
		return nil, err
	}
	defer cancel()
	return handler(ctx, req)
}

// streamDeadline runs a streaming handler under the call's deadline.
func streamDeadline(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	ctx, cancel, ok, err := callDeadline(ss.Context())
	if err != nil {
		return err
	}
	defer cancel()
	if !ok {
		return handler(srv, ss)
	}
	return handler(srv, &deadlineStream{ServerStream: ss, ctx: ctx})
}

// deadlineStream is a server stream under a deadline grpc-go does not
// know: its context carries it, and a RecvMsg still waiting for the client
// at the deadline returns the deadline's status (grpc-go's own would wait
// on: the client keeps its side open). The handler then returns, grpc-go
// ends the stream, and the abandoned read ends with it.
type deadlineStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *deadlineStream) Context() context.Context { return s.ctx }

func (s *deadlineStream) RecvMsg(m any) error {
	done := make(chan error, 1)
	go func() { done <- s.ServerStream.RecvMsg(m) }()
	select {
	case err := <-done:
		return err
	case <-s.ctx.Done():
		return status.FromContextError(s.ctx.Err()).Err()
	}
}
