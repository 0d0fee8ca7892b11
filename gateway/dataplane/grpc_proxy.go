package dataplane

// The request path of GRPCRoute rules: filters and backend choice as for
// HTTP, then one upstream stream bounded by the call's budget (GEP-3139,
// grpc_timeouts.go), relayed one whole gRPC message at a time so that an
// expiry can always end the call with a well-formed status.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gatewitness/gatewitness/gateway/dataplane/internal/part"
)

// errCallBudget is the cause of a call context whose budget ran out.
var errCallBudget = errors.New("the call's budget expired")

// grpcCall is the budget of one call; a nil *grpcCall has none.
type grpcCall struct {
	ctx      context.Context // ends at deadline with cause errCallBudget
	budget   time.Duration
	source   budgetSource
	deadline time.Time
	timer    part.Timer // what keeps the budget (parts.go)
}

// expired reports whether the call's budget has run out. It reads the clock
// as well as the context, whose timer may fire late on a loaded machine:
// whatever the gateway observes after the deadline (a backend's own
// DEADLINE_EXCEEDED included) is too late to relay.
func (c *grpcCall) expired() bool {
	return c != nil && (errors.Is(context.Cause(c.ctx), errCallBudget) || c.timer.Passed(c.deadline))
}

// remaining returns how much of the call's budget is left, and whether it
// has one.
func (c *grpcCall) remaining() (time.Duration, bool) {
	if c == nil {
		return 0, false
	}
	return time.Until(c.deadline), true
}

// serveGRPC runs a matched GRPCRoute rule. The call's budget starts now,
// when the gateway has the request headers; when it runs out the call ends
// with DEADLINE_EXCEEDED (trailers-only, or as trailers after the response
// headers) and the upstream stream is cancelled.
func (s *Server) serveGRPC(w http.ResponseWriter, r *http.Request, act *action) {
	start := time.Now()
	if act.invalid != "" {
		s.fail(w, true, http.StatusInternalServerError, grpcInternal, "the matched rule is invalid: "+act.invalid)
		return
	}
	client, hasClient, err := clientTimeout(r.Header)
	if err != nil {
		s.fail(w, true, http.StatusBadRequest, grpcInternal, err.Error())
		return
	}
	b := act.pick()
	if b == nil || b.invalid {
		s.fail(w, true, http.StatusInternalServerError, grpcInternal, "no valid backend for the matched rule")
		return
	}

	ctx := r.Context()
	calls, timer := s.parts.Calls, s.parts.Timer // parts.go
	var call *grpcCall
	if budget, source := calls.Budget(act.grpcLimits.maxStream, act.grpcLimits.strictDeny, client, hasClient); source != budgetNone {
		var cancel context.CancelFunc
		ctx, cancel = timer.Bound(ctx, start, budget, errCallBudget)
		defer cancel()
		call = &grpcCall{ctx: ctx, budget: budget, source: source, deadline: start.Add(budget), timer: timer}
	}

	out := upstreamRequest(ctx, r)
	out.Body = markClientErrors(out.Body) // handler.go
	applyRequestFilters(out, &act.filters, matchedPath{})
	applyRequestFilters(out, &b.filters, matchedPath{})
	// The backend learns how long the call has left.
	if remaining, bounded := call.remaining(); !calls.Tell(out.Header, r.Header, remaining, bounded) {
		s.expire(w, call, false)
		return
	}
	pr := &proxyRequest{w: w, r: r, out: out, act: act, b: b}
	s.startMirrors(pr) // handler.go

	endpoint := b.pickEndpoint()
	if endpoint == "" {
		s.fail(w, true, http.StatusServiceUnavailable, grpcUnavailable, "backend "+b.name+" has no ready endpoints")
		return
	}
	if !pr.slot.acquire(b, s.limits.MaxBackendRequests) { // limits.go
		s.overloaded(w, true, b)
		return
	}
	defer pr.slot.release()
	defer holdsSlot(w, &pr.slot)() // clientwrite.go: a stalled write frees it
	resp, err := s.forward(ctx, out, b, endpoint, false)
	if err != nil {
		switch {
		case call.expired():
			s.expire(w, call, false)
		case r.Context().Err() != nil:
			// The client went away; nobody to answer.
		default:
			if status, msg, ok := clientFailure(err); ok {
				s.fail(w, true, status, grpcInternal, msg)
				return
			}
			s.log.V(1).Info("upstream request failed", "backend", b.name, "endpoint", endpoint, "error", err.Error())
			s.parts.Relay.GRPCEndedEarly(w, grpcUnavailable, "upstream request failed") // parts.go
		}
		return
	}
	resp.Body = timer.Watch(ctx, resp.Body)
	if call != nil {
		// The transport stops a response body read on cancellation only
		// once its request body is done; a bidirectional call whose client
		// is still sending would wait for the next message. Closing the
		// body cancels the upstream stream at once.
		stop := context.AfterFunc(ctx, func() { resp.Body.Close() })
		defer stop()
	}
	s.relayGRPC(pr, resp, call)
}

