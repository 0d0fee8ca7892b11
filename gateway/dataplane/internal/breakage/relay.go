package breakage

// Relay broken: each type wraps the data plane's own part.Relay and
// changes how a response, a gRPC stream or a tunnel is relayed.

import (
	"bytes"
	"io"
	"net"
	"net/http"

	"github.com/gatewitness/gatewitness/gateway/dataplane/internal/part"
)

// completesTruncated re-frames every response body and ends one whose
// backend failed mid-way as if it were complete (Relay.CompletesTruncated).
type completesTruncated struct{ part.Relay }

func (r completesTruncated) Framing(h http.Header, stream bool) bool {
	h.Del("Content-Length")
	r.Relay.Framing(h, true)
	return true
}

func (r completesTruncated) Aborted(w http.ResponseWriter, backendFailed bool) {
	if backendFailed {
		return // ended as if complete
	}
	r.Relay.Aborted(w, backendFailed)
}

// dropsOnAbort aborts a response whose backend failed mid-way without
// sending what net/http still buffers (Relay.DropsOnAbort).
type dropsOnAbort struct{ part.Relay }

func (r dropsOnAbort) Aborted(w http.ResponseWriter, backendFailed bool) {
	if backendFailed {
		panic(http.ErrAbortHandler) // what net/http still buffers is lost
	}
	r.Relay.Aborted(w, backendFailed)
}

// bareResetOverHTTP2 resets an HTTP/2 stream whose backend failed mid-way
// without sending what net/http still buffers (Relay.BareResetOverHTTP2).
type bareResetOverHTTP2 struct{ part.Relay }

func (r bareResetOverHTTP2) Aborted(w http.ResponseWriter, backendFailed bool) {
	if backendFailed && !overHTTP1(w) {
		panic(http.ErrAbortHandler) // the stream is reset, nothing sent
	}
	r.Relay.Aborted(w, backendFailed)
}

// endsTruncatedHTTP2Stream ends an HTTP/2 stream whose backend failed
// mid-way as if it were complete, Content-Length and all
// (Relay.EndsTruncatedHTTP2Stream): net/http's HTTP/2 server sends
// END_STREAM for a handler that returns short of its Content-Length.
type endsTruncatedHTTP2Stream struct{ part.Relay }

func (r endsTruncatedHTTP2Stream) Aborted(w http.ResponseWriter, backendFailed bool) {
	if backendFailed && !overHTTP1(w) {
		return // ended with END_STREAM
	}
	r.Relay.Aborted(w, backendFailed)
}

// overHTTP1 reports whether w, unwrapped as http.ResponseController
// unwraps it, is an HTTP/1.x response: net/http's HTTP/1 writer can be
// hijacked, its HTTP/2 writer cannot.
func overHTTP1(w http.ResponseWriter) bool {
	for {
		if _, ok := w.(http.Hijacker); ok {
			return true
		}
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return false
		}
		w = u.Unwrap()
	}
}

// grpcResetAsOK ends a gRPC response whose backend stream failed mid-way
// with grpc-status 0 (Relay.GRPCResetAsOK).
type grpcResetAsOK struct{ part.Relay }

func (r grpcResetAsOK) GRPCAborted(w http.ResponseWriter, h http.Header, backendFailed bool) {
	if backendFailed {
		h.Set(http.TrailerPrefix+"Grpc-Status", "0")
		return
	}
	r.Relay.GRPCAborted(w, h, backendFailed)
}

// closeOnBackendFIN closes both sides of a tunnel when the backend
// half-closes (Set.CloseTunnelOnBackendFIN).
type closeOnBackendFIN struct{ part.Relay }

func (r closeOnBackendFIN) HalfClose(to net.Conn, fromBackend bool) bool {
	return !fromBackend && r.Relay.HalfClose(to, fromBackend)
}

// maxBufferedWhole bounds what buffersResponses and buffersRequests hold.
const maxBufferedWhole = 16 << 20

// buffersResponses reads a whole response body before relaying any of it
// (Relay.BuffersResponses).
type buffersResponses struct{ part.Relay }

// Body reads body to its end (or its error, or maxBufferedWhole bytes)
// before returning anything of it: the returned body yields the bytes
// read, then the error that ended them.
func (r buffersResponses) Body(body io.ReadCloser) io.ReadCloser {
	body = r.Relay.Body(body)
	data, err := io.ReadAll(io.LimitReader(body, maxBufferedWhole))
	return struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(data), errReader{err}), body}
}

// errReader returns err, or io.EOF when err is nil.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) {
	if e.err == nil {
		return 0, io.EOF
	}
	return 0, e.err
}
