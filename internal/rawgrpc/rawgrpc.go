// Package rawgrpc makes a gRPC call as a plain HTTP/2 request, written and
// read frame by frame, and returns the response as it came on the wire: the
// HTTP status, the headers (which carry grpc-status in a trailers-only
// response), the trailers, the length-prefixed messages and the frame that
// ended the stream. Tests use it where a gRPC library would hide what they
// must see, such as whether the status came as trailers-only, or would
// enforce what they must not, such as the grpc-timeout they send.
//
// A call is one stream on a connection of its own, sent once. Neither
// net/http's HTTP/2 transport nor grpc-go ends a call that the server
// refuses (RST_STREAM REFUSED_STREAM) or leaves out of a GOAWAY: both send
// it again, at once and then after a backoff, and a test timing the call
// would time the resends. Call ends the call there and says so
// (Response.End, Response.Refused).
//
// The wire format is gRPC's HTTP/2 protocol
// (https://github.com/grpc/grpc/blob/master/doc/PROTOCOL-HTTP2.md): a POST
// with content-type application/grpc and te: trailers, whose body and
// response body are messages, each a compressed flag byte, a 4-byte
// big-endian length and the message.
package rawgrpc

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc/codes"
)

// MaxBody bounds the response body Call reads; a longer body ends the read
// with an error, so a misbehaving server cannot grow a test without end.
const MaxBody = 4 << 20

// maxRequestBody bounds the request body: one initial flow-control window
// (RFC 9113 section 6.9.2), which a server must accept before it says
// anything, so Call never waits for WINDOW_UPDATE.
const maxRequestBody = 65535

// maxHeaderList bounds the decoded response headers and trailers.
const maxHeaderList = 1 << 20

// stream is the id of the one stream of a call's connection.
const stream = 1

// How a stream ended, in Response.End (besides "RST_STREAM <code>").
const (
	// EndStream is a response the server ended with END_STREAM.
	EndStream = "END_STREAM"
	// EndClosed is a connection closed with the stream open.
	EndClosed = "connection closed"
)

// DialFunc dials a network address, like net.Dialer.DialContext.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// Request is one call.
type Request struct {
	// URL is the method's URL: http://host:port/package.Service/Method.
	URL string
	// Authority is sent as :authority; empty means the URL's host.
	Authority string
	// Timeout is sent as grpc-timeout, verbatim (Call does not enforce
	// it); empty sends none.
	Timeout string
	// Metadata holds request metadata as key, value pairs.
	Metadata []string
	// Messages are the request messages, marshalled; Call frames them.
	Messages [][]byte
	// KeepOpen leaves the request stream open after the messages (no
	// END_STREAM), as a client stream that has not finished sending.
	KeepOpen bool
}

// Response is a call's response as it came on the wire.
type Response struct {
	Status   int         // HTTP status; 0 when no response headers came
	Header   http.Header // response headers
	Trailer  http.Header // trailers; empty in a trailers-only response
	Messages [][]byte    // whole messages, in order
	Partial  int         // bytes of an incomplete message at the end of the body
	// End is how the stream ended: EndStream, "RST_STREAM <code>" (such
	// as "RST_STREAM CANCEL"), "GOAWAY <code>" (the server's GOAWAY left
	// the stream out: it was not processed), EndClosed (after "GOAWAY
	// <code>, then " when one came), or "" when the caller's context ended
	// first.
	End string
	// BodyErr says why the response is incomplete: the stream did not
	// end with END_STREAM, or the body exceeded MaxBody; nil at a clean
	// end.
	BodyErr error

	refused bool // the server said it did not process the stream
}

