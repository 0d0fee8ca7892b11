package dataplane

// Test-only breakages: the helpers of the hook points (internal/breakage)
// that need more than a branch, so that gatewitness's negative checks can
// show each conformance test fails against the data plane it is meant to
// catch (conformance/tests/breakages_test.go declares them). Only package
// dataplanetest can turn the hook points on; a Server from New has them
// all off.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"
)

// inactivityKey is the context key of the inactivity timers
// (breakage.Set.InactivityTimeouts) that bound a request.
type inactivityKey struct{}

// withInactivity returns ctx bounded by an inactivity timer of d that
// cancels it with cause; the timer is restarted by every response read
// that watchInactivity wraps under the returned context.
func withInactivity(ctx context.Context, d time.Duration, cause error) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	it := &idleTimer{d: d, cancel: cancel}
	it.t = time.AfterFunc(d, func() { cancel(cause) })
	timers, _ := ctx.Value(inactivityKey{}).([]*idleTimer)
	ctx = context.WithValue(ctx, inactivityKey{}, append(slices.Clone(timers), it))
	return ctx, func() { it.stop(); cancel(context.Canceled) }
}

// watchInactivity returns body wrapped so that every read that returns
// bytes restarts each inactivity timer of ctx; without timers, body.
func watchInactivity(ctx context.Context, body io.ReadCloser) io.ReadCloser {
	timers, _ := ctx.Value(inactivityKey{}).([]*idleTimer)
	for _, it := range timers {
		body = it.watch(body)
	}
	return body
}

// idempotent reports whether a request with this method may be retried
// when non-idempotent retries are broken off (RFC 9110 section 9.2.2).
func idempotent(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace, http.MethodPut, http.MethodDelete:
		return true
	}
	return false
}

// replayable reports whether out has a body of a known length of at most
// limit bytes: one the reference data plane keeps for a retry.
func replayable(out *http.Request, limit int64) bool {
	return out.Body != nil && out.Body != http.NoBody && out.ContentLength > 0 && out.ContentLength <= limit
}

// arrivingBody is a request body (breakage.Set.BodyNotHeld) read from the
// client in the background as it arrives, and streamed to the first
// attempt from what has arrived so far. It remembers whether the whole
// body had arrived when the attempt began to send it: a data plane that
// does not buffer requests has only then what it could resend.
type arrivingBody struct {
	mu      sync.Mutex
	grew    *sync.Cond
	buf     []byte
	n       int   // bytes of buf read from the client so far
	err     error // the client's read error, or io.EOF once n == len(buf)
	pos     int   // bytes of buf streamed to the attempt
	sending bool  // the attempt has begun to read the body
	whole   bool  // the whole body had arrived when it began
}

// streamArriving replaces out's body (of a known length, see replayable)
// with one streamed as it arrives, and returns the arrivingBody that
// tells, after the first attempt, whether it could be resent.
func streamArriving(out *http.Request) *arrivingBody {
	a := &arrivingBody{buf: make([]byte, out.ContentLength)}
	a.grew = sync.NewCond(&a.mu)
	src := out.Body
	go func() {
		for {
			a.mu.Lock()
			n := a.n
			a.mu.Unlock()
			if n == len(a.buf) {
				a.finish(0, io.EOF)
				return
			}
			// Only this goroutine writes buf[n:]; readers stop at a.n.
			m, err := src.Read(a.buf[n:])
			if err == io.EOF && n+m < len(a.buf) {
				err = io.ErrUnexpectedEOF
			}
			if err != nil && err != io.EOF {
				a.finish(m, err)
				return
			}
			a.finish(m, nil)
		}
	}()
	out.Body = a
	return a
}

// finish records m more bytes read from the client, and err if not nil.
func (a *arrivingBody) finish(m int, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.n += m
	if err != nil && a.err == nil {
		a.err = err
	}
	a.grew.Broadcast()
}

// Read streams the body to the attempt as it arrives.
func (a *arrivingBody) Read(p []byte) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.sending {
		a.sending, a.whole = true, a.n == len(a.buf)
	}
	for a.pos == a.n && a.err == nil {
		a.grew.Wait()
	}
	if a.pos == a.n {
		return 0, a.err
	}
	m := copy(p, a.buf[a.pos:a.n])
	a.pos += m
	return m, nil
}

