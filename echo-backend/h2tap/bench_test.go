package h2tap_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/gatewitness/gatewitness/echo-backend/h2tap"
)

// BenchmarkEcho measures one h2c request/response on one connection,
// with and without the tap, for a small and a larger body.
func BenchmarkEcho(b *testing.B) {
	for _, size := range []int{1 << 10, 64 << 10} {
		body := bytes.Repeat([]byte("x"), size)
		for _, tapped := range []bool{false, true} {
			name := "direct"
			if tapped {
				name = "tap"
			}
			b.Run(name+"/"+strconv.Itoa(size), func(b *testing.B) {
				ln := listen(b)
				var protos http.Protocols
				protos.SetUnencryptedHTTP2(true)
				srv := &http.Server{Protocols: &protos, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					io.Copy(w, r.Body)
				})}
				var l net.Listener = ln
				if tapped {
					l = h2tap.Listener(ln)
				}
				go srv.Serve(l)
				b.Cleanup(func() { srv.Close() })
				cc := dialH2C(b, ln.Addr().String())
				b.SetBytes(int64(2 * size))
				b.ReportAllocs()
				for b.Loop() {
					req, err := http.NewRequestWithContext(context.Background(), "POST", "http://tap.test/", bytes.NewReader(body))
					if err != nil {
						b.Fatal(err)
					}
					res, err := cc.RoundTrip(req)
					if err != nil {
						b.Fatal(err)
					}
					n, err := io.Copy(io.Discard, res.Body)
					res.Body.Close()
					if err != nil || n != int64(size) {
						b.Fatalf("echoed %d bytes, %v; want %d", n, err, size)
					}
				}
			})
		}
	}
}

// fakeClient is a client side that sends the preface and opens streams,
// then ends; everything the server writes is discarded.
type fakeClient struct {
	net.Conn
	in *bytes.Reader
}

func (f *fakeClient) Read(p []byte) (int, error)  { return f.in.Read(p) }
func (f *fakeClient) Write(p []byte) (int, error) { return len(p), nil }
func (f *fakeClient) Close() error                { return nil }

func (f *fakeClient) SetReadDeadline(time.Time) error { return nil }

// BenchmarkServerWrite measures the tap's server-to-client path: frame
// parsing, header re-encoding and per-stream progress, for 32 open
// streams, each getting a HEADERS and a 1000-byte DATA frame per Write, or
// DATA frames only.
func BenchmarkServerWrite(b *testing.B) {
	var client bytes.Buffer
	client.WriteString(preface)
	cf := http2.NewFramer(&client, nil)
	for s := uint32(1); s < 64; s += 2 {
		cf.WriteHeaders(http2.HeadersFrameParam{StreamID: s, EndHeaders: true})
	}
	var hb bytes.Buffer
	hpack.NewEncoder(&hb).WriteField(hpack.HeaderField{Name: ":status", Value: "200"})
	for _, withHeaders := range []bool{true, false} {
		var server bytes.Buffer
		sf := http2.NewFramer(&server, nil)
		for s := uint32(1); s < 64; s += 2 {
			if withHeaders {
				sf.WriteHeaders(http2.HeadersFrameParam{StreamID: s, BlockFragment: hb.Bytes(), EndHeaders: true})
			}
			sf.WriteData(s, false, make([]byte, 1000))
		}
		name := "data"
		if withHeaders {
			name = "headers+data"
		}
		b.Run(name, func(b *testing.B) {
			c := h2tap.Wrap(&fakeClient{in: bytes.NewReader(client.Bytes())})
			defer c.Close()
			// Read what the client sent, so every stream is open.
			if _, err := io.Copy(io.Discard, c); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(server.Len()))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.Write(server.Bytes()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
