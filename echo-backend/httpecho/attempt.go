package httpecho

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/gatewitness/gatewitness/contract/echowire"
	"github.com/gatewitness/gatewitness/echo-backend/fault"
	"github.com/gatewitness/gatewitness/echo-backend/h2tap"
	"github.com/gatewitness/gatewitness/echo-backend/ledger"
	"github.com/gatewitness/gatewitness/internal/ctxsleep"
)

const (
	streamHeader      = h2tap.StreamHeader
	grpcTimeoutHeader = "gatewitness-grpc-timeout"
)

// flushWaitLimit bounds the wait for flushed HTTP/2 frames to leave the tap
// before a reset; it is only reached when the client stops reading.
const flushWaitLimit = 5 * time.Second

// attempt is one request being answered under the fault vocabulary.
type attempt struct {
	h      *handler
	w      http.ResponseWriter
	r      *http.Request
	rc     http.ResponseController // by value: one allocation less
	ledger *ledger.Handle
	id     string
	act    fault.Action
	status int  // status to answer when the action sets none
	noBody bool // answer headers only (/status/N)

	echoBuf *[]byte // from echoBufs, returned when the attempt is done

	headersSent bool
	bodySent    int64 // body bytes written so far

	connID   uint64 // h2tap connection id (HTTP/2 only)
	streamID uint32 // HTTP/2 stream id
}

// serveEcho answers any path echo-basic echoes.
func (h *handler) serveEcho(w http.ResponseWriter, r *http.Request) {
	if h.opts.Log != nil {
		logRequest(h.opts.Log, r)
	}
	h.serveAttempt(w, r, route{status: http.StatusOK})
}

var statusPath = regexp.MustCompile(`^/status/(\d{3})$`)

// serveStatus answers /status/NNN with status NNN and no body, as
// echo-basic; faults and the ledger apply as for any echo.
func (h *handler) serveStatus(w http.ResponseWriter, r *http.Request) {
	m := statusPath.FindStringSubmatch(r.URL.Path)
	code := 0
	if m != nil {
		code, _ = strconv.Atoi(m[1])
	}
	if code < 200 || code > 599 {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("path %q: accepted: /status/NNN with NNN an HTTP status from 200 to 599", r.URL.Path))
		return
	}
	h.serveAttempt(w, r, route{status: code, noBody: true})
}

// requestID returns the id of r: the header, else the query parameter.
func requestID(r *http.Request) string {
	if v := r.Header.Get(echowire.IDHeader); v != "" {
		return v
	}
	return queryGet(r.URL.RawQuery, echowire.IDQuery)
}

// specText returns the fault spec of r: the header, else the query
// parameter.
func specText(r *http.Request) string {
	if v := r.Header.Get(echowire.FaultHeader); v != "" {
		return v
	}
	return queryGet(r.URL.RawQuery, echowire.FaultQuery)
}

// readBody reads the whole request body, up to MaxBodyBytes; tooBig
// reports a larger body (of which only the first bytes were read). The body
// must have arrived by deadline: the connection's (or HTTP/2 stream's) read
// deadline is set to it for the read, and cleared once the body is read, so
// that it does not cut the connection while a delayed answer is pending.
func readBody(r *http.Request, rc *http.ResponseController, deadline time.Time) (body []byte, tooBig bool, err error) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, false, nil
	}
	deadlineSet := rc.SetReadDeadline(deadline) == nil
	body, err = io.ReadAll(io.LimitReader(r.Body, MaxBodyBytes+1))
	if deadlineSet && err == nil {
		_ = rc.SetReadDeadline(time.Time{})
	}
	if len(body) > MaxBodyBytes {
		return body[:MaxBodyBytes], true, nil
	}
	return body, false, err
}

// bodyError says how to answer a request whose body could not be read:
// 408 when it did not arrive in time, 400 when its framing is broken (a
// malformed chunk). ok is false when the client went away (closed the
// connection or reset the stream), leaving nobody to answer.
func bodyError(r *http.Request, err error, timeout time.Duration) (code int, msg string, ok bool) {
	var ne net.Error
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		return http.StatusRequestTimeout, fmt.Sprintf("request body: not received within the read timeout (%v)", timeout), true
	case r.Context().Err() != nil, errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed), errors.As(err, &ne):
		return 0, "", false
	}
	return http.StatusBadRequest, fmt.Sprintf("request body: %v", err), true
}

