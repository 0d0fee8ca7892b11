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
	"net/http"
	"slices"
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