// Call sends req on a new connection dialled with dial (HTTP/2 with prior
// knowledge, as gRPC over plaintext is), once, and reads the response until
// the stream ends or ctx does. It returns an error only when the request
// could not be built, dialled or written; every way the stream can end,
// with or without response headers, is a Response.
func Call(ctx context.Context, dial DialFunc, req Request) (*Response, error) {
	u, err := url.Parse(req.URL)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return nil, fmt.Errorf("rawgrpc: URL %q: want http://host:port/package.Service/Method", req.URL)
	}
	block, err := requestHeaders(u, req)
	if err != nil {
		return nil, err
	}
	var body []byte
	for _, m := range req.Messages {
		body = append(body, Frame(m)...)
	}
	if len(body) > maxRequestBody {
		return nil, fmt.Errorf("rawgrpc: request body of %d bytes; at most %d (one flow-control window)", len(body), maxRequestBody)
	}
	nc, err := dial(ctx, "tcp", u.Host)
	if err != nil {
		return nil, fmt.Errorf("rawgrpc: dialling %s: %w", u.Host, err)
	}
	defer nc.Close()
	// The caller's context bounds every read and write.
	stop := context.AfterFunc(ctx, func() { _ = nc.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	fr := http2.NewFramer(nc, nc)
	fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	fr.MaxHeaderListSize = maxHeaderList
	if err := writeRequest(nc, fr, block, body, req.KeepOpen); err != nil {
		return nil, fmt.Errorf("rawgrpc: writing the request to %s: %w", u.Host, err)
	}
	r := &Response{Header: http.Header{}, Trailer: http.Header{}}
	var data []byte
	r.End, r.BodyErr = readStream(ctx, fr, r, &data)
	r.Messages, r.Partial = Split(data)
	if r.BodyErr == nil && r.End != EndStream {
		end := r.End
		if end == "" {
			end = "nothing: the caller's context ended first"
		}
		r.BodyErr = fmt.Errorf("rawgrpc: the stream ended with %s", end)
	}
	return r, nil
}

// requestHeaders encodes the call's request header block.
func requestHeaders(u *url.URL, req Request) ([]byte, error) {
	if len(req.Metadata)%2 != 0 {
		return nil, fmt.Errorf("rawgrpc: %d metadata strings; want key, value pairs", len(req.Metadata))
	}
	authority := req.Authority
	if authority == "" {
		authority = u.Host
	}
	fields := []hpack.HeaderField{
		{Name: ":method", Value: http.MethodPost},
		{Name: ":scheme", Value: "http"},
		{Name: ":authority", Value: authority},
		{Name: ":path", Value: u.RequestURI()},
		{Name: "content-type", Value: "application/grpc"},
		{Name: "te", Value: "trailers"},
	}
	if req.Timeout != "" {
		fields = append(fields, hpack.HeaderField{Name: "grpc-timeout", Value: req.Timeout})
	}
	for i := 0; i < len(req.Metadata); i += 2 {
		fields = append(fields, hpack.HeaderField{Name: strings.ToLower(req.Metadata[i]), Value: req.Metadata[i+1]})
	}
	var block bytes.Buffer
	enc := hpack.NewEncoder(&block)
	for _, f := range fields {
		if err := enc.WriteField(f); err != nil {
			return nil, fmt.Errorf("rawgrpc: encoding %s: %w", f.Name, err)
		}
	}
	return block.Bytes(), nil
}

// writeRequest writes the connection preface, settings that let the server
// send up to MaxBody without waiting, and the call's one stream, ended
// unless keepOpen.
func writeRequest(nc net.Conn, fr *http2.Framer, block, body []byte, keepOpen bool) error {
	if _, err := io.WriteString(nc, http2.ClientPreface); err != nil {
		return err
	}
	const window = 1 << 30
	err := errors.Join(
		fr.WriteSettings(http2.Setting{ID: http2.SettingEnablePush, Val: 0},
			http2.Setting{ID: http2.SettingInitialWindowSize, Val: window}),
		fr.WriteWindowUpdate(0, window-65535),
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: stream, BlockFragment: block, EndHeaders: true, EndStream: len(body) == 0 && !keepOpen}))
	if err != nil || len(body) == 0 {
		return err
	}
	// The server's SETTINGS may not have come yet: frames of the
	// default maximum size.
	const maxFrame = 16384
	for len(body) > 0 {
		n := min(len(body), maxFrame)
		if err := fr.WriteData(stream, n == len(body) && !keepOpen, body[:n]); err != nil {
			return err
		}
		body = body[n:]
	}
	return nil
}

