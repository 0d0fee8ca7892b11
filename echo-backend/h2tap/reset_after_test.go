package h2tap_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"

	"golang.org/x/net/http2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/gatewitness/gatewitness/echo-backend/h2tap"
)

// These tests reset a stream right after the handler flushed its headers
// or part of its body, with WaitWritten in between and nothing else: no
// help from the client. Without WaitWritten the reset overtakes the
// server's buffered frames and the client sees no headers or a short body.

// resetRounds is how many streams each case resets; more rounds make a
// lost frame likelier to show.
const resetRounds = 30

// waitThenReset is an HTTP handler that answers headers (with X-Stage)
// and, for ?body=N, N bytes, then resets its stream with CANCEL once
// WaitWritten says they went.
func waitThenReset(t *testing.T) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		n, err := strconv.Atoi(r.URL.Query().Get("body"))
		if err != nil {
			t.Errorf("?body=%q: %v", r.URL.Query().Get("body"), err)
			return
		}
		connID, streamID, ok := h2tap.ParseStreamHeader(r.Header.Get(h2tap.StreamHeader))
		c, found := h2tap.Lookup(connID)
		if !ok || !found {
			t.Errorf("tag %q: parsed %v, found %v", r.Header.Get(h2tap.StreamHeader), ok, found)
			return
		}
		w.Header().Set("X-Stage", "headers")
		w.WriteHeader(http.StatusOK)
		if n > 0 {
			w.Write([]byte(strings.Repeat("b", n)))
		}
		w.(http.Flusher).Flush()
		if err := c.WaitWritten(r.Context(), streamID, true, int64(n)); err != nil {
			t.Errorf("WaitWritten: %v", err)
			return
		}
		if err := c.ResetStream(streamID, uint32(http2.ErrCodeCancel)); err != nil {
			t.Errorf("ResetStream: %v", err)
		}
		panic(http.ErrAbortHandler)
	}
}

// checkResetAfter requests url and wants the headers, exactly n body bytes,
// then the stream reset with CANCEL.
func checkResetAfter(t *testing.T, rt http.RoundTripper, url string, n int) {
	t.Helper()
	res, err := doGet(t, rt, url, nil)
	if err != nil {
		t.Errorf("%s: %v, want the response headers", url, err)
		return
	}
	defer res.Body.Close()
	if got := res.Header.Get("X-Stage"); got != "headers" || res.StatusCode != 200 {
		t.Errorf("%s: status %d, X-Stage %q; want 200 and \"headers\"", url, res.StatusCode, got)
	}
	body, err := io.ReadAll(res.Body)
	if len(body) != n {
		t.Errorf("%s: read %d body bytes before the reset, want %d", url, len(body), n)
	}
	var se http2.StreamError
	if !errors.As(err, &se) || se.Code != http2.ErrCodeCancel {
		t.Errorf("%s: body ended with %v, want a CANCEL stream error", url, err)
	}
}

func TestResetAfterWaitWrittenHTTP(t *testing.T) {
	cert, roots := testCert(t)
	for _, tc := range []struct {
		name string
		base string
		dial func(t *testing.T) *http2.ClientConn
	}{
		{"h2c", "http://tap.test", func(t *testing.T) *http2.ClientConn {
			return dialH2C(t, serveH2C(t, waitThenReset(t)))
		}},
		{"tls", "https://localhost", func(t *testing.T) *http2.ClientConn {
			return dialTLS(t, serveTLS(t, waitThenReset(t), cert), roots)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cc := tc.dial(t)
			// after-headers, a small body and a body of several frames.
			for _, n := range []int{0, 7, 40000} {
				var wg sync.WaitGroup
				for i := range resetRounds {
					wg.Go(func() {
						checkResetAfter(t, cc, fmt.Sprintf("%s/?body=%d&i=%d", tc.base, n, i), n)
					})
				}
				wg.Wait()
			}
		})
	}
}

// streamResetter's Watch sends its headers and, unless the service name is
// "headers", one message, then resets the stream with CANCEL once
// WaitWritten says they went.
type streamResetter struct {
	healthpb.UnimplementedHealthServer
	t *testing.T
}

func (s *streamResetter) Watch(req *healthpb.HealthCheckRequest, ss grpc.ServerStreamingServer[healthpb.HealthCheckResponse]) error {
	md, _ := metadata.FromIncomingContext(ss.Context())
	tags := md.Get(h2tap.StreamHeader)
	if len(tags) != 1 {
		return status.Errorf(codes.FailedPrecondition, "tags %q, want one", tags)
	}
	connID, streamID, ok := h2tap.ParseStreamHeader(tags[0])
	c, found := h2tap.Lookup(connID)
	if !ok || !found {
		return status.Errorf(codes.FailedPrecondition, "tag %q: parsed %v, found %v", tags[0], ok, found)
	}
	if err := ss.SendHeader(metadata.Pairs("x-stage", "headers")); err != nil {
		return err
	}
	var data int64
	if req.Service != "headers" {
		if err := ss.Send(&healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}); err != nil {
			return err
		}
		data = 1
	}
	if err := c.WaitWritten(ss.Context(), streamID, true, data); err != nil {
		s.t.Errorf("WaitWritten: %v", err)
		return err
	}
	if err := c.ResetStream(streamID, uint32(http2.ErrCodeCancel)); err != nil {
		s.t.Errorf("ResetStream: %v", err)
	}
	return status.Error(codes.Aborted, "reset")
}

// checkGRPCResetAfter calls Watch and wants the headers, the message unless
// service is "headers", then CANCELLED.
func checkGRPCResetAfter(t *testing.T, client healthpb.HealthClient, service string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	ss, err := client.Watch(ctx, &healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		t.Errorf("Watch(%s): %v", service, err)
		return
	}
	hdr, err := ss.Header()
	if err != nil || strings.Join(hdr.Get("x-stage"), ",") != "headers" {
		t.Errorf("Watch(%s): headers %v, %v; want x-stage: headers", service, hdr, err)
		return
	}
	if service != "headers" {
		if m, err := ss.Recv(); err != nil || m.Status != healthpb.HealthCheckResponse_SERVING {
			t.Errorf("Watch(%s): first message %v, %v; want SERVING", service, m, err)
			return
		}
	}
	if m, err := ss.Recv(); status.Code(err) != codes.Canceled {
		t.Errorf("Watch(%s): after the reset got %v, %v; want CANCELLED", service, m, err)
	}
}

func TestResetAfterWaitWrittenGRPC(t *testing.T) {
	cert, roots := testCert(t)
	for _, tc := range []struct {
		name         string
		server, dial credentials.TransportCredentials
	}{
		{"plaintext", insecure.NewCredentials(), insecure.NewCredentials()},
		{"tls",
			credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{cert}}),
			credentials.NewTLS(&tls.Config{RootCAs: roots, ServerName: "localhost"})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln := listen(t)
			srv := grpc.NewServer(grpc.Creds(h2tap.Credentials(tc.server)))
			healthpb.RegisterHealthServer(srv, &streamResetter{t: t})
			go srv.Serve(ln)
			t.Cleanup(srv.Stop)
			client := dialGRPC(t, ln.Addr().String(), tc.dial)
			for _, service := range []string{"headers", "message"} {
				var wg sync.WaitGroup
				for range resetRounds {
					wg.Go(func() { checkGRPCResetAfter(t, client, service) })
				}
				wg.Wait()
			}
		})
	}
}
