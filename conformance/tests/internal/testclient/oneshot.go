package testclient

import (
	"io"
	"net/http"
)

// OneShot returns a RoundTripper that sends each request once, on a new
// connection of tr's (http.Transport.NewClientConn), closed with the
// response body. tr's own RoundTrip sends some requests again by itself:
// over HTTP/2 a request whose stream the server refused (RST_STREAM
// REFUSED_STREAM) or left out of a GOAWAY, at once and then after 1s, 2s,
// ... (any request whose body can be replayed, a GET included), and over
// HTTP/1.1 one whose reused connection closed before any response byte. A
// test that times a request would time the resends; through OneShot the
// refusal is the request's error (errors.As finds an
// http2.StreamError with the code).
//
// tr's MaxConnsPerHost does not apply (each request has its own
// connection anyway): Go 1.26's HTTP/1.1 ClientConn takes a connection off
// that count when it closes without having added it, and panics
// ("connCount underflow").
func OneShot(tr *http.Transport) http.RoundTripper {
	tr = tr.Clone()
	tr.MaxConnsPerHost = 0
	return oneShot{tr}
}

type oneShot struct{ tr *http.Transport }

func (o oneShot) RoundTrip(req *http.Request) (*http.Response, error) {
	cc, err := o.tr.NewClientConn(req.Context(), req.URL.Scheme, req.URL.Host)
	if err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	resp, err := cc.RoundTrip(req)
	if err != nil {
		cc.Close()
		return nil, err
	}
	resp.Body = closeConn{resp.Body, cc}
	return resp, nil
}

// closeConn closes its connection with the body.
type closeConn struct {
	io.ReadCloser
	cc *http.ClientConn
}

func (c closeConn) Close() error {
	err := c.ReadCloser.Close()
	c.cc.Close()
	return err
}
