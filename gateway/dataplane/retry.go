package dataplane

// HTTPRoute retries (GEP-1731). docs/semantics/http-retries-and-timeouts.md
// gives the GEP sentence behind each choice made here.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
	"time"

	"github.com/gatewitness/gatewitness/gateway/dataplane/internal/part"
	"github.com/gatewitness/gatewitness/gateway/ir"
	"github.com/gatewitness/gatewitness/internal/ctxsleep"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// Retry defaults and bounds.
const (
	// defaultRetries is the number of retries of a retry stanza without
	// attempts (the GEP leaves it to the implementation).
	defaultRetries = 1
	// maxRetries bounds retry.attempts: a request never makes more than
	// 1+maxRetries backend attempts.
	maxRetries = 100
	// defaultBackoff is the backoff of a retry stanza without backoff (the
	// GEP leaves it to the implementation).
	defaultBackoff = 25 * time.Millisecond
	// backoffGrowthCap caps the exponential backoff at this multiple of the
	// configured minimum.
	backoffGrowthCap = 10
	// maxDrainBody and drainTimeout bound what is read of a response that
	// is retried: its body is read and dropped, so that the attempt ends as
	// the backend meant it to and the connection can be used again, unless
	// it is larger or slower than this; then the attempt is cancelled.
	maxDrainBody = 64 << 10
	drainTimeout = time.Second
	// maxReplayBody bounds the request body kept to resend on a retry.
	// Larger bodies, and bodies of unknown length, are streamed to the first
	// attempt and never retried.
	maxReplayBody = 64 << 10
)

// retryPolicy is a compiled HTTPRouteRetry. A nil policy (no retry stanza)
// makes exactly one attempt.
type retryPolicy struct {
	codes   []int         // response statuses that are retried, sorted
	retries int           // attempts after the first
	backoff time.Duration // minimum wait between the end of an attempt and the start of the next; 0: none
	ceiling time.Duration // the exponential backoff stops growing here
}

// compileRetry compiles a rule's retry stanza. An error names the field and
// the accepted form; the caller makes the rule answer 500.
func (a *action) compileRetry(r *gwv1.HTTPRouteRetry) error {
	a.retry = nil
	if r == nil {
		return nil
	}
	p := &retryPolicy{retries: defaultRetries, backoff: defaultBackoff}
	for i, c := range r.Codes {
		if c < 400 || c > 599 {
			return fmt.Errorf("retry.codes[%d]: %d cannot be retried; accepted: an HTTP status from 400 to 599", i, c)
		}
		p.codes = append(p.codes, int(c))
	}
	slices.Sort(p.codes)
	p.codes = slices.Compact(p.codes)
	if r.Attempts != nil {
		n := *r.Attempts
		if n < 0 || n > maxRetries {
			return fmt.Errorf("retry.attempts: %d is out of range; accepted: a number of retries from 0 to %d", n, maxRetries)
		}
		p.retries = n
	}
	if r.Backoff != nil {
		d, err := ir.ParseDuration("retry.backoff", r.Backoff)
		if err != nil {
			return err
		}
		p.backoff = d
	}
	// Keep the ceiling and its jitter far from overflowing.
	p.ceiling = p.backoff
	if p.backoff <= math.MaxInt64/(4*backoffGrowthCap) {
		p.ceiling = p.backoff * backoffGrowthCap
	}
	a.retry = p
	return nil
}

// attempts returns the most attempts a request may make.
func (p *retryPolicy) attempts() int {
	if p == nil {
		return 1
	}
	return 1 + p.retries
}

// retriesStatus reports whether a response with this status is retried.
func (p *retryPolicy) retriesStatus(status int) bool {
	if p == nil {
		return false
	}
	_, found := slices.BinarySearch(p.codes, status)
	return found
}

// wait returns how long to wait after attempt n ends before attempt n+1
// starts (n >= 1): the backoff doubled for each earlier retry, capped at
// backoffGrowthCap times the backoff, plus 5 to 10 percent of jitter. It is
// never less than the backoff. The jitter's floor keeps a retry after the
// minimum even as a backend measures it: a backend records an attempt's end
// a moment after the gateway saw the response (or the reset) arrive.
func (p *retryPolicy) wait(n int) time.Duration {
	if p == nil || p.backoff <= 0 {
		return 0
	}
	d := p.backoff
	for i := 1; i < n && d < p.ceiling; i++ {
		d = min(2*d, p.ceiling)
	}
	return d + d/20 + rand.N(d/20+1)
}

// attempt is how one backend attempt ended: with a response whose body is
// unread (and whose context stays alive until done is called), or with an
// error before any response header.
type attempt struct {
	endpoint string
	resp     *http.Response
	err      error
	timedOut bool // err: timeouts.backendRequest expired
	cancel   context.CancelFunc
}

// done ends the attempt: its response body is closed unread and its context
// cancelled, which aborts the exchange with the backend if it is still
// going.
func (at *attempt) done() {
	if at.resp != nil {
		at.resp.Body.Close()
	}
	at.cancel()
}

