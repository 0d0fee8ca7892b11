package dataplane

// HTTPRoute timeouts (GEP-1742) as they apply to backend attempts.
// timeouts.request is set up in runRule and bounds the whole exchange;
// docs/semantics/http-retries-and-timeouts.md gives the GEP sentences.

import (
	"context"
	"errors"
	"time"
)

// errBackendTimeout is the cause of an attempt context that
// timeouts.backendRequest ended.
var errBackendTimeout = errors.New("timeouts.backendRequest expired")

// attemptContext returns the context of one backend attempt: ctx (which
// carries timeouts.request) further bounded by timeouts.backendRequest when
// the rule sets one. The attempt lasts from the first byte of the request
// sent to the last byte of the response received, so the context must stay
// alive until the response body is relayed or discarded.
func (s *Server) attemptContext(ctx context.Context, a *action) (context.Context, context.CancelFunc) {
	if a.backendTimeout <= 0 {
		return context.WithCancel(ctx)
	}
	return s.parts.Timer.Bound(ctx, time.Now(), a.backendTimeout, errBackendTimeout) // parts.go
}

// backendTimedOut reports whether timeouts.backendRequest, rather than the
// request timeout or the client, ended the attempt context actx.
func backendTimedOut(actx context.Context) bool {
	return errors.Is(context.Cause(actx), errBackendTimeout)
}
