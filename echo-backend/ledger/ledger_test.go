package ledger_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatewitness/gatewitness/echo-backend/ledger"
)

// clock is a fake clock safe for concurrent use.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func newLedger(t testing.TB, opts ledger.Options) *ledger.Ledger {
	t.Helper()
	l := ledger.New(opts)
	t.Cleanup(l.Close)
	return l
}

func TestBeginFillsAttempt(t *testing.T) {
	clk := newClock()
	l := newLedger(t, ledger.Options{Now: clk.Now})
	hdr := map[string][]string{"X-A": {"1", "2"}}
	h1 := l.Begin("id", ledger.Attempt{Method: "GET", Path: "/x", Headers: hdr, Outcome: ledger.Answered, Number: 7})
	given := clk.Now().Add(-time.Second)
	h2 := l.Begin("id", ledger.Attempt{Arrived: given})
	if h1.Number() != 1 || h2.Number() != 2 {
		t.Fatalf("numbers %d, %d; want 1, 2", h1.Number(), h2.Number())
	}
	e, ok := l.Get("id")
	if !ok {
		t.Fatal("Get: id not found")
	}
	want := ledger.Entry{ID: "id", Attempts: []ledger.Attempt{
		{Number: 1, Arrived: clk.Now(), Outcome: ledger.InFlight, Method: "GET", Path: "/x", Headers: hdr},
		{Number: 2, Arrived: given, Outcome: ledger.InFlight},
	}}
	if !reflect.DeepEqual(e, want) {
		t.Errorf("Get = %+v\nwant %+v", e, want)
	}
	if _, ok := l.Get("other"); ok {
		t.Error("Get of an unknown id found it")
	}
	if l.Len() != 1 {
		t.Errorf("Len = %d, want 1", l.Len())
	}
}

func TestConcurrentNumbers(t *testing.T) {
	const goroutines, each = 32, 50
	l := newLedger(t, ledger.Options{MaxAttempts: goroutines * each})
	numbers := make(chan int, goroutines*each)
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for range each {
				h := l.Begin("same", ledger.Attempt{})
				numbers <- h.Number()
				h.End(ledger.Answered, time.Time{})
			}
		})
	}
	wg.Wait()
	close(numbers)
	var got []int
	for n := range numbers {
		got = append(got, n)
	}
	slices.Sort(got)
	for i, n := range got {
		if n != i+1 {
			t.Fatalf("sorted numbers[%d] = %d: numbers are not exactly 1..%d", i, n, goroutines*each)
		}
	}
	if len(got) != goroutines*each {
		t.Fatalf("%d numbers, want %d", len(got), goroutines*each)
	}
	e, _ := l.Get("same")
	if len(e.Attempts) != goroutines*each {
		t.Fatalf("%d attempts stored, want %d", len(e.Attempts), goroutines*each)
	}
	for i, a := range e.Attempts {
		if a.Number != i+1 || a.Outcome != ledger.Answered {
			t.Fatalf("attempt %d: number %d outcome %q", i, a.Number, a.Outcome)
		}
	}
}

