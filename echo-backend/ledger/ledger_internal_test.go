package ledger

import (
	"strconv"
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
