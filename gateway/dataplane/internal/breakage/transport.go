package breakage

// Transport broken: each type wraps the data plane's own part.Transport.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"

	"github.com/gatewitness/gatewitness/gateway/dataplane/internal/part"
)

// resends lets the transport resend a request by itself, as a plain
// httputil.ReverseProxy over net/http's transport does
// (Set.TransportResends).
type resends struct{ part.Transport }

func (resends) ForbidResend(*http.Request, bool) {}

// buffersRequests reads a whole request body before sending the request
// upstream (Relay.BuffersRequests).
type buffersRequests struct{ part.Transport }

func (t buffersRequests) RoundTrip(req *http.Request, h2c bool) (*http.Response, error) {
	if err := bufferRequest(req); err != nil {
		return nil, err
	}
	return t.Transport.RoundTrip(req, h2c)
}

// bufferRequest reads req's body whole and sends the copy with its length.
// As a buffering proxy's own timeouts do, req's context bounds the wait:
// when it ends first, the body is closed and its cause returned.
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