func TestHandleFirstWins(t *testing.T) {
	clk := newClock()
	l := newLedger(t, ledger.Options{Now: clk.Now})
	t0 := clk.Now()
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	tp := func(d time.Duration) *time.Time { x := at(d); return &x }

	tests := []struct {
		name string
		do   func(h *ledger.Handle)
		want ledger.Attempt
	}{
		{"end", func(h *ledger.Handle) { h.End(ledger.Answered, at(1)) },
			ledger.Attempt{Ended: tp(1), Outcome: ledger.Answered}},
		{"end twice", func(h *ledger.Handle) { h.End(ledger.Reset, at(1)); h.End(ledger.Answered, at(2)) },
			ledger.Attempt{Ended: tp(1), Outcome: ledger.Reset}},
		{"cancelled after end", func(h *ledger.Handle) { h.End(ledger.GoAway, at(1)); h.Cancelled(at(2)) },
			ledger.Attempt{Ended: tp(1), Outcome: ledger.GoAway}},
		{"end after cancelled", func(h *ledger.Handle) { h.Cancelled(at(1)); h.End(ledger.Answered, at(2)) },
			ledger.Attempt{Ended: tp(1), CancelledAt: tp(1), Outcome: ledger.Cancelled}},
		{"cancelled twice", func(h *ledger.Handle) { h.Cancelled(at(1)); h.Cancelled(at(2)) },
			ledger.Attempt{Ended: tp(1), CancelledAt: tp(1), Outcome: ledger.Cancelled}},
		{"headers sent once", func(h *ledger.Handle) { h.HeadersSent(at(1)); h.HeadersSent(at(2)) },
			ledger.Attempt{HeadersSent: tp(1), Outcome: ledger.InFlight}},
		{"zero times are now", func(h *ledger.Handle) {
			clk.Advance(time.Second)
			h.HeadersSent(time.Time{})
			clk.Advance(time.Second)
			h.End(ledger.Closed, time.Time{})
		}, ledger.Attempt{HeadersSent: tp(time.Second), Ended: tp(2 * time.Second), Outcome: ledger.Closed}},
		{"update", func(h *ledger.Handle) {
			h.Update(func(a *ledger.Attempt) { a.Status = 503; a.Fault = "status=503"; a.BodyBytes = 3 })
		}, ledger.Attempt{Status: 503, Fault: "status=503", BodyBytes: 3, Outcome: ledger.InFlight}},
	}
	for i, tt := range tests {
		id := strconv.Itoa(i)
		clk.mu.Lock()
		clk.now = t0
		clk.mu.Unlock()
		h := l.Begin(id, ledger.Attempt{})
		tt.do(h)
		e, ok := l.Get(id)
		if !ok || len(e.Attempts) != 1 {
			t.Fatalf("%s: Get = %+v, %v", tt.name, e, ok)
		}
		tt.want.Number, tt.want.Arrived = 1, t0
		if got := e.Attempts[0]; !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: attempt = %s\nwant %s", tt.name, show(got), show(tt.want))
		}
	}
}

func show(a ledger.Attempt) string {
	b, _ := json.Marshal(a)
	return string(b)
}

func TestEmptyID(t *testing.T) {
	l := newLedger(t, ledger.Options{})
	for range 3 {
		h := l.Begin("", ledger.Attempt{Method: "GET"})
		if h.Number() != 1 {
			t.Errorf("empty id: Number = %d, want 1", h.Number())
		}
		h.HeadersSent(time.Now())
		h.Cancelled(time.Now())
		h.End(ledger.Answered, time.Now())
		called := false
		h.Update(func(*ledger.Attempt) { called = true })
		if called {
			t.Error("empty id: Update ran its function")
		}
	}
	if _, ok := l.Get(""); ok {
		t.Error("Get(\"\") found an entry")
	}
	if l.Len() != 0 {
		t.Errorf("Len = %d after empty-id attempts, want 0", l.Len())
	}
}

func TestMaxAttempts(t *testing.T) {
	l := newLedger(t, ledger.Options{MaxAttempts: 3})
	var hs []*ledger.Handle
	for i := 1; i <= 5; i++ {
		h := l.Begin("id", ledger.Attempt{})
		if h.Number() != i {
			t.Fatalf("attempt %d got number %d", i, h.Number())
		}
		hs = append(hs, h)
	}
	for _, h := range hs {
		h.End(ledger.Answered, time.Now())
		h.Update(func(a *ledger.Attempt) { a.Status = 200 })
	}
	e, _ := l.Get("id")
	if len(e.Attempts) != 3 || e.Dropped != 2 {
		t.Fatalf("%d attempts, %d dropped; want 3 and 2", len(e.Attempts), e.Dropped)
	}
	for i, a := range e.Attempts {
		if a.Number != i+1 || a.Status != 200 || a.Outcome != ledger.Answered {
			t.Errorf("attempt %d = %s", i, show(a))
		}
	}
}