// discard ends an attempt whose answer is not relayed. Up to maxDrainBody
// of the response body is read first, for up to drainTimeout (and within
// the attempt's own timeouts).
func (at *attempt) discard() {
	if at.resp != nil {
		stop := time.AfterFunc(drainTimeout, at.cancel)
		_, _ = io.Copy(io.Discard, io.LimitReader(at.resp.Body, maxDrainBody))
		stop.Stop()
	}
	at.done()
}

// retryReason says why a finished attempt may be retried, or "" when its
// answer is final.
func (p *retryPolicy) retryReason(at *attempt) string {
	switch {
	case p == nil:
		return ""
	case at.timedOut:
		return "backend request timeout"
	case at.err != nil:
		return "connection error: " + at.err.Error()
	case p.retriesStatus(at.resp.StatusCode):
		return fmt.Sprintf("status %d", at.resp.StatusCode)
	}
	return ""
}

// exchange runs the upstream part of a matched rule: attempts against the
// endpoints of b, repeated as the rule's retry policy allows, each bounded
// by timeouts.backendRequest and all of them by ctx (timeouts.request).
// The answer of the last attempt is relayed to w: the backend's response,
// 504 when the last attempt timed out, 502 when it failed to connect or was
// reset. The request timeout answers 504 at whatever point it expires
// before the response headers were relayed.
//
// A retry goes to the same backend (its filters are already applied) and to
// the endpoint after the previous attempt's in round-robin order, so that
// with several endpoints no two consecutive attempts go to the same one.
// The response of a retried attempt is read and dropped (see discard)
// before the backoff starts; a retry whose backoff would end after the
// request deadline is not made, and the attempt's answer is relayed instead.
func (s *Server) exchange(pr *proxyRequest) {
	ctx, act, b := pr.out.Context(), pr.act, pr.b // ctx: the request timeout's
	if len(b.endpoints) == 0 {
		s.fail(pr.w, act.grpc, http.StatusServiceUnavailable, grpcUnavailable, "backend "+b.name+" has no ready endpoints")
		return
	}
	if !pr.slot.acquire(b, s.limits.MaxBackendRequests) { // limits.go
		s.overloaded(pr.w, act.grpc, b)
		return
	}
	defer pr.slot.release()
	defer holdsSlot(pr.w, &pr.slot)() // clientwrite.go: a stalled write frees it
	p := act.retry
	retries := s.parts.Retries // parts.go
	limit := retries.Attempts(pr.r.Method, p.attempts())
	var body []byte
	var held part.Held
	if limit > 1 {
		var ok bool
		if body, held, ok = retries.Hold(pr.out, maxReplayBody); !ok {
			s.log.V(1).Info("not retrying: the request body is larger than the replay limit or of unknown length",
				"backend", b.name, "limit", maxReplayBody)
			limit = 1
		}
		if ctx.Err() != nil {
			// The request timeout expired (or the client left) while the
			// body was read.
			s.answerEnd(pr)
			return
		}
	}

	var budget *retryBudget // retrybudget.go
	if b.budget != nil {
		budget = s.budgets.get(b.budget.Key)
		budget.request(time.Now(), b.budget)
	}
	first := b.next.Add(1) - 1
	for n := 1; ; n++ {
		endpoint := b.endpoints[retries.Endpoint(first, n)%uint64(len(b.endpoints))]
		at := s.try(pr, body, endpoint)
		if _, _, ok := pr.clientFault(at.err); ok {
			// The client's body failed (handler.go): answered as such,
			// never retried.
			s.finish(pr, at)
			return
		}
		if ctx.Err() != nil {
			at.done()
			s.answerEnd(pr)
			return
		}
		reason := p.retryReason(at)
		if at.err != nil && !at.timedOut && !retries.RetriesError(at.err) {
			reason = ""
		}
		if reason == "" || n == limit {
			s.finish(pr, at)
			return
		}
		var kept bool
		if body, kept = held.Replay(body); !kept {
			// The body was not kept to be sent again: this attempt's
			// answer is the request's.
			s.finish(pr, at)
			return
		}
		wait := p.wait(n)
		if deadline, ok := ctx.Deadline(); ok && !time.Now().Add(wait).Before(deadline) {
			// The retry could not start before the request timeout:
			// answer now with what the backend said.
			s.finish(pr, at)
			return
		}
		if budget != nil && !budget.allowRetry(time.Now(), b.budget) {
			switch retries.BudgetRefused() {
			case part.RefuseWithAttempt:
				s.finish(pr, at)
			default: // part.RefuseUnavailable
				// GEP-3388: "After the retry budget has been exceeded,
				// additional retries to the backend MUST return a 503
				// response to the client."
				at.discard()
				s.fail(pr.w, act.grpc, http.StatusServiceUnavailable, grpcUnavailable, "retry budget of "+b.budget.Key+" exceeded")
			}
			return
		}
		at.discard()
		s.log.V(1).Info("retrying", "backend", b.name, "endpoint", endpoint, "attempt", n, "reason", reason, "backoff", wait)
		if !ctxsleep.Sleep(ctx, wait) {
			s.answerEnd(pr)
			return
		}
	}
}

