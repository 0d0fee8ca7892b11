package dataplane

// The data plane's own parts (internal/part names them): the behaviour
// this reference implementation specifies. The request path calls the
// Server's parts, set once by its constructor; a data plane broken on
// purpose has some of them replaced or wrapped (package dataplanetest).

import (
	"context"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/gatewitness/gatewitness/gateway/dataplane/internal/part"
	"github.com/gatewitness/gatewitness/internal/grpctimeout"
)

// ownParts returns the data plane's own parts over its upstream transports.
func ownParts(h1, h2c *http.Transport) part.Parts {
	return part.Parts{
		Retries:   retries{},
		Relay:     relay{},
		Timer:     deadlines{},
		Transport: pool{h1: h1, h2c: h2c},
		Calls:     calls{},
		Reload:    noReload{},
	}
}

// retries: every attempt the route allows, each to the next endpoint in
// round-robin order, every connection error retried, a budget refusal
// answered 503, and the body read whole before the first attempt.
type retries struct{}

func (retries) Attempts(_ string, max int) int      { return max }
func (retries) Endpoint(first uint64, n int) uint64 { return first + uint64(n-1) }
func (retries) RetriesError(error) bool             { return true }
func (retries) BudgetRefused() part.Refusal         { return part.RefuseUnavailable }
func (retries) Hold(out *http.Request, limit int64) ([]byte, part.Held, bool) {
	body, ok := bufferBody(out, limit) // retry.go
	return body, wholeBody{}, ok
}

// wholeBody is a request body read whole before the first attempt: every
// attempt sends it again.
type wholeBody struct{}

func (wholeBody) Replay(first []byte) ([]byte, bool) { return first, true }

// relay: bodies relayed as they arrive, framed as the backend framed them;
// a failure mid-way aborts the response after what was relayed
// (abortRelayed); a tunnel passes half-closes on.
type relay struct{}

func (relay) Framing(_ http.Header, stream bool) bool { return stream }
func (relay) Body(body io.ReadCloser) io.ReadCloser   { return body }
func (relay) Aborted(w http.ResponseWriter, _ bool)   { abortRelayed(w) }
func (relay) GRPCAborted(w http.ResponseWriter, _ http.Header, _ bool) {
	abortRelayed(w)
}
func (relay) GRPCEndedEarly(w http.ResponseWriter, code int, msg string) {
	writeGRPCStatus(w, code, msg) // handler.go
}
func (relay) Conn(c net.Conn) net.Conn { return c }
func (relay) HalfClose(to net.Conn, _ bool) bool {
	hc, ok := to.(halfCloser) // tunnel.go
	return ok && hc.CloseWrite() == nil
}

// deadlines: every timeout is a deadline, start plus its duration.
type deadlines struct{}

func (deadlines) Bound(ctx context.Context, start time.Time, d time.Duration, cause error) (context.Context, context.CancelFunc) {
	return context.WithDeadlineCause(ctx, start.Add(d), cause)
}
func (deadlines) Watch(_ context.Context, body io.ReadCloser) io.ReadCloser { return body }
func (deadlines) Passed(deadline time.Time) bool                            { return !time.Now().Before(deadline) }

// pool: the shared upstream transports, which resend nothing a retry
// policy did not ask for (forbidTransportResend).
type pool struct{ h1, h2c *http.Transport }

func (p pool) RoundTrip(req *http.Request, h2c bool) (*http.Response, error) {
	if h2c {
		return p.h2c.RoundTrip(req)
	}
	return p.h1.RoundTrip(req)
}
func (pool) ForbidResend(req *http.Request, h2 bool) { forbidTransportResend(req, h2) } // retry.go

// calls: GEP-3139's budget (callBudget), the remaining budget told to the
// backend in grpc-timeout, and DEADLINE_EXCEEDED at expiry.
type calls struct{}

func (calls) Budget(route time.Duration, deny bool, client time.Duration, hasClient bool) (time.Duration, part.BudgetSource) {
	return callBudget(grpcLimits{maxStream: route, strictDeny: deny}, client, hasClient) // grpc_timeouts.go
}
func (calls) Tell(out, _ http.Header, remaining time.Duration, bounded bool) bool {
	if !bounded {
		return true
	}
	if remaining <= 0 {
		return false
	}
	// The backend learns how long it has left; filters cannot lift it.
	out.Set(grpcTimeoutHeader, grpctimeout.Format(remaining))
	return true
}
func (calls) ExpiryCode() int { return grpcDeadlineExceeded }

// noReload: a configuration is applied in place; the connections the data
// plane holds keep their timers running.
type noReload struct{}

func (noReload) Applied()                                               {}
func (noReload) ConnState(time.Duration) func(net.Conn, http.ConnState) { return nil }
func (noReload) Tunnel(func()) func()                                   { return func() {} }