// readStream reads frames until the call's stream ends, filling r's
// status, headers and trailers and data's body bytes, and returns how the
// stream ended (Response.End) and an error when the body was too large.
func readStream(ctx context.Context, fr *http2.Framer, r *Response, data *[]byte) (end string, bodyErr error) {
	goAway := ""
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			switch {
			case ctx.Err() != nil:
				return "", nil
			case goAway != "":
				return goAway + ", then " + EndClosed, nil
			}
			var ce http2.ConnectionError
			if errors.As(err, &ce) {
				return fmt.Sprintf("%s (the server broke HTTP/2: %v)", EndClosed, err), nil
			}
			return EndClosed, nil
		}
		if AckControl(fr, f) {
			continue
		}
		switch f := f.(type) {
		case *http2.GoAwayFrame:
			goAway = "GOAWAY " + f.ErrCode.String()
			if f.LastStreamID < stream {
				r.refused = true // the stream was not processed
				return goAway, nil
			}
		case *http2.MetaHeadersFrame:
			if f.StreamID != stream {
				continue
			}
			status := f.PseudoValue("status")
			switch {
			case r.Status == 0 && strings.HasPrefix(status, "1"):
				continue // an informational response
			case r.Status == 0:
				r.Status, _ = strconv.Atoi(status)
				addFields(r.Header, f)
			default:
				addFields(r.Trailer, f)
			}
			if f.StreamEnded() {
				return EndStream, nil
			}
		case *http2.DataFrame:
			if f.StreamID != stream {
				continue
			}
			if len(*data)+len(f.Data()) > MaxBody {
				return "", fmt.Errorf("rawgrpc: response body larger than %d bytes", MaxBody)
			}
			*data = append(*data, f.Data()...)
			if f.StreamEnded() {
				return EndStream, nil
			}
		case *http2.RSTStreamFrame:
			if f.StreamID == stream {
				r.refused = f.ErrCode == http2.ErrCodeRefusedStream
				return "RST_STREAM " + f.ErrCode.String(), nil
			}
		}
	}
}

// addFields adds f's regular fields to h under their canonical keys.
func addFields(h http.Header, f *http2.MetaHeadersFrame) {
	for _, hf := range f.RegularFields() {
		h.Add(http.CanonicalHeaderKey(hf.Name), hf.Value)
	}
}

// Frame returns msg as one length-prefixed, uncompressed gRPC message.
func Frame(msg []byte) []byte {
	out := make([]byte, 5, 5+len(msg))
	binary.BigEndian.PutUint32(out[1:], uint32(len(msg)))
	return append(out, msg...)
}

// Split splits a body into its whole length-prefixed messages and returns
// the number of bytes of an incomplete message left at its end.
func Split(body []byte) (messages [][]byte, partial int) {
	for len(body) >= 5 {
		n := int(binary.BigEndian.Uint32(body[1:5]))
		if len(body)-5 < n {
			break
		}
		messages = append(messages, body[5:5+n])
		body = body[5+n:]
	}
	return messages, len(body)
}

// Refused reports whether the server said it did not process the call: it
// reset the stream with REFUSED_STREAM, or its GOAWAY left the stream out
// (RFC 9113 section 8.7). HTTP/2 and gRPC clients send such a call again by
// themselves; Call does not.
func (r *Response) Refused() bool { return r.refused }

// GRPCStatus is the response's grpc-status: from the headers of a
// trailers-only response, else from the trailers; "" when there is none.
func (r *Response) GRPCStatus() string {
	if v := r.Header.Get("Grpc-Status"); v != "" {
		return v
	}
	return r.Trailer.Get("Grpc-Status")
}

// TrailersOnly reports whether the status came in the response headers, as
// a trailers-only response.
func (r *Response) TrailersOnly() bool { return r.Header.Get("Grpc-Status") != "" }

// GRPCMessage is the response's grpc-message, percent-decoded.
func (r *Response) GRPCMessage() string {
	v := r.Header.Get("Grpc-Message")
	if v == "" {
		v = r.Trailer.Get("Grpc-Message")
	}
	if m, err := url.PathUnescape(v); err == nil {
		return m
	}
	return v
}

// OK reports whether the call succeeded: HTTP 200, grpc-status 0 and a
// body read to its end.
func (r *Response) OK() bool {
	return r.Status == http.StatusOK && r.GRPCStatus() == "0" && r.BodyErr == nil
}

// CodeName names a grpc-status value, such as DeadlineExceeded for "4";
// anything that is not a number is returned quoted.
func CodeName(v string) string {
	n, err := strconv.ParseUint(v, 10, 32)
	if err != nil {
		return strconv.Quote(v)
	}
	return codes.Code(n).String()
}

// AckControl answers a peer's SETTINGS and PING frames on fr, as every
// HTTP/2 endpoint must, and reports whether f was one of them (acks
// included), so that a frame-level reader can pass over it.
func AckControl(fr *http2.Framer, f http2.Frame) bool {
	switch f := f.(type) {
	case *http2.SettingsFrame:
		if !f.IsAck() {
			_ = fr.WriteSettingsAck()
		}
		return true
	case *http2.PingFrame:
		if !f.IsAck() {
			_ = fr.WritePing(true, f.Data)
		}
		return true
	}
	return false
}