// route is what a route answers when the fault spec says nothing else.
type route struct {
	status int  // status of a normal answer
	noBody bool // answer headers only (/status/N)

	// id and choose, when choose is set, replace the request id and the
	// fault spec: choose returns the action for an attempt number and
	// whether to answer without a body (/retry).
	id     string
	choose func(number int) (act fault.Action, noBody bool)
}

// serveAttempt records one attempt in the ledger and answers it as the
// fault spec (or rt.choose) says.
func (h *handler) serveAttempt(w http.ResponseWriter, r *http.Request, rt route) {
	arrived := time.Now()
	a := &attempt{h: h, w: w, r: r, rc: *http.NewResponseController(w), status: rt.status, noBody: rt.noBody}
	defer a.releaseEchoBuf()

	var spec *fault.Spec
	var specErr error
	if rt.choose != nil {
		a.id = rt.id
	} else {
		a.id = requestID(r)
		// No spec (most requests) is a nil *fault.Spec, whose For gives
		// the zero Action, as a parsed empty spec's does.
		if text := specText(r); text != "" {
			spec, specErr = fault.Parse(text, h.opts.Limits)
		}
	}
	var legacyDelay time.Duration
	var delayErr error
	if d := queryGet(r.URL.RawQuery, "delay"); d != "" {
		legacyDelay, delayErr = parseDelay("delay", d, h.opts.Limits)
	}
	body, tooBig, bodyErr := readBody(r, &a.rc, arrived.Add(h.opts.Timeouts.Read))

	rec := ledger.Attempt{
		Arrived:   arrived,
		Listener:  h.opts.Listener,
		Protocol:  r.Proto,
		Method:    r.Method,
		Path:      r.RequestURI,
		BodyBytes: int64(len(body)),
	}
	ci := connFrom(r.Context())
	if ci != nil {
		rec.ConnRequest = int(ci.requests.Add(1)) // every request counts
	}
	if a.id != "" {
		// Begin keeps the record of an attempt with an id only; spare the
		// copy, the digest and the label for the others.
		rec.Headers = visibleHeaders(r.Header)
		rec.BodySHA256 = digest(body)
		if ci != nil {
			rec.Conn = ci.label
		} else {
			rec.Conn = "c0 " + r.RemoteAddr
		}
	}
	if r.ProtoMajor == 2 {
		if cid, sid, ok := h2tap.ParseStreamHeader(r.Header.Get(streamHeader)); ok {
			a.connID, a.streamID = cid, sid
			rec.Stream = sid
		}
	}
	a.ledger = h.opts.Ledger.Begin(a.id, rec)

	switch {
	case specErr != nil:
		a.reject(http.StatusBadRequest, specErr.Error())
		return
	case delayErr != nil:
		a.reject(http.StatusBadRequest, delayErr.Error())
		return
	case tooBig:
		a.reject(http.StatusRequestEntityTooLarge, fmt.Sprintf("request body: larger than the %d bytes accepted", MaxBodyBytes))
		return
	case bodyErr != nil:
		if code, msg, ok := bodyError(r, bodyErr, h.opts.Timeouts.Read); ok {
			// The connection cannot serve another request after a body
			// it could not read; say so.
			a.w.Header().Set("Connection", "close")
			a.reject(code, msg)
			return
		}
		// The client went away while sending the body.
		a.ledger.Cancelled(time.Time{})
		return
	}

	if rt.choose != nil {
		a.act, a.noBody = rt.choose(a.ledger.Number())
	} else {
		a.act = spec.For(a.ledger.Number())
	}
	// echo-basic's ?delay= applies to answers the route would echo.
	if a.act.Delay == 0 && (rt.choose == nil || !a.act.Faulted()) {
		a.act.Delay = legacyDelay
	}
	if f := a.act.String(); f != "" {
		a.ledger.Update(func(at *ledger.Attempt) { at.Fault = f })
	}
	a.run()
}

