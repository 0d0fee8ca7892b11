package h2tap_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"

	"github.com/gatecheck/gatecheck/echo-backend/h2tap"
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
