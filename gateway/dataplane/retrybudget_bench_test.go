package dataplane_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/gatewitness/gatewitness/gateway/ir"
)

// BenchmarkRetryBudget measures what a retry budget costs a request
// through the data plane to an in-process echo-backend, side by side with
// the same route without one: a retry stanza that is not needed, with and
// without a budget; a retry the budget allows (two backend attempts); and
// one it refuses (one attempt, 503).
func BenchmarkRetryBudget(b *testing.B) {
	eb := startEcho(b)
	plain := echoRef("echo", false, eb)
	budgeted := func(name string, rb ir.RetryBudget) ir.Backend {
		ref := echoRef(name, false, eb)
		rb.Key = "default/" + name
		ref.RetryBudget = &rb
		return ref
	}
	c := serveBench(b, oneListener(route("r", 0, nil,
		retryRule("/plain", []int{503}, 1, "0s", plain),
		retryRule("/budget", []int{503}, 1, "0s", budgeted("allows", ir.RetryBudget{Percent: 100, Interval: time.Second})),
		retryRule("/refused", []int{503}, 1, "0s", budgeted("refuses", ir.RetryBudget{Percent: 0, Interval: time.Second})),
	)), "bench-budget")
	run := func(b *testing.B, path, spec string, want int) { c.run(b, http.MethodGet, path, nil, spec, want) }
	b.Run("stanza-unused/no-budget", func(b *testing.B) { run(b, "/plain/x", "", http.StatusOK) })
	b.Run("stanza-unused/budget", func(b *testing.B) { run(b, "/budget/x", "", http.StatusOK) })
	b.Run("one-retry/no-budget", func(b *testing.B) { run(b, "/plain/x", "fail=1;status=503", http.StatusOK) })
	b.Run("one-retry/budget-allows", func(b *testing.B) { run(b, "/budget/x", "fail=1;status=503", http.StatusOK) })
	b.Run("one-retry/budget-refuses", func(b *testing.B) { run(b, "/refused/x", "fail=1;status=503", http.StatusServiceUnavailable) })
}