// try makes one attempt: pr.out, with a fresh copy of body when there is
// one (the request body, kept to be sent again), goes to endpoint under a
// context bounded by timeouts.backendRequest.
func (s *Server) try(pr *proxyRequest, body []byte, endpoint string) *attempt {
	ctx, out, act, b := pr.out.Context(), pr.out, pr.act, pr.b
	actx, cancel := s.attemptContext(ctx, act)                         // timeouts.go
	actx, idle, stopIdle := serverIdleContext(actx, act.serverTimeout) // conntimeouts.go
	cancel = joinCancel(stopIdle, cancel)
	req := out.WithContext(actx)
	if len(body) > 0 {
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.ContentLength = int64(len(body))
	}
	at := &attempt{endpoint: endpoint, cancel: cancel}
	at.resp, at.err = s.forward(actx, req, b, endpoint, true)
	switch {
	case at.err != nil:
		at.timedOut = backendTimedOut(actx) || serverTimedOut(actx)
	case at.resp.StatusCode == http.StatusSwitchingProtocols:
		idle.Stop() // the tunnel's own timeouts take over
	default:
		at.resp.Body = s.parts.Timer.Watch(actx, idle.Watch(at.resp.Body))
	}
	return at
}

// finish relays the final attempt's answer.
func (s *Server) finish(pr *proxyRequest, at *attempt) {
	w, r, act := pr.w, pr.r, pr.act
	defer at.done()
	status, msg, clientFault := pr.clientFault(at.err) // handler.go: the client's body was at fault
	switch {
	case at.resp != nil:
		s.writeResponse(pr, at.resp) // proxy.go
	case clientFault:
		s.fail(w, act.grpc, status, grpcInternal, msg)
	case r.Context().Err() != nil:
		// The client went away; nobody to answer.
	case at.timedOut:
		s.fail(w, act.grpc, http.StatusGatewayTimeout, grpcDeadlineExceeded, "upstream request timeout")
	default:
		s.log.V(1).Info("upstream request failed", "backend", pr.b.name, "endpoint", at.endpoint, "error", at.err.Error())
		s.fail(w, act.grpc, http.StatusBadGateway, grpcUnavailable, "upstream request failed")
	}
}

// answerEnd answers a request whose context ended before a response was
// relayed: 504 when the request timeout expired, nothing when the client
// went away.
func (s *Server) answerEnd(pr *proxyRequest) {
	if status, msg, ok := pr.clientFault(nil); ok {
		s.fail(pr.w, pr.act.grpc, status, grpcInternal, msg)
		return
	}
	if pr.r.Context().Err() != nil {
		return
	}
	s.fail(pr.w, pr.act.grpc, http.StatusGatewayTimeout, grpcDeadlineExceeded, "request timeout")
}

// bufferBody reads out's body into memory so that it can be sent again,
// when it is known to be at most limit bytes, and gives out a reader over
// the copy. ok is false (and out's body is left as it was, or reads back
// what was read followed by the read error) when the body cannot be
// replayed.
func bufferBody(out *http.Request, limit int64) (body []byte, ok bool) {
	if out.Body == nil || out.Body == http.NoBody {
		return nil, true
	}
	if out.ContentLength <= 0 || out.ContentLength > limit {
		return nil, false
	}
	body = make([]byte, out.ContentLength)
	n, err := io.ReadFull(out.Body, body)
	out.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body[:n]), errReader{err}))
	if err != nil {
		return nil, false
	}
	return body, true
}

// errTransportResend is what the upstream transport gets when it would
// resend a request by itself.
var errTransportResend = errors.New("the backend connection or stream failed, possibly after the request was sent; resending is left to the route's retry policy")

// forbidTransportResend stops net/http's transport from resending req by
// itself. The transport resends a request that failed on a reused HTTP/1.1
// connection when the method is idempotent, and an HTTP/2 request refused
// by GOAWAY or REFUSED_STREAM. The backend may have seen such a request,
// and every attempt a backend sees must be one the retry policy made: with
// no retry stanza, exactly one.
//
// A request body with a GetBody that fails does that: the transport asks
// GetBody for the body to resend and gives up with its error. A request
// without a body gets an empty one, since the transport resends those
// without asking: on HTTP/2 always, and on HTTP/1.1 for GET, HEAD and
// OPTIONS, where an empty body is still sent without framing. (HTTP/1.1
// TRACE requests, and bodiless requests with an Idempotency-Key header, are
// left as they are: an empty body would change their framing.) The
// transport still resends an HTTP/1.1 request of which nothing was written,
// since no backend saw it.
func forbidTransportResend(req *http.Request, h2 bool) {
	if req.Body == nil || req.Body == http.NoBody {
		switch {
		case h2, req.Method == http.MethodGet, req.Method == http.MethodHead, req.Method == http.MethodOptions:
			req.Body, req.ContentLength = emptyBody{}, 0
		}
	}
	req.GetBody = func() (io.ReadCloser, error) { return nil, errTransportResend }
}

// emptyBody is a request body with no bytes that the transport cannot tell
// from any other body.
type emptyBody struct{}

func (emptyBody) Read([]byte) (int, error) { return 0, io.EOF }
func (emptyBody) Close() error             { return nil }
