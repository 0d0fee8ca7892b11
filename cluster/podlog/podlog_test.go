package podlog

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// clock is a settable time source for a Buffer.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newAt(t0 time.Time) (*Buffer, *clock) {
	c := &clock{t: t0}
	b := New()
	b.now = c.now
	return b, c
}

func texts(lines []Line) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = l.Text
	}
	return out
}

func equal(t *testing.T, what string, got []Line, want ...string) {
	t.Helper()
	if g := texts(got); !slices.Equal(g, want) {
		t.Errorf("%s: lines %q, want %q", what, g, want)
	}
}

func TestWriteSplitsLinesAndHoldsAPartialOne(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	b, c := newAt(t0)
	fmt.Fprint(b, "one\ntwo\nthr")
	equal(t, "before the third newline", b.Lines(time.Time{}, -1), "one", "two")
	c.t = t0.Add(time.Second)
	if n, err := b.Write([]byte("ee\n\nfour")); n != 8 || err != nil {
		t.Fatalf("Write = %d, %v; want 8, nil", n, err)
	}
	got := b.Lines(time.Time{}, -1)
	equal(t, "after", got, "one", "two", "three", "")
	if !got[0].Time.Equal(t0) || !got[2].Time.Equal(t0.Add(time.Second)) {
		t.Errorf("times %v, %v: want the time of the write that ended each line", got[0].Time, got[2].Time)
	}
	got[0].Text = "changed"
	equal(t, "after changing a returned line", b.Lines(time.Time{}, 1), "")
	equal(t, "the first line again", b.Lines(time.Time{}, -1)[:1], "one")
}

func TestLinesSinceAndTail(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	b, c := newAt(t0)
	for i := range 5 {
		c.t = t0.Add(time.Duration(i) * time.Second)
		fmt.Fprintf(b, "line %d\n", i)
	}
	equal(t, "since the zero time", b.Lines(time.Time{}, -1), "line 0", "line 1", "line 2", "line 3", "line 4")
	equal(t, "since line 2's time exactly", b.Lines(t0.Add(2*time.Second), -1), "line 2", "line 3", "line 4")
	equal(t, "since between lines", b.Lines(t0.Add(2500*time.Millisecond), -1), "line 3", "line 4")
	equal(t, "since after the last", b.Lines(t0.Add(time.Hour), -1))
	equal(t, "since before the first", b.Lines(t0.Add(-time.Hour), -1), "line 0", "line 1", "line 2", "line 3", "line 4")
	equal(t, "tail 2", b.Lines(time.Time{}, 2), "line 3", "line 4")
	equal(t, "tail 0", b.Lines(time.Time{}, 0))
	equal(t, "tail past the count", b.Lines(time.Time{}, 50), "line 0", "line 1", "line 2", "line 3", "line 4")
	equal(t, "since and tail", b.Lines(t0.Add(time.Second), 10), "line 1", "line 2", "line 3", "line 4")
	equal(t, "tail of since", b.Lines(t0.Add(time.Second), 1), "line 4")
}

func TestBoundOnLines(t *testing.T) {
	b := New()
	const extra = 7
	for i := range MaxLines + extra {
		fmt.Fprintf(b, "%d\n", i)
	}
	got := b.Lines(time.Time{}, -1)
	if len(got) != MaxLines || got[0].Text != fmt.Sprint(extra) || got[len(got)-1].Text != fmt.Sprint(MaxLines+extra-1) {
		t.Fatalf("kept %d lines from %q to %q; want %d from %d to %d", len(got), got[0].Text, got[len(got)-1].Text, MaxLines, extra, MaxLines+extra-1)
	}
	if d := b.Dropped(); d != extra {
		t.Errorf("Dropped = %d, want %d", d, extra)
	}
}

func TestBoundOnBytes(t *testing.T) {
	b := New()
	const width = 1000 // 1001 bytes a line with its newline
	const total = 3000
	for i := range total {
		fmt.Fprintf(b, "%0*d\n", width, i)
	}
	got := b.Lines(time.Time{}, -1)
	keep := MaxBytes / (width + 1)
	if len(got) != keep {
		t.Fatalf("kept %d lines of %d bytes, want %d (%d bytes in all)", len(got), width, keep, MaxBytes)
	}
	if want := fmt.Sprintf("%0*d", width, total-1); got[len(got)-1].Text != want {
		t.Errorf("the newest line was not kept")
	}
	if want := fmt.Sprintf("%0*d", width, total-keep); got[0].Text != want {
		t.Errorf("oldest kept line is not line %d", total-keep)
	}
}

func TestLongLinesAreCut(t *testing.T) {
	b := New()
	long := strings.Repeat("a", MaxLineBytes) + strings.Repeat("b", MaxLineBytes) + "ccc"
	fmt.Fprint(b, long+"\n")
	equal(t, "one long line", b.Lines(time.Time{}, -1), strings.Repeat("a", MaxLineBytes), strings.Repeat("b", MaxLineBytes), "ccc")

	// Exactly MaxLineBytes, written in pieces without a newline: one line,
	// not a full one and an empty one.
	b = New()
	fmt.Fprint(b, strings.Repeat("x", MaxLineBytes-1))
	fmt.Fprint(b, "y")
	equal(t, "before the newline", b.Lines(time.Time{}, -1))
	fmt.Fprint(b, "\n")
	equal(t, "a full line", b.Lines(time.Time{}, -1), strings.Repeat("x", MaxLineBytes-1)+"y")

	// Pieces without a newline past the bound become lines at once.
	fmt.Fprint(b, strings.Repeat("z", MaxLineBytes+2))
	equal(t, "a partial line past the bound", b.Lines(time.Time{}, 1), strings.Repeat("z", MaxLineBytes))
	fmt.Fprint(b, "\n")
	equal(t, "its rest", b.Lines(time.Time{}, 1), "zz")
}

func TestConcurrentWritesKeepLinesWhole(t *testing.T) {
	b := New()
	const writers, each = 8, 200
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				fmt.Fprintf(b, "writer %d line %d\n", w, i)
			}
		})
	}
	wg.Wait()
	got := b.Lines(time.Time{}, -1)
	if len(got) != writers*each {
		t.Fatalf("%d lines, want %d", len(got), writers*each)
	}
	next := make([]int, writers)
	for _, l := range got {
		var w, i int
		if _, err := fmt.Sscanf(l.Text, "writer %d line %d", &w, &i); err != nil || w < 0 || w >= writers || i != next[w] {
			t.Fatalf("line %q: torn, or out of its writer's order (want line %d)", l.Text, next[w%writers])
		}
		next[w]++
	}
}
