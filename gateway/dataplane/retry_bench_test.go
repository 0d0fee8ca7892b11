package dataplane_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/gatecheck/gatecheck/echo-backend/fault"
	"github.com/gatecheck/gatecheck/gateway/dataplane"
)

// BenchmarkRetry measures one HTTP/1.1 request through the data plane to an
// in-process echo-backend: without a retry stanza, with one that is not
// needed (the cost of making attempts replayable), with a 1 KiB body
// streamed or kept for replay, and with one retry after a 503 (two backend
// attempts).
func BenchmarkRetry(b *testing.B) {
	eb := startEcho(b)
	ref := echoRef("echo", false, eb)
	s := dataplane.New(dataplane.Options{})
	defer s.Close()
	cfg := oneListener(route("r", 0, nil,
		prefixRule("/plain", nil, ref),
		retryRule("/again", []int{503}, 1, "0s", ref),
	))
	if err := s.Apply(cfg); err != nil {
		b.Fatal(err)
	}
	addr, _ := s.Addr("gw-ns", "gw", 80)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 30 * time.Second}
	body := bytes.Repeat([]byte("x"), 1<<10)

	ids := 0 // request ids are never reused: fault specs count attempts per id
	run := func(b *testing.B, method, path string, payload []byte, spec string) {
		b.ReportAllocs()
		for b.Loop() {
			var rd io.Reader
			if payload != nil {
				rd = bytes.NewReader(payload)
			}
			req, err := http.NewRequest(method, "http://"+addr+path, rd)
			if err != nil {
				b.Fatal(err)
			}
			req.Host = "gw.test"
			if spec != "" {
				ids++
				req.Header.Set(fault.IDHeaderName, fmt.Sprintf("bench-%d", ids))
				req.Header.Set(fault.HeaderName, spec)
			}
			resp, err := client.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b.Fatalf("status %d", resp.StatusCode)
			}
		}
	}
	b.Run("GET/no-stanza", func(b *testing.B) { run(b, http.MethodGet, "/plain/x", nil, "") })
	b.Run("GET/stanza-unused", func(b *testing.B) { run(b, http.MethodGet, "/again/x", nil, "") })
	b.Run("POST-1KiB/no-stanza", func(b *testing.B) { run(b, http.MethodPost, "/plain/x", body, "") })
	b.Run("POST-1KiB/stanza-unused", func(b *testing.B) { run(b, http.MethodPost, "/again/x", body, "") })
	b.Run("GET/one-retry", func(b *testing.B) { run(b, http.MethodGet, "/again/x", nil, "fail=1;status=503") })
}
