package dataplane

// Connection-level proxy timeouts: the six settings a cluster admin tunes
// for a whole gateway (OpenShift's ingress spec.tuningOptions, HAProxy's
// "timeout client", "client-fin", "server", "server-fin", "tunnel" and
// "tcp-request inspect-delay"). docs/semantics/connection-timeouts.md says
// what each one means here and how HAProxy compares.

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/gatewitness/gatewitness/gateway/dataplane/internal/idletimer"
	"github.com/gatewitness/gatewitness/gateway/ir"
)

// errServerTimeout is the cause of an attempt context that the Server
// timeout ended.
var errServerTimeout = errors.New("the backend was silent for longer than the server timeout")

// serverIdleContext returns ctx bounded by the Server timeout d: the
// context ends with cause errServerTimeout when the returned timer is not
// kicked for d. stop releases the timer. With d zero it returns ctx, a nil
// timer (whose methods do nothing) and a no-op stop.
func serverIdleContext(ctx context.Context, d time.Duration) (context.Context, *idletimer.Timer, func()) {
	if d <= 0 {
		return ctx, nil, func() {}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	it := idletimer.New(d, func() { cancel(errServerTimeout) })
	return ctx, it, func() { it.Stop(); cancel(context.Canceled) }
}

// serverTimedOut reports whether the Server timeout ended ctx.
func serverTimedOut(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), errServerTimeout)
}

// setConnectionTimeouts gives every rule of the listener the Gateway's
// Server timeout.
func (lt *listenerTable) setConnectionTimeouts(t ir.ConnectionTimeouts) {
	for _, e := range lt.http {
		e.action.serverTimeout = t.Server
	}
}

// joinCancel returns a function that calls every f in order.
func joinCancel(fs ...func()) context.CancelFunc {
	return func() {
		for _, f := range fs {
			f()
		}
	}
}

// timeoutsKey is the context key of a socket's ConnectionTimeouts.
type timeoutsKey struct{}

// withConnectionTimeouts returns ctx carrying t, the timeouts of the socket
// a request came on.
func withConnectionTimeouts(ctx context.Context, t ir.ConnectionTimeouts) context.Context {
	return context.WithValue(ctx, timeoutsKey{}, t)
}

// connectionTimeouts returns the timeouts of the socket a request came on
// (zero outside a request).
func connectionTimeouts(ctx context.Context) ir.ConnectionTimeouts {
	t, _ := ctx.Value(timeoutsKey{}).(ir.ConnectionTimeouts)
	return t
}

// applyClientTimeout makes the Client timeout bound an HTTP server's waits
// for the client: for the request headers of a new connection (from the
// accept) and of a kept-alive one (from its first byte), and for the next
// request on a kept-alive connection. Request bodies are bounded by
// requestBody (limits.go).
func applyClientTimeout(srv *http.Server, d time.Duration) {
	if d <= 0 {
		return
	}
	srv.ReadHeaderTimeout = d
	srv.IdleTimeout = d
}