func TestTTL(t *testing.T) {
	clk := newClock()
	const ttl = time.Minute
	l := newLedger(t, ledger.Options{TTL: ttl, Now: clk.Now})
	l.Begin("a", ledger.Attempt{})
	l.Begin("b", ledger.Attempt{})
	clk.Advance(ttl / 2)
	l.Begin("b", ledger.Attempt{}) // b lives until ttl/2 + ttl
	clk.Advance(ttl/2 - time.Nanosecond)
	if _, ok := l.Get("a"); !ok {
		t.Fatal("a expired before its TTL")
	}
	clk.Advance(time.Nanosecond)
	if _, ok := l.Get("a"); ok {
		t.Fatal("a did not expire TTL after its last Begin")
	}
	if e, ok := l.Get("b"); !ok || len(e.Attempts) != 2 {
		t.Fatalf("b: %+v, %v; want alive with 2 attempts", e, ok)
	}
	clk.Advance(ttl / 2)
	if h := l.Begin("b", ledger.Attempt{}); h.Number() != 1 {
		t.Fatalf("Begin of an expired id got number %d, want 1", h.Number())
	}
	if e, _ := l.Get("b"); len(e.Attempts) != 1 {
		t.Fatalf("expired id kept %d attempts", len(e.Attempts))
	}
	if l.Len() != 1 {
		t.Errorf("Len = %d, want 1", l.Len())
	}
}

func TestMaxIDs(t *testing.T) {
	for _, max := range []int{1, 5, 64, 100, 1000} {
		clk := newClock()
		l := newLedger(t, ledger.Options{MaxIDs: max, Now: clk.Now})
		for i := range 20 * max {
			id := fmt.Sprintf("id-%d", i)
			l.Begin(id, ledger.Attempt{})
			clk.Advance(time.Millisecond)
			if n := l.Len(); n > max {
				t.Fatalf("MaxIDs %d: Len = %d after %d ids", max, n, i+1)
			}
			if _, ok := l.Get(id); !ok {
				t.Fatalf("MaxIDs %d: the newest id %s was evicted", max, id)
			}
		}
		// Spread over the shards, the ledger still holds most of what it may.
		if n := l.Len(); n < max/2 {
			t.Errorf("MaxIDs %d: only %d ids held after %d", max, n, 20*max)
		}
	}
}

func TestMaxIDsConcurrent(t *testing.T) {
	const max = 200
	l := newLedger(t, ledger.Options{MaxIDs: max})
	var over atomic.Int64
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 500 {
				h := l.Begin(fmt.Sprintf("g%d-%d", g, i), ledger.Attempt{})
				h.End(ledger.Answered, time.Time{})
				if n := l.Len(); n > max {
					over.Store(int64(n))
				}
			}
		})
	}
	wg.Wait()
	if n := over.Load(); n != 0 {
		t.Fatalf("Len reached %d, above MaxIDs %d", n, max)
	}
}

func TestDeleteAndStaleHandles(t *testing.T) {
	l := newLedger(t, ledger.Options{MaxIDs: 1})
	old := l.Begin("a", ledger.Attempt{})
	l.Begin("b", ledger.Attempt{}) // evicts a
	if _, ok := l.Get("a"); ok {
		t.Fatal("a was not evicted")
	}
	old.HeadersSent(time.Now())
	old.Update(func(a *ledger.Attempt) { a.Status = 500 })
	old.End(ledger.Answered, time.Now())
	if old.Number() != 1 {
		t.Errorf("evicted handle Number = %d", old.Number())
	}
	h := l.Begin("a", ledger.Attempt{})
	if h.Number() != 1 {
		t.Errorf("re-begun id got number %d, want 1", h.Number())
	}
	e, _ := l.Get("a")
	if len(e.Attempts) != 1 || e.Attempts[0].Status != 0 || e.Attempts[0].Outcome != ledger.InFlight {
		t.Errorf("stale handle leaked into the new entry: %+v", e)
	}
	l.Delete("a")
	l.Delete("never")
	if _, ok := l.Get("a"); ok {
		t.Error("Delete did not forget a")
	}
	h.End(ledger.Answered, time.Now())
	if l.Len() != 0 {
		t.Errorf("Len = %d, want 0", l.Len())
	}
}

