package ledger

import (
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestSweepPeriod(t *testing.T) {
	tests := []struct{ ttl, want time.Duration }{
		{0, time.Minute}, // default TTL 10m / 4 = 2m30s, capped
		{time.Second, time.Second},
		{8 * time.Second, 2 * time.Second},
		{time.Hour, time.Minute},
	}
	for _, tt := range tests {
		if got := sweepPeriod(tt.ttl); got != tt.want {
			t.Errorf("sweepPeriod(%v) = %v, want %v", tt.ttl, got, tt.want)
		}
	}
}

type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// TestSweeper lets the background sweeper (on a short period) remove ids
// that nobody accesses once the fake clock passes their TTL.
func TestSweeper(t *testing.T) {
	clk := &fakeClock{now: time.Unix(1000, 0)}
	swept := make(chan struct{})
	l := newLedger(Options{TTL: time.Minute, Now: clk.Now}, time.Millisecond, func() {
		select {
		case swept <- struct{}{}:
		default: // nobody waits: the test is not at that point yet
		}
	})
	defer l.Close()
	for i := range 100 {
		l.Begin(strconv.Itoa(i), Attempt{})
	}
	clk.Advance(30 * time.Second)
	l.Begin("young", Attempt{})
	clk.Advance(30 * time.Second)
	// The first sweep seen may have started before the clock moved; the
	// second one started after.
	deadline := time.After(10 * time.Second)
	for range 2 {
		select {
		case <-swept:
		case <-deadline:
			t.Fatal("the sweeper did not run")
		}
	}
	if n := l.Len(); n != 1 {
		t.Fatalf("sweeper left %d ids, want 1", n)
	}
	if _, ok := l.Get("young"); !ok {
		t.Fatal("sweeper removed an id before its TTL")
	}
}

// sameShard returns n ids that hash to one shard of l.
func sameShard(l *Ledger, n int) []string {
	var ids []string
	want := l.shardOf("x0")
	for i := 0; len(ids) < n; i++ {
		id := "x" + strconv.Itoa(i)
		if l.shardOf(id) == want {
			ids = append(ids, id)
		}
	}
	return ids
}

// TestEvictsOldestByLastBegin fills a shard of capacity 2.
func TestEvictsOldestByLastBegin(t *testing.T) {
	clk := &fakeClock{now: time.Unix(1000, 0)}
	l := New(Options{MaxIDs: 2 * maxShards, Now: clk.Now})
	defer l.Close()
	ids := sameShard(l, 3)
	a, b, c := ids[0], ids[1], ids[2]
	for _, id := range []string{a, b, a, c} {
		l.Begin(id, Attempt{})
		clk.Advance(time.Second)
	}
	if _, ok := l.Get(b); ok {
		t.Error("b, the id begun longest ago, was not evicted")
	}
	for _, id := range []string{a, c} {
		if _, ok := l.Get(id); !ok {
			t.Errorf("%s was evicted", id)
		}
	}
}

// TestNoContentionAcrossIDs holds one id's lock (inside Update) and checks
// that another id of the same shard can still begin, update and be read.
func TestNoContentionAcrossIDs(t *testing.T) {
	l := New(Options{})
	defer l.Close()
	ids := sameShard(l, 2)
	held := l.Begin(ids[0], Attempt{})
	inside := make(chan struct{})
	release := make(chan struct{})
	go held.Update(func(*Attempt) {
		close(inside)
		<-release
	})
	<-inside
	done := make(chan struct{})
	go func() {
		h := l.Begin(ids[1], Attempt{})
		h.End(Answered, time.Time{})
		l.Get(ids[1])
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("an attempt of another id waited on a held id's lock")
	}
	close(release)
}

func TestPackHeaders(t *testing.T) {
	long := strings.Repeat("x", 300) // lengths over 127 take two uvarint bytes
	tests := []map[string][]string{
		{},
		{"A": {"1"}},
		{"A": {"1", "2", ""}, "B": nil, "C": {}, "": {"empty name"}},
		{long: {long, long + "y"}, "Bin": {"\x00\x80\xff\r\n"}},
	}
	for _, h := range tests {
		packed, dropped := packHeaders(h, DefaultMaxHeaderBytes)
		got := unpackHeaders(packed)
		if !reflect.DeepEqual(got, h) || dropped != 0 {
			t.Errorf("unpackHeaders(packHeaders(%q)) = %q, %d dropped", h, got, dropped)
		}
		for k, vv := range h { // nil and empty slices are not the same in JSON
			if (vv == nil) != (got[k] == nil) {
				t.Errorf("%q: value slice nil = %v, want %v", k, got[k] == nil, vv == nil)
			}
		}
	}
	if p, _ := packHeaders(nil, DefaultMaxHeaderBytes); p != "" {
		t.Errorf("packHeaders(nil) = %q, want \"\"", p)
	}
	// A slice unpacked is its own: appending to one does not overwrite the
	// next name's values.
	packed, _ := packHeaders(map[string][]string{"A": {"1"}, "B": {"2"}}, DefaultMaxHeaderBytes)
	got := unpackHeaders(packed)
	_ = append(got["A"], "appended")
	if got["B"][0] != "2" || got["A"][0] != "1" {
		t.Errorf("append to one value slice changed another: %q", got)
	}
}

func FuzzPackHeaders(f *testing.F) {
	f.Add("A", "1", "B", "", 2)
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2 string, n int) {
		h := map[string][]string{k1: {v1}, k2: nil}
		if n%3 == 1 {
			h[k2] = []string{v2, v1}
		} else if n%3 == 2 {
			h[k2] = []string{}
		}
		packed, dropped := packHeaders(h, 1<<30)
		got := unpackHeaders(packed)
		if !reflect.DeepEqual(got, h) || dropped != 0 {
			t.Errorf("round trip of %q gave %q, %d dropped", h, got, dropped)
		}
		// Bounded, the headers kept plus the bytes dropped are all there
		// was, and what is kept fits.
		limit := n % 64
		if limit < 0 {
			limit = -limit
		}
		packed, dropped = packHeaders(h, limit)
		kept := headerBytes(unpackHeaders(packed))
		if kept > limit || kept+dropped != headerBytes(h) {
			t.Errorf("packHeaders(%q, %d) kept %d bytes and dropped %d of %d", h, limit, kept, dropped, headerBytes(h))
		}
	})
}

func headerBytes(h map[string][]string) int {
	n := 0
	for k, vv := range h {
		n += len(k)
		for _, v := range vv {
			n += len(v)
		}
	}
	return n
}

// TestPackHeadersBounded cuts headers in name order at the limit, the value
// that crosses it included, and counts what was left out.
func TestPackHeadersBounded(t *testing.T) {
	h := map[string][]string{"B": {"0123456789"}, "A": {"abc"}, "C": {"zz"}}
	packed, dropped := packHeaders(h, 8) // A(1)+abc(3)=4, then B(1)+3 of 10
	got := unpackHeaders(packed)
	want := map[string][]string{"A": {"abc"}, "B": {"012"}}
	if !reflect.DeepEqual(got, want) || dropped != 7+1+2 {
		t.Errorf("packHeaders(%q, 8) = %q, %d dropped; want %q, 10", h, got, dropped, want)
	}
}

func BenchmarkPackHeaders(b *testing.B) {
	h := map[string][]string{"User-Agent": {"fortio.org/fortio-1.68.2"}, "X-Gatewitness-Id": {"0f8e2c1a-5b7d-4e3f-9a6c-2d1b0e8f7a9c"}}
	b.ReportAllocs()
	for b.Loop() {
		packHeaders(h, DefaultMaxHeaderBytes)
	}
}