// relayGRPC relays an upstream gRPC response: headers at once, then every
// message as soon as it is complete, then trailers. When the call's budget
// runs out first, the call ends with the expiry status in trailers instead;
// nothing the upstream sends after the deadline is relayed.
func (s *Server) relayGRPC(pr *proxyRequest, resp *http.Response, call *grpcCall) {
	w, r := pr.w, pr.r
	defer resp.Body.Close()
	if call.expired() {
		s.expire(w, call, false)
		return
	}
	h := w.Header()
	copyResponseHeader(h, resp, &pr.act.filters, &pr.b.filters) // proxy.go
	w.WriteHeader(resp.StatusCode)
	if resp.ContentLength != 0 {
		// The client gets the headers before the first message, however
		// long that takes. A trailers-only response (no body) must not be
		// flushed: its headers have to carry the end of the stream.
		_ = http.NewResponseController(w).Flush()
	}

	// Not stored in resp.Body, which serveGRPC closes when the call ends.
	body := s.parts.Relay.Body(resp.Body) // parts.go
	var midMessage bool
	var err error
	if isGRPCContentType(resp.Header.Get("Content-Type")) {
		midMessage, err = copyGRPCMessages(r.Context(), call, w, body)
	} else {
		// Not gRPC (an HTTP error page, say): relay the bytes as they come.
		err = copyBody(w, body, true)
		midMessage = err != nil
	}
	if call.expired() && !midMessage {
		s.expire(w, call, true)
		return
	}
	if err != nil {
		if r.Context().Err() == nil {
			s.log.V(1).Info("relaying the gRPC response failed", "error", err.Error())
		}
		// Reset the stream after what was relayed, so the client sees
		// the call is incomplete (parts.go: abortRelayed).
		s.parts.Relay.GRPCAborted(w, h, r.Context().Err() == nil && !call.expired())
		return
	}
	for k, vv := range resp.Trailer {
		h[http.TrailerPrefix+k] = vv
	}
}

// expire ends a call whose budget ran out: a trailers-only response when no
// response headers were sent, else trailers after what was relayed.
func (s *Server) expire(w http.ResponseWriter, call *grpcCall, headersSent bool) {
	code := s.parts.Calls.ExpiryCode() // parts.go
	msg := fmt.Sprintf("gateway: the call exceeded its %v budget, set by %s", call.budget, call.source)
	s.log.V(1).Info("gRPC call budget expired", "budget", call.budget, "source", call.source.String(), "headersSent", headersSent)
	if !headersSent {
		s.parts.Relay.GRPCEndedEarly(w, code, msg) // parts.go
		return
	}
	h := w.Header()
	h.Set(http.TrailerPrefix+"Grpc-Status", strconv.Itoa(code))
	h.Set(http.TrailerPrefix+"Grpc-Message", url.PathEscape(msg))
}

// maxBufferedMessage bounds the gRPC message the relay holds whole before
// writing it. Larger messages are streamed through as they arrive; if the
// budget runs out in the middle of one, the stream can only be reset.
const maxBufferedMessage = 1 << 20

// grpcPrefixLen is the length of a gRPC message prefix: a compressed flag
// and a 4-byte big-endian length.
const grpcPrefixLen = 5

// copyGRPCMessages copies length-prefixed gRPC messages from body to w,
// flushing each. Messages up to maxBufferedMessage are read whole before any
// byte of them is written, and none is written once clientCtx or the call's
// budget has ended. midMessage reports that the copy stopped after writing
// part of a message. A clean end of body between messages is a nil error.
func copyGRPCMessages(clientCtx context.Context, call *grpcCall, w http.ResponseWriter, body io.Reader) (midMessage bool, err error) {
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf := *bp
	flusher, _ := w.(http.Flusher)
	stopped := func() error {
		if call.expired() {
			return errCallBudget
		}
		return clientCtx.Err()
	}
	for {
		if _, err := io.ReadFull(body, buf[:grpcPrefixLen]); err != nil {
			if errors.Is(err, io.EOF) {
				return false, nil
			}
			return false, err
		}
		n := int(binary.BigEndian.Uint32(buf[1:grpcPrefixLen]))
		if n > maxBufferedMessage {
			if err := stopped(); err != nil {
				return false, err
			}
			if _, err := w.Write(buf[:grpcPrefixLen]); err != nil {
				return true, err
			}
			if err := copyN(w, flusher, body, int64(n), buf); err != nil {
				return true, err
			}
			continue
		}
		msg := buf
		if grpcPrefixLen+n > len(buf) {
			msg = make([]byte, grpcPrefixLen+n)
			copy(msg, buf[:grpcPrefixLen])
		}
		msg = msg[:grpcPrefixLen+n]
		if _, err := io.ReadFull(body, msg[grpcPrefixLen:]); err != nil {
			return false, err
		}
		if err := stopped(); err != nil {
			return false, err
		}
		if _, err := w.Write(msg); err != nil {
			return false, err
		}
		if flusher != nil {
			flusher.Flush()
		}
	}
}

// copyN copies exactly n bytes from body to w through buf, flushing each
// chunk.
func copyN(w io.Writer, flusher http.Flusher, body io.Reader, n int64, buf []byte) error {
	for n > 0 {
		chunk := buf
		if int64(len(chunk)) > n {
			chunk = chunk[:n]
		}
		k, err := body.Read(chunk)
		if k > 0 {
			if _, werr := w.Write(chunk[:k]); werr != nil {
				return werr
			}
			if flusher != nil {
				flusher.Flush()
			}
			n -= int64(k)
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return io.ErrUnexpectedEOF
			}
			return err
		}
	}
	return nil
}

// isGRPCContentType reports whether ct is application/grpc or
// application/grpc+codec (parameters allowed).
func isGRPCContentType(ct string) bool {
	rest, ok := strings.CutPrefix(ct, "application/grpc")
	return ok && (rest == "" || rest[0] == '+' || rest[0] == ';')
}