func TestGetDeepCopy(t *testing.T) {
	l := newLedger(t, ledger.Options{})
	h := l.Begin("id", ledger.Attempt{Headers: map[string][]string{"A": {"1"}}})
	h.HeadersSent(time.Now())
	h.End(ledger.Answered, time.Now())
	e, _ := l.Get("id")
	e.Attempts[0].Headers["A"][0] = "changed"
	e.Attempts[0].Headers["B"] = []string{"new"}
	*e.Attempts[0].Ended = time.Time{}
	*e.Attempts[0].HeadersSent = time.Time{}
	again, _ := l.Get("id")
	a := again.Attempts[0]
	if !reflect.DeepEqual(a.Headers, map[string][]string{"A": {"1"}}) || a.Ended.IsZero() || a.HeadersSent.IsZero() {
		t.Errorf("changing a copy changed the ledger: %s", show(a))
	}
}

// TestGetWhileUpdating marshals copies while handles update the same
// attempts; run with -race.
func TestGetWhileUpdating(t *testing.T) {
	l := newLedger(t, ledger.Options{})
	const attempts = 20
	var wg sync.WaitGroup
	for i := range attempts {
		wg.Go(func() {
			h := l.Begin("id", ledger.Attempt{Headers: map[string][]string{"X": {strconv.Itoa(i)}}})
			h.HeadersSent(time.Time{})
			for j := range 50 {
				h.Update(func(a *ledger.Attempt) { a.BodyBytes = int64(j); a.Status = 200 + j })
			}
			if i%2 == 0 {
				h.Cancelled(time.Time{})
			} else {
				h.End(ledger.Answered, time.Time{})
			}
		})
	}
	for range 4 {
		wg.Go(func() {
			for range 200 {
				if e, ok := l.Get("id"); ok {
					if _, err := json.Marshal(e); err != nil {
						t.Error(err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	e, _ := l.Get("id")
	if len(e.Attempts) != attempts {
		t.Fatalf("%d attempts, want %d", len(e.Attempts), attempts)
	}
	for _, a := range e.Attempts {
		if a.Ended == nil || a.HeadersSent == nil || a.BodyBytes != 49 || a.Status != 249 {
			t.Errorf("attempt not fully recorded: %s", show(a))
		}
	}
}

func TestCloseTwice(t *testing.T) {
	l := ledger.New(ledger.Options{})
	l.Close()
	l.Close()
	l.Begin("id", ledger.Attempt{}) // still usable
	if _, ok := l.Get("id"); !ok {
		t.Error("ledger unusable after Close")
	}
}

// BenchmarkBeginEnd records one attempt per id from parallel goroutines, the
// common case of a test that sends one request per id. The id pool is larger
// than MaxIDs, so it measures the steady state with eviction.
func BenchmarkBeginEnd(b *testing.B) {
	l := ledger.New(ledger.Options{})
	defer l.Close()
	ids := make([]string, 1<<16)
	for i := range ids {
		ids[i] = "req-" + strconv.Itoa(i)
	}
	hdr := map[string][]string{"User-Agent": {"bench"}}
	var next atomic.Uint64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			id := ids[next.Add(1)%uint64(len(ids))]
			h := l.Begin(id, ledger.Attempt{Method: "GET", Path: "/", Headers: hdr})
			h.HeadersSent(time.Time{})
			h.End(ledger.Answered, time.Time{})
		}
	})
}

// BenchmarkBeginEndSameID has every goroutine record attempts of one id,
// the worst case for contention.
func BenchmarkBeginEndSameID(b *testing.B) {
	l := ledger.New(ledger.Options{})
	defer l.Close()
	hdr := map[string][]string{"User-Agent": {"bench"}}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			h := l.Begin("same", ledger.Attempt{Method: "GET", Path: "/", Headers: hdr})
			h.HeadersSent(time.Time{})
			h.End(ledger.Answered, time.Time{})
		}
	})
}

// TestAttemptBytesBounded records an attempt with a header, a path and a
// method far over the per-attempt bounds, and wants each cut, the cuts
// named in Truncated, and an attempt within bounds left whole.
func TestAttemptBytesBounded(t *testing.T) {
	l := newLedger(t, ledger.Options{MaxHeaderBytes: 100, MaxPathBytes: 20})
	big := strings.Repeat("h", 1<<20)
	l.Begin("big", ledger.Attempt{
		Method:  "GET",
		Path:    "/" + strings.Repeat("p", 99),
		Headers: map[string][]string{"X-Big": {big}, "A": {"kept"}},
	})
	e, _ := l.Get("big")
	a := e.Attempts[0]
	if got := a.Headers["A"]; !slices.Equal(got, []string{"kept"}) {
		t.Errorf("header A = %q, want it kept whole (it sorts first)", got)
	}
	if v := a.Headers["X-Big"]; len(v) != 1 || len(v[0]) != 100-len("A")-len("kept")-len("X-Big") {
		t.Errorf("X-Big kept %d bytes, want the rest of the 100-byte bound", len(strings.Join(v, "")))
	}
	if len(a.Path) != 20 {
		t.Errorf("path kept %d bytes, want 20", len(a.Path))
	}
	want := []string{
		"path: 80 bytes not kept",
		fmt.Sprintf("headers: %d bytes not kept", len("X-Big")+len(big)+len("A")+len("kept")-100),
	}
	if !slices.Equal(a.Truncated, want) {
		t.Errorf("truncated = %q, want %q", a.Truncated, want)
	}

	l.Begin("small", ledger.Attempt{Method: "GET", Path: "/a", Headers: map[string][]string{"A": {"1"}}})
	if e, _ := l.Get("small"); e.Attempts[0].Truncated != nil || e.Attempts[0].Path != "/a" {
		t.Errorf("an attempt within bounds: %+v", e.Attempts[0])
	}
}

// TestMaxBytes fills a ledger with attempts of large headers and wants it
// to keep only about MaxBytes of them, evicting the oldest ids first.
func TestMaxBytes(t *testing.T) {
	const headerBytes = 10 << 10
	l := newLedger(t, ledger.Options{MaxIDs: 64 * 100, MaxHeaderBytes: headerBytes, MaxBytes: 64 * 4 * (headerBytes + 1024)})
	h := map[string][]string{"X": {strings.Repeat("x", headerBytes)}}
	const ids = 64 * 40
	for i := range ids {
		l.Begin(fmt.Sprint("id-", i), ledger.Attempt{Headers: h})
	}
	// Each of the 64 shards has room for about 4 such attempts.
	if n := l.Len(); n > 64*4 || n < 64*2 {
		t.Errorf("%d ids held after %d attempts of %d header bytes; want about %d", n, ids, headerBytes, 64*4)
	}
	if _, ok := l.Get(fmt.Sprint("id-", ids-1)); !ok {
		t.Error("the newest id was evicted")
	}
	if _, ok := l.Get("id-0"); ok {
		t.Error("the oldest id was kept")
	}
	// An id's own attempts never evict it, even over its shard's share.
	for range 20 {
		l.Begin("heavy", ledger.Attempt{Headers: h})
	}
	if e, ok := l.Get("heavy"); !ok || len(e.Attempts) != 20 {
		t.Errorf("an id whose attempts outgrow its shard's share: found %v with %d attempts, want 20", ok, len(e.Attempts))
	}
}
