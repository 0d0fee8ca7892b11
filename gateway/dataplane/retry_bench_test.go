package dataplane_test

import (
	"bytes"
	"net/http"
	"testing"
)

// BenchmarkRetry measures one HTTP/1.1 request through the data plane to an
// in-process echo-backend: without a retry stanza, with one that is not
// needed (the cost of making attempts replayable), with a 1 KiB body
// streamed or kept for replay, and with one retry after a 503 (two backend
// attempts).
func BenchmarkRetry(b *testing.B) {
	eb := startEcho(b)
	ref := echoRef("echo", false, eb)
	c := serveBench(b, oneListener(route("r", 0, nil,
		prefixRule("/plain", nil, ref),
		retryRule("/again", []int{503}, 1, "0s", ref),
	)), "bench")
	body := bytes.Repeat([]byte("x"), 1<<10)
	run := func(b *testing.B, method, path string, payload []byte, spec string) {
		c.run(b, method, path, payload, spec, http.StatusOK)
	}
	b.Run("GET/no-stanza", func(b *testing.B) { run(b, http.MethodGet, "/plain/x", nil, "") })
	b.Run("GET/stanza-unused", func(b *testing.B) { run(b, http.MethodGet, "/again/x", nil, "") })
	b.Run("POST-1KiB/no-stanza", func(b *testing.B) { run(b, http.MethodPost, "/plain/x", body, "") })
	b.Run("POST-1KiB/stanza-unused", func(b *testing.B) { run(b, http.MethodPost, "/again/x", body, "") })
	b.Run("GET/one-retry", func(b *testing.B) { run(b, http.MethodGet, "/again/x", nil, "fail=1;status=503") })
}
