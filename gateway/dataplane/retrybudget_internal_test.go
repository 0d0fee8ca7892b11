package dataplane

import (
	"testing"
	"time"

	"github.com/gatewitness/gatewitness/gateway/ir"
)

// TestRetryBudgetPercent: with every request failing once, the budget
// lets retries make up at most Percent of the window's requests, retries
// included, and frees room as requests leave the window.
func TestRetryBudgetPercent(t *testing.T) {
	cfg := &ir.RetryBudget{Key: "ns/svc", Percent: 20, Interval: time.Second}
	var b retryBudget
	now := time.Unix(1000, 0)
	retries := 0
	for i := 0; i < 1000; i++ {
		now = now.Add(time.Millisecond) // 1000 requests a second
		b.request(now, cfg)
		if b.allowRetry(now, cfg) {
			retries++
		}
	}
	requests := 1000 + retries
	if got := float64(retries) / float64(requests); got < 0.19 || got > 0.20 {
		t.Errorf("retries made up %.3f of %d requests, want within [0.19, 0.20]", got, requests)
	}
	// Two intervals later the window is empty: the first retry is refused
	// (it would be the only request), the next fits once requests come.
	now = now.Add(2 * time.Second)
	b.request(now, cfg)
	if b.allowRetry(now, cfg) {
		t.Errorf("a retry after 1 request in the window was allowed; 20%% of 2 is less than 1")
	}
	for range 4 {
		b.request(now, cfg)
	}
	if !b.allowRetry(now, cfg) {
		t.Errorf("a retry after 5 requests in the window was refused; 20%% of 6 is more than 1")
	}
}

// TestRetryBudgetMinRetryRate: with Percent 0, exactly MinRetries retries
// are allowed at once, and the bucket refills at MinRetries per
// MinInterval.
func TestRetryBudgetMinRetryRate(t *testing.T) {
	cfg := &ir.RetryBudget{Key: "ns/svc", Percent: 0, Interval: 10 * time.Second, MinRetries: 3, MinInterval: time.Second}
	var b retryBudget
	now := time.Unix(1000, 0)
	allowed := 0
	for range 10 {
		b.request(now, cfg)
		if b.allowRetry(now, cfg) {
			allowed++
		}
	}
	if allowed != 3 {
		t.Errorf("%d retries allowed at once, want minRetryRate's 3", allowed)
	}
	now = now.Add(time.Second/3 + time.Millisecond)
	if !b.allowRetry(now, cfg) || b.allowRetry(now, cfg) {
		t.Errorf("a third of the interval later, want exactly one more retry allowed")
	}
}

// BenchmarkRetryBudgetCounting measures what the budget adds to a request
// that makes a retry: counting the request and deciding the retry, from
// one goroutine and from all of them at once (one budget, one lock).
func BenchmarkRetryBudgetCounting(b *testing.B) {
	cfg := &ir.RetryBudget{Key: "ns/svc", Percent: 20, Interval: 10 * time.Second, MinRetries: 10, MinInterval: time.Second}
	b.Run("serial", func(b *testing.B) {
		var rb retryBudget
		b.ReportAllocs()
		for b.Loop() {
			now := time.Now()
			rb.request(now, cfg)
			rb.allowRetry(now, cfg)
		}
	})
	b.Run("parallel", func(b *testing.B) {
		var rb retryBudget
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				now := time.Now()
				rb.request(now, cfg)
				rb.allowRetry(now, cfg)
			}
		})
	})
}