// parseDelay parses an echo-basic style delay parameter.
func parseDelay(name, v string, lim fault.Limits) (time.Duration, error) {
	max := lim.MaxDelay
	if max <= 0 {
		max = fault.DefaultLimits.MaxDelay
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 || d > max {
		return 0, fmt.Errorf("query parameter %s=%q: accepted: a Go duration such as 1500ms, from 0 to %v", name, v, max)
	}
	return d, nil
}

// emptyDigest is the digest of an empty body, the body of most requests.
var emptyDigest = hexSHA256(nil)

// digest is the hex SHA-256 of a request body.
func digest(b []byte) string {
	if len(b) == 0 {
		return emptyDigest
	}
	return hexSHA256(b)
}

func hexSHA256(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// reject answers a bad request and records it.
func (a *attempt) reject(code int, msg string) {
	writeError(a.w, code, msg)
	a.ledger.Update(func(at *ledger.Attempt) { at.Status = code })
	a.ledger.End(ledger.Rejected, time.Time{})
}

// errCancelled marks a wait or write the peer interrupted.
var errCancelled = errors.New("peer went away")

// wait waits d, or until the request is cancelled.
func (a *attempt) wait(d time.Duration) error {
	if d <= 0 {
		return nil
	}
	if !ctxsleep.Sleep(a.r.Context(), d) {
		return errCancelled
	}
	return nil
}

// run carries out a.act. A failure to wait or write means the peer went
// away: the attempt is then recorded as cancelled. A fault that cannot be
// carried out (a transport that cannot be hijacked or tapped) is answered
// 500 naming the reason if no header was sent yet, and otherwise aborts the
// answer as net/http does for a failed handler.
func (a *attempt) run() {
	err := a.respond()
	switch {
	case err == nil:
	case errors.Is(err, errCancelled):
		a.ledger.Cancelled(time.Time{})
	case !a.headersSent:
		msg := fmt.Sprintf("cannot carry out fault %q: %v", a.act.String(), err)
		writeError(a.w, http.StatusInternalServerError, msg)
		a.ledger.Update(func(at *ledger.Attempt) { at.Status = http.StatusInternalServerError })
		a.ledger.End(ledger.Answered, time.Time{})
	default:
		a.ledger.End(ledger.Reset, time.Time{})
		panic(http.ErrAbortHandler)
	}
}

func (a *attempt) respond() error {
	act := a.act
	if err := a.wait(act.Delay); err != nil {
		return err
	}

	switch {
	case act.Reset == fault.ResetBeforeHeaders:
		return a.reset()
	case act.GoAway:
		return a.goAway()
	case act.Close:
		return a.closeConn()
	}

	status := a.status
	if act.Status != 0 {
		status = act.Status
	}
	var body []byte
	if !a.noBody {
		var err error
		if body, err = a.echoBody(); err != nil {
			writeError(a.w, http.StatusInternalServerError, err.Error())
			a.ledger.Update(func(at *ledger.Attempt) { at.Status = http.StatusInternalServerError })
			a.ledger.End(ledger.Answered, time.Time{})
			return nil
		}
	}
	chunks := 1
	if act.Chunks > 1 {
		chunks = act.Chunks
		// Each write must carry at least one byte; JSON allows trailing
		// whitespace, so pad a short body.
		if len(body) < chunks && !a.noBody {
			body = append(body, bytes.Repeat([]byte(" "), chunks-len(body))...)
		}
	}

	// A request that accepts only server-sent events gets its echo as
	// events, one per chunk (sse.go).
	sse := !a.noBody && acceptsEventStream(a.r.Header)
	var parts [][]byte
	if sse {
		body, parts = eventStream(body, chunks)
	}

	hdr := a.w.Header()
	setEchoHeaders(a.w, a.r.Header)
	// Our values share one array: one allocation rather than one per
	// header. Each has a capacity of one, so an append elsewhere copies.
	vals := make([]string, 3)
	if !a.noBody {
		vals[0], vals[1] = "application/json", "nosniff"
		if sse {
			vals[0] = eventStreamType
			hdr.Set("Cache-Control", "no-cache")
		}
		hdr["Content-Type"], hdr["X-Content-Type-Options"] = vals[0:1:1], vals[1:2:2]
	}
	for _, t := range act.Trailers {
		hdr.Add("Trailer", t.Name)
	}
	if len(act.Trailers) == 0 && chunks == 1 && bodyAllowed(status, a.r.Method) {
		// Known length: the client sees a truncated body on a mid-body
		// reset, and HTTP/1.1 answers keep echo-basic's framing.
		vals[2] = strconv.Itoa(len(body))
		hdr["Content-Length"] = vals[2:3:3]
	}
	a.ledger.Update(func(at *ledger.Attempt) { at.Status = status })

	if act.Reset == fault.ResetNone && act.BodyDelay == 0 && chunks == 1 && len(act.Trailers) == 0 {
		// Nothing happens between the headers and the body: send them in
		// one write, which saves a system call (half the server's CPU in
		// hack/perf's profile) and a packet per answer.
		a.w.WriteHeader(status)
		a.headersSent = true
		if !bodyAllowed(status, a.r.Method) {
			body = nil
		}
		if err := a.write(body); err != nil {
			return err
		}
		a.ledger.HeadersSent(time.Time{})
		a.ledger.End(ledger.Answered, time.Time{})
		return nil
	}

	a.w.WriteHeader(status)
	a.headersSent = true
	if err := a.flush(); err != nil {
		return err
	}
	a.ledger.HeadersSent(time.Time{})

	if act.Reset == fault.ResetAfterHeaders {
		return a.reset()
	}
	if err := a.wait(act.BodyDelay); err != nil {
		return err
	}
	if !bodyAllowed(status, a.r.Method) {
		body = nil
	}

	if act.Reset == fault.ResetMidBody {
		// Send the first half (at least a byte when there is one), then abort.
		if len(body) > 0 {
			if err := a.write(body[:max(len(body)/2, 1)]); err != nil {
				return err
			}
		}
		return a.reset()
	}

	for i := range chunks {
		part := body[i*len(body)/chunks : (i+1)*len(body)/chunks]
		if parts != nil {
			part = parts[i]
		}
		if i > 0 {
			if err := a.wait(act.Interval); err != nil {
				return err
			}
		}
		if err := a.write(part); err != nil {
			return err
		}
	}
	for _, t := range act.Trailers {
		hdr.Set(t.Name, t.Value)
	}
	a.ledger.End(ledger.Answered, time.Time{})
	return nil
}

// bodyAllowed reports whether an answer of this status to this method
// carries a body.
func bodyAllowed(status int, method string) bool {
	if method == http.MethodHead {
		return false
	}
	return status >= 200 && status != http.StatusNoContent && status != http.StatusNotModified
}

// write writes p and flushes it to the client.
func (a *attempt) write(p []byte) error {
	if len(p) > 0 {
		n, err := a.w.Write(p)
		a.bodySent += int64(n)
		if err != nil {
			return errCancelled
		}
	}
	return a.flush()
}

func (a *attempt) flush() error {
	if err := a.rc.Flush(); err != nil {
		return errCancelled
	}
	return nil
}

// echoBody is the JSON echo of the request.
func (a *attempt) echoBody() ([]byte, error) {
	r := a.r
	e := Echo{
		Path:     r.RequestURI,
		Host:     r.Host,
		Method:   r.Method,
		Proto:    r.Proto,
		Headers:  r.Header, // only read; the helper headers are skipped below
		HTTPPort: a.h.opts.HTTPPort,
		Info:     a.h.opts.Pod,
	}
	if a.id != "" {
		e.RequestID = a.id
		e.Attempt = a.ledger.Number()
	}
	if r.TLS == nil {
		// The body is copied into the connection's buffer by the writes,
		// so its buffer goes back to echoBufs when the attempt is done.
		bp := echoBufs.Get().(*[]byte)
		*bp = e.appendJSON((*bp)[:0], isHelperHeader)
		a.echoBuf = bp
		return *bp, nil
	}
	e.Headers = visibleHeaders(r.Header)
	e.TLS = tlsInfo(r.TLS)
	b, err := json.MarshalIndent(e, "", " ")
	if err != nil {
		return nil, fmt.Errorf("encoding the echo: %w", err)
	}
	return b, nil
}

// echoBufs holds the buffers echoes are encoded in.
var echoBufs = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// maxPooledEcho is the largest echo buffer put back in echoBufs; the echo
// of a request with larger headers is encoded in a buffer that is then
// dropped.
const maxPooledEcho = 16 << 10

// releaseEchoBuf returns the echo's buffer, if any, to echoBufs. Nothing
// may use the body after it.
func (a *attempt) releaseEchoBuf() {
	if a.echoBuf != nil && cap(*a.echoBuf) <= maxPooledEcho {
		echoBufs.Put(a.echoBuf)
	}
	a.echoBuf = nil
}

// tap returns the h2tap connection an HTTP/2 request came on.
func (a *attempt) tap() (*h2tap.Conn, error) {
	if a.streamID == 0 {
		return nil, errors.New("HTTP/2 request without the h2tap stream header: serve this port through h2tap")
	}
	c, ok := h2tap.Lookup(a.connID)
	if !ok {
		return nil, fmt.Errorf("h2tap connection %d is gone", a.connID)
	}
	return c, nil
}

// reset aborts the exchange: RST_STREAM on HTTP/2, a TCP RST on HTTP/1.1.
func (a *attempt) reset() error {
	if a.r.ProtoMajor == 2 {
		c, err := a.tap()
		if err != nil {
			// Without the tap, the closest is net/http's own reset of an
			// aborted handler (always INTERNAL_ERROR).
			a.ledger.Update(func(at *ledger.Attempt) { at.Fault += " (untapped: RST_STREAM INTERNAL_ERROR)" })
			a.ledger.End(ledger.Reset, time.Time{})
			panic(http.ErrAbortHandler)
		}
		if a.headersSent {
			// Let what the handler flushed leave the tap first, or the
			// reset would drop it too. If it cannot (the client stopped
			// reading or went away), reset all the same.
			ctx, cancel := context.WithTimeout(a.r.Context(), flushWaitLimit)
			c.WaitWritten(ctx, a.streamID, true, a.bodySent)
			cancel()
		}
		if err := c.ResetStream(a.streamID, a.act.ResetCode); err != nil {
			return fmt.Errorf("resetting stream %d: %w", a.streamID, err)
		}
		a.ledger.End(ledger.Reset, time.Time{})
		return nil
	}
	conn, _, err := a.rc.Hijack()
	if err != nil {
		return fmt.Errorf("hijacking the connection to reset it: %w", err)
	}
	raw := rawConnOf(conn)
	if tc := tcpConnOf(conn); tc != nil {
		tc.SetLinger(0)
	}
	raw.Close()
	conn.Close()
	a.ledger.End(ledger.Reset, time.Time{})
	return nil
}

// goAway sends GOAWAY on HTTP/2 with the stream before this one as the last
// stream id: the tap drops this stream's answer, lets the earlier streams
// complete, then closes the connection. On HTTP/1.1 it closes the
// connection.
func (a *attempt) goAway() error {
	if a.r.ProtoMajor != 2 {
		if err := a.hijackClose(); err != nil {
			return err
		}
		a.ledger.End(ledger.GoAway, time.Time{})
		return nil
	}
	c, err := a.tap()
	if err != nil {
		return err
	}
	last := uint32(0)
	if a.streamID > 2 {
		last = a.streamID - 2
	}
	if err := c.GoAway(last, a.act.ResetCode); err != nil { // default NO_ERROR
		return fmt.Errorf("sending GOAWAY: %w", err)
	}
	a.ledger.End(ledger.GoAway, time.Time{})
	return nil
}

// closeConn closes the connection without an answer: gracefully (FIN) on
// HTTP/1.1, the whole tapped connection on HTTP/2.
func (a *attempt) closeConn() error {
	if a.r.ProtoMajor == 2 {
		c, err := a.tap()
		if err != nil {
			return err
		}
		c.Close()
	} else if err := a.hijackClose(); err != nil {
		return err
	}
	a.ledger.End(ledger.Closed, time.Time{})
	return nil
}

func (a *attempt) hijackClose() error {
	conn, _, err := a.rc.Hijack()
	if err != nil {
		return fmt.Errorf("hijacking the connection to close it: %w", err)
	}
	return conn.Close()
}
