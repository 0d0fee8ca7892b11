package httpecho_test

import (
	"io"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"
)

// BenchmarkDelayAccuracy measures how late delay=1s answers arrive at the
// client: each iteration sends 200 requests, 50 at a time, over HTTP/1.1
// keep-alive connections opened beforehand, and the metrics are the median and the 99th
// percentile of (observed - 1s) over every request. Run it with
//
//	go test -run '^$' -bench DelayAccuracy -benchtime 1x ./echo-backend/httpecho/
func BenchmarkDelayAccuracy(b *testing.B) {
	const (
		requests    = 200
		concurrency = 50
		delay       = time.Second
	)
	e := newEnv(b)
	c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: concurrency}}
	url := e.httpURL + "/bench?delay=1s"

	// Open the connections first, so dialling is not measured.
	var warm sync.WaitGroup
	for range concurrency {
		warm.Go(func() {
			if resp, err := c.Get(e.httpURL + "/warm"); err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
	warm.Wait()

	var mu sync.Mutex
	var extra []time.Duration
	for b.Loop() {
		work := make(chan struct{}, requests)
		for range requests {
			work <- struct{}{}
		}
		close(work)
		var wg sync.WaitGroup
		for range concurrency {
			wg.Go(func() {
				for range work {
					begin := time.Now()
					resp, err := c.Get(url)
					if err != nil {
						b.Error(err)
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					over := time.Since(begin) - delay
					mu.Lock()
					extra = append(extra, over)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
	}
	slices.Sort(extra)
	if len(extra) == 0 {
		return
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(extra[len(extra)/2]), "median-over-ms")
	b.ReportMetric(ms(extra[(len(extra)*99)/100]), "p99-over-ms")
	b.ReportMetric(ms(extra[0]), "min-over-ms")
}