// Close leaves the client's body to the server, which closes it when the
// exchange ends.
func (a *arrivingBody) Close() error { return nil }

// heldBeforeSend returns the body to resend, and true, if the whole body
// had arrived when the first attempt began to send it (or, if it never
// began, has arrived by now); otherwise false: the body is not kept.
func (a *arrivingBody) heldBeforeSend() ([]byte, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	whole := a.whole
	if !a.sending {
		whole = a.n == len(a.buf)
	}
	if !whole {
		return nil, false
	}
	return a.buf, true
}

// reloadHooks restarts connection timers at each Apply, as a data plane
// that reloads to apply configuration does (breakage.Set.ReloadRestartsTimers).
type reloadHooks struct {
	mu    sync.Mutex
	next  int
	hooks map[int]func()
}

// add registers f, to be called at each Apply, and returns its removal.
func (h *reloadHooks) add(f func()) (remove func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.hooks == nil {
		h.hooks = map[int]func(){}
	}
	id := h.next
	h.next++
	h.hooks[id] = f
	return func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		delete(h.hooks, id)
	}
}

// fire calls every registered function.
func (h *reloadHooks) fire() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, f := range h.hooks {
		f()
	}
}

// restartWaits returns an http.Server ConnState hook that keeps each
// connection waiting for a request (a new one, or one idle between
// requests) registered, so that each Apply gives it the whole client
// timeout d again, as a fresh worker would.
func (h *reloadHooks) restartWaits(d time.Duration) func(net.Conn, http.ConnState) {
	var mu sync.Mutex
	waiting := map[net.Conn]func(){}
	return func(c net.Conn, st http.ConnState) {
		mu.Lock()
		defer mu.Unlock()
		if remove, ok := waiting[c]; ok {
			remove()
			delete(waiting, c)
		}
		if st == http.StateNew || st == http.StateIdle {
			waiting[c] = h.add(func() { _ = c.SetReadDeadline(time.Now().Add(d)) })
		}
	}
}

// tunnelRestarts returns what tunnel registers its restart with, when
// the data plane is broken so (nil otherwise).
func (s *Server) tunnelRestarts() func(func()) func() {
	if !s.breakages.ReloadRestartsTimers {
		return nil
	}
	return s.reloads.add
}

// maxBufferedWhole bounds what bufferWhole and bufferRequest hold.
const maxBufferedWhole = 16 << 20

// bufferWhole reads body to its end (or its error, or maxBufferedWhole
// bytes) before returning anything of it (breakage.Relay.BuffersResponses):
// the returned body yields the bytes read, then the error that ended them.
func bufferWhole(body io.ReadCloser) io.ReadCloser {
	data, err := io.ReadAll(io.LimitReader(body, maxBufferedWhole))
	return struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(data), errReader{err}), body}
}

// bufferRequest reads req's body whole before the request goes upstream
// (breakage.Relay.BuffersRequests), and sends the copy with its length. As
// a buffering proxy's own timeouts do, req's context bounds the wait: when
// it ends first, the body is closed and its cause returned.
func bufferRequest(req *http.Request) error {
	if req.Body == nil || req.Body == http.NoBody {
		return nil
	}
	type read struct {
		data []byte
		err  error
	}
	done := make(chan read, 1)
	body := req.Body
	go func() {
		data, err := io.ReadAll(io.LimitReader(body, maxBufferedWhole))
		done <- read{data, err}
	}()
	var got read
	select {
	case got = <-done:
	case <-req.Context().Done():
		body.Close() // ends the read above
		return fmt.Errorf("buffering the request body: %w", context.Cause(req.Context()))
	}
	body.Close()
	if got.err != nil {
		return fmt.Errorf("buffering the request body: %w", got.err)
	}
	req.Body, req.ContentLength = io.NopCloser(bytes.NewReader(got.data)), int64(len(got.data))
	req.GetBody = nil
	return nil
}
