// Package rawgrpc makes a gRPC call as a plain HTTP/2 request and returns
// the response as it came on the wire: the HTTP status, the headers (which
// carry grpc-status in a trailers-only response), the trailers and the
// length-prefixed messages. Tests use it where a gRPC library would hide
// what they must see, such as whether the status came as trailers-only, or
// would enforce what they must not, such as the grpc-timeout they send.
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
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"google.golang.org/grpc/codes"
)

// MaxBody bounds the response body Call reads; a longer body ends the read
// with an error, so a misbehaving server cannot grow a test without end.
const MaxBody = 4 << 20

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
}

// Response is a call's response as it came on the wire.
type Response struct {
	Status   int         // HTTP status
	Header   http.Header // response headers
	Trailer  http.Header // trailers; empty in a trailers-only response
	Messages [][]byte    // whole messages, in order
	Partial  int         // bytes of an incomplete message at the end of the body
	BodyErr  error       // why reading the body stopped early (a reset stream, say); nil at a clean end
}

// Call sends req with client, which must speak HTTP/2 to the server (for
// plaintext, an http.Transport with Protocols set to unencrypted HTTP/2),
// and reads the whole response. It returns an error only when no response
// headers came; a response that ends badly is a Response with BodyErr set.
func Call(ctx context.Context, client *http.Client, req Request) (*Response, error) {
	var body bytes.Buffer
	for _, m := range req.Messages {
		body.Write(Frame(m))
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, req.URL, &body)
	if err != nil {
		return nil, fmt.Errorf("rawgrpc: building the request: %w", err)
	}
	if req.Authority != "" {
		hr.Host = req.Authority
	}
	hr.Header.Set("Content-Type", "application/grpc")
	hr.Header.Set("Te", "trailers")
	if req.Timeout != "" {
		hr.Header.Set("Grpc-Timeout", req.Timeout)
	}
	if len(req.Metadata)%2 != 0 {
		return nil, fmt.Errorf("rawgrpc: %d metadata strings; want key, value pairs", len(req.Metadata))
	}
	for i := 0; i < len(req.Metadata); i += 2 {
		hr.Header.Add(req.Metadata[i], req.Metadata[i+1])
	}
	resp, err := client.Do(hr)
	if err != nil {
		return nil, fmt.Errorf("rawgrpc: %s: %w", req.URL, err)
	}
	defer resp.Body.Close()
	r := &Response{Status: resp.StatusCode, Header: resp.Header}
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxBody+1))
	r.BodyErr = err
	if len(data) > MaxBody {
		data = data[:MaxBody]
		r.BodyErr = fmt.Errorf("rawgrpc: response body larger than %d bytes", MaxBody)
	}
	r.Trailer = resp.Trailer // complete once the body was read to its end
	if r.Trailer == nil {
		r.Trailer = http.Header{}
	}
	r.Messages, r.Partial = Split(data)
	return r, nil
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
