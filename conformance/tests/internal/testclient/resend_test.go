package testclient

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/gatewitness/gatewitness/echo-backend/echopb"
	"github.com/gatewitness/gatewitness/internal/rawgrpc"
)

// refusingServer is an HTTP/2 server (prior knowledge) that refuses every
// stream with RST_STREAM REFUSED_STREAM, as HAProxy passes on a backend's
// reset that came before any response header, and counts the streams.
type refusingServer struct {
	addr    string
	streams atomic.Int64
}

func newRefusingServer(t *testing.T) *refusingServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &refusingServer{addr: ln.Addr().String()}
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		conns  []net.Conn
		closed bool // a connection accepted from now on is closed at once
	)
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		closed = true
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			if closed {
				c.Close()
			}
			mu.Unlock()
			wg.Go(func() { s.serve(c) })
		}
	})
	return s
}

func (s *refusingServer) serve(c net.Conn) {
	preface := make([]byte, len(http2.ClientPreface))
	if _, err := c.Read(preface); err != nil || !bytes.Equal(preface, []byte(http2.ClientPreface)) {
		return
	}
	fr := http2.NewFramer(c, c)
	fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	if fr.WriteSettings() != nil {
		return
	}
	// A stream with a body is refused once its first DATA came, as a
	// gateway refuses a call at its deadline: after the call's first
	// message, which is when grpc-go commits to a call (GRPCNoResend).
	pending := map[uint32]bool{}
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			return
		}
		if rawgrpc.AckControl(fr, f) {
			continue
		}
		switch f := f.(type) {
		case *http2.MetaHeadersFrame:
			s.streams.Add(1)
			if f.StreamEnded() {
				_ = fr.WriteRSTStream(f.StreamID, http2.ErrCodeRefusedStream)
			} else {
				pending[f.StreamID] = true
			}
		case *http2.DataFrame:
			if pending[f.StreamID] {
				delete(pending, f.StreamID)
				_ = fr.WriteRSTStream(f.StreamID, http2.ErrCodeRefusedStream)
			}
		}
	}
}

// waitStreams polls until the server has counted n streams, for at most 10s.
func (s *refusingServer) waitStreams(t *testing.T, n int64) {
	t.Helper()
	if !Poll(10*time.Second, 5*time.Millisecond, func() bool { return s.streams.Load() >= n }) {
		t.Fatalf("the server counted %d streams, want %d", s.streams.Load(), n)
	}
}

// TestRawCallEndsAtARefusedStream shows why the raw gRPC calls are written
// frame by frame: net/http's HTTP/2 transport sends a refused request again
// by itself (at once, then after 1s, 2s, ...), while rawgrpc.Call ends the
// call at the refusal and says so.
func TestRawCallEndsAtARefusedStream(t *testing.T) {
	url := "/gatewitness.echo.v1.Echo/Unary"
	t.Run("net/http resends", func(t *testing.T) {
		s := newRefusingServer(t)
		p := new(http.Protocols)
		p.SetUnencryptedHTTP2(true)
		tr := &http.Transport{Protocols: p}
		t.Cleanup(tr.CloseIdleConnections)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+s.addr+url, bytes.NewReader(rawgrpc.Frame(nil)))
			if err == nil {
				req.Header.Set("Content-Type", "application/grpc")
				var resp *http.Response
				if resp, err = tr.RoundTrip(req); err == nil {
					resp.Body.Close()
				}
			}
			done <- err
		}()
		s.waitStreams(t, 2) // the client's own resend
		cancel()
		if err := <-done; err == nil {
			t.Errorf("the refused request succeeded")
		}
	})
	t.Run("rawgrpc.Call does not", func(t *testing.T) {
		s := newRefusingServer(t)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		start := time.Now()
		r, err := rawgrpc.Call(ctx, (&net.Dialer{}).DialContext, rawgrpc.Request{URL: "http://" + s.addr + url, Messages: [][]byte{nil}})
		if err != nil {
			t.Fatal(err)
		}
		if !r.Refused() || r.End != "RST_STREAM REFUSED_STREAM" || r.Status != 0 || r.BodyErr == nil {
			t.Errorf("refused %t, end %q, status %d, body error %v; want a refusal: RST_STREAM REFUSED_STREAM, no headers", r.Refused(), r.End, r.Status, r.BodyErr)
		}
		if n := s.streams.Load(); n != 1 {
			t.Errorf("the server saw %d streams in %v; want 1: the call is sent once", n, time.Since(start).Round(time.Millisecond))
		}
	})
}

// TestGRPCNoResendEndsAtARefusedStream shows the same for grpc-go: by
// default it resends a refused call transparently (grpc.WithDisableRetry
// alone does not stop it); with GRPCNoResend the refusal ends the call as
// UNAVAILABLE.
func TestGRPCNoResendEndsAtARefusedStream(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opts    []grpc.DialOption
		streams int64
	}{
		{"default", nil, 2},
		{"WithDisableRetry only", []grpc.DialOption{grpc.WithDisableRetry()}, 2},
		{"GRPCNoResend", GRPCNoResend(), 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newRefusingServer(t)
			cc, err := grpc.NewClient("passthrough:///"+s.addr,
				append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, tc.opts...)...)
			if err != nil {
				t.Fatal(err)
			}
			defer cc.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, err = echopb.NewEchoClient(cc).Unary(ctx, &echopb.EchoRequest{})
			if status.Code(err) != codes.Unavailable || errors.Is(ctx.Err(), context.DeadlineExceeded) {
				t.Errorf("the call ended with %v; want UNAVAILABLE from the refusal", err)
			}
			if n := s.streams.Load(); n != tc.streams {
				t.Errorf("the server saw %d streams; want %d", n, tc.streams)
			}
		})
	}
}

// TestOneShotEndsAtARefusedStream: a GET through net/http's Transport is
// sent again when its stream is refused; through OneShot it is not, and
// the error names the code.
func TestOneShotEndsAtARefusedStream(t *testing.T) {
	for _, tc := range []struct {
		name    string
		oneShot bool
		streams int64
	}{{"Transport", false, 2}, {"OneShot", true, 1}} {
		t.Run(tc.name, func(t *testing.T) {
			s := newRefusingServer(t)
			p := new(http.Protocols)
			p.SetUnencryptedHTTP2(true)
			tr := &http.Transport{Protocols: p, DisableKeepAlives: true}
			t.Cleanup(tr.CloseIdleConnections)
			var rt http.RoundTripper = tr
			if tc.oneShot {
				rt = OneShot(tr)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() {
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+s.addr+"/", nil)
				if err == nil {
					var resp *http.Response
					if resp, err = rt.RoundTrip(req); err == nil {
						resp.Body.Close()
					}
				}
				done <- err
			}()
			s.waitStreams(t, tc.streams)
			if !tc.oneShot {
				cancel() // the resends would go on, after 1s, 2s, ...
			}
			err := <-done
			var se http2.StreamError
			switch {
			case err == nil:
				t.Fatal("the refused request succeeded")
			case tc.oneShot && (!errors.As(err, &se) || se.Code != http2.ErrCodeRefusedStream):
				t.Errorf("error %v; want an http2.StreamError with REFUSED_STREAM", err)
			}
			if n := s.streams.Load(); tc.oneShot && n != 1 || n < tc.streams {
				t.Errorf("the server saw %d streams; want %d", n, tc.streams)
			}
		})
	}
}
