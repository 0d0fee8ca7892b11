package httpecho_test

import (
	"io"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"
)

// delayCase is one load shape of the delay benchmarks: concurrency
// requests in flight at once, each delayed by delay. With spread, the
// workers start delay/concurrency apart, so their timers fire spread over
// the delay instead of all at once.
type delayCase struct {
	concurrency int
	spread      bool
}

func (c delayCase) String() string {
	s := "c=" + strconv.Itoa(c.concurrency)
	if c.spread {
		s += "/spread"
	}
	return s
}

var delayCases = []delayCase{{1, false}, {10, false}, {25, false}, {50, false}, {50, true}}

// BenchmarkDelayAccuracy measures how late delay=1s answers are, as the
// client sees them and as the backend's own ledger records them. Each
// iteration sends 200 requests (20 at concurrency 1) over HTTP/1.1
// keep-alive connections opened beforehand, each with its own request id.
// The metrics are the median and 99th percentile, over every request, of
//
//	client-*-ms   response headers read by the client - request sent - 1s
//	server-*-ms   ledger headersSent - ledger arrived - 1s
//	probe-*-ms    how late a 10ms timer fires, in a loop beside the load
//
// Client and server share the process and its 2 CPUs, so the client's own
// work is in the first figure; the second is the backend's accuracy. The
// probe measures, over the same seconds, how late this process gets to run
// once a timer expires: the floor under the server figure, which on a
// shared machine moves with the neighbours' load. Run it with
//
//	go test -run '^$' -bench DelayAccuracy -benchtime 1x ./echo-backend/httpecho/
func BenchmarkDelayAccuracy(b *testing.B) {
	const delay = time.Second
	for _, dc := range delayCases {
		b.Run(dc.String(), func(b *testing.B) {
			requests := 200
			if dc.concurrency == 1 {
				requests = 20 // 20s; the other cases take 200s/concurrency
			}
			e := newEnv(b)
			c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: dc.concurrency}}
			url := e.httpURL + "/bench?delay=" + delay.String()

			// Open the connections first, so dialling is not measured.
			var warm sync.WaitGroup
			for range dc.concurrency {
				warm.Go(func() {
					if resp, err := c.Get(e.httpURL + "/warm"); err == nil {
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
					}
				})
			}
			warm.Wait()

			probe := startProbe()
			var mu sync.Mutex
			var client []time.Duration
			var ids []string
			seq := 0
			for b.Loop() {
				work := make(chan string, requests)
				for range requests {
					seq++
					work <- "delay-bench-" + strconv.Itoa(seq)
				}
				close(work)
				var wg sync.WaitGroup
				for w := range dc.concurrency {
					wg.Go(func() {
						if dc.spread {
							// Pace the start of the load; this is the
							// benchmark's input, not a synchronisation.
							<-time.After(time.Duration(w) * delay / time.Duration(dc.concurrency))
						}
						for id := range work {
							req, err := http.NewRequest(http.MethodGet, url, nil)
							if err != nil {
								b.Error(err)
								return
							}
							req.Header.Set("X-Gatewitness-Id", id)
							begin := time.Now()
							resp, err := c.Do(req)
							if err != nil {
								b.Error(err)
								return
							}
							over := time.Since(begin) - delay
							io.Copy(io.Discard, resp.Body)
							resp.Body.Close()
							mu.Lock()
							client = append(client, over)
							ids = append(ids, id)
							mu.Unlock()
						}
					})
				}
				wg.Wait()
			}

			// The backend records an attempt's end just after its last
			// write, so the client may be a little ahead: poll.
			var server []time.Duration
			deadline := time.Now().Add(10 * time.Second)
			for _, id := range ids {
				for {
					en, ok := e.ledger.Get(id)
					if ok && len(en.Attempts) == 1 && en.Attempts[0].Ended != nil && en.Attempts[0].HeadersSent != nil {
						a := en.Attempts[0]
						server = append(server, a.HeadersSent.Sub(a.Arrived)-delay)
						break
					}
					if time.Now().After(deadline) {
						b.Fatalf("ledger %q: want one ended attempt with headersSent, have %+v", id, en)
					}
					<-time.After(time.Millisecond) // poll interval
				}
			}
			reportSpread(b, "client", client)
			reportSpread(b, "server", server)
			reportSpread(b, "probe", probe())
		})
	}
}

// startProbe starts a goroutine that sleeps 10ms in a loop and records how
// late each timer fired; the function it returns stops it and returns the
// samples.
func startProbe() (stop func() []time.Duration) {
	const tick = 10 * time.Millisecond
	quit := make(chan struct{})
	done := make(chan []time.Duration)
	go func() {
		var late []time.Duration
		t := time.NewTimer(tick)
		defer t.Stop()
		for {
			armed := time.Now()
			t.Reset(tick)
			select {
			case <-quit:
				done <- late
				return
			case <-t.C:
				late = append(late, time.Since(armed)-tick)
			}
		}
	}()
	return func() []time.Duration {
		close(quit)
		return <-done
	}
}

// BenchmarkTimerLateness measures the Go runtime alone: how late
// concurrency timers of 1s fire, started as the delay cases start their
// requests. It is the floor under BenchmarkDelayAccuracy's server figures.
//
//	go test -run '^$' -bench TimerLateness -benchtime 1x ./echo-backend/httpecho/
func BenchmarkTimerLateness(b *testing.B) {
	const delay = time.Second
	for _, dc := range delayCases {
		b.Run(dc.String(), func(b *testing.B) {
			rounds := 200 / dc.concurrency
			if dc.concurrency == 1 {
				rounds = 20
			}
			var mu sync.Mutex
			var late []time.Duration
			for b.Loop() {
				var wg sync.WaitGroup
				for w := range dc.concurrency {
					wg.Go(func() {
						if dc.spread {
							<-time.After(time.Duration(w) * delay / time.Duration(dc.concurrency))
						}
						for range rounds {
							begin := time.Now()
							<-time.After(delay)
							over := time.Since(begin) - delay
							mu.Lock()
							late = append(late, over)
							mu.Unlock()
						}
					})
				}
				wg.Wait()
			}
			reportSpread(b, "timer", late)
		})
	}
}

// reportSpread reports the median and 99th percentile of ds, in
// milliseconds, as metrics named prefix-median-ms and prefix-p99-ms.
func reportSpread(b *testing.B, prefix string, ds []time.Duration) {
	if len(ds) == 0 {
		b.Fatalf("%s: no samples", prefix)
	}
	slices.Sort(ds)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(ds[len(ds)/2]), prefix+"-median-ms")
	b.ReportMetric(ms(ds[(len(ds)*99)/100]), prefix+"-p99-ms")
}
