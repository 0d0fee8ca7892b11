package observe

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

// fakeTB records what Record does to a test, under a chosen name.
type fakeTB struct {
	testing.TB // only to satisfy the interface; unused methods panic
	name       string
	mu         sync.Mutex
	logs, errs []string
}

func (f *fakeTB) Helper()      {}
func (f *fakeTB) Name() string { return f.name }
func (f *fakeTB) Logf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.logs = append(f.logs, fmt.Sprintf(format, args...))
}
func (f *fakeTB) Errorf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errs = append(f.errs, fmt.Sprintf(format, args...))
}

func TestShortName(t *testing.T) {
	tests := []struct{ name, short, subtest string }{
		{"TestConformance/HTTPRouteRetry", "HTTPRouteRetry", ""},
		{"TestConformance/HTTPRouteRetry/0_request_to_'/retry'", "HTTPRouteRetry", "0_request_to_'/retry'"},
		{"TestConformance/GRPCDeadline/a/b/c", "GRPCDeadline", "a/b/c"},
		{"TestAlone", "TestAlone", ""},
	}
	for _, tt := range tests {
		if got := ShortName(tt.name); got != tt.short {
			t.Errorf("ShortName(%q) = %q, want %q", tt.name, got, tt.short)
		}
		if _, sub := split(tt.name); sub != tt.subtest {
			t.Errorf("subtest of %q = %q, want %q", tt.name, sub, tt.subtest)
		}
	}
}

func TestRecordStoresAndLogs(t *testing.T) {
	c := NewCollector()
	top := &fakeTB{name: "TestConformance/HTTPRouteRetry"}
	sub := &fakeTB{name: "TestConformance/HTTPRouteRetry/code_500"}
	other := &fakeTB{name: "TestConformance/GRPCDeadline"}
	c.Record(top, "attempts", 3)
	c.Record(sub, "gap[1]", 1500*time.Millisecond)
	c.Record(other, "grpc-timeout", "250m")
	c.Record(sub, "status", struct{ Code int }{503})

	want := []Observation{
		{Key: "attempts", Value: "3"},
		{Subtest: "code_500", Key: "gap[1]", Value: "1.5s"},
		{Subtest: "code_500", Key: "status", Value: "{503}"},
	}
	if got := c.For("HTTPRouteRetry"); !slices.Equal(got, want) {
		t.Errorf("For(HTTPRouteRetry) = %+v, want %+v", got, want)
	}
	if got, want := c.For("GRPCDeadline"), []Observation{{Key: "grpc-timeout", Value: "250m"}}; !slices.Equal(got, want) {
		t.Errorf("For(GRPCDeadline) = %+v, want %+v", got, want)
	}
	if got := c.For("Nothing"); got != nil {
		t.Errorf("For(Nothing) = %+v, want nil", got)
	}
	if want := []string{"observe: gap[1] = 1.5s", "observe: status = {503}"}; !slices.Equal(sub.logs, want) {
		t.Errorf("logs = %q, want %q", sub.logs, want)
	}
	for _, tb := range []*fakeTB{top, sub, other} {
		if len(tb.errs) != 0 {
			t.Errorf("%s: unexpected errors %q", tb.name, tb.errs)
		}
	}

	// For returns a copy.
	got := c.For("HTTPRouteRetry")
	got[0].Value = "changed"
	if c.For("HTTPRouteRetry")[0].Value != "3" {
		t.Error("changing For's result changed the collector")
	}

	c.Reset()
	if got := c.For("HTTPRouteRetry"); got != nil {
		t.Errorf("after Reset, For = %+v, want nil", got)
	}
}

func TestRecordRejectsBadKeys(t *testing.T) {
	tests := []struct{ key, want string }{
		{"", "key is empty"},
		{"two words", `contains ' '`},
		{"tab\there", `contains '\t'`},
		{strings.Repeat("k", MaxKeyLen+1), "is 65 bytes long"},
		{"bad\xffutf8", "is not valid UTF-8"},
	}
	for _, tt := range tests {
		c := NewCollector()
		tb := &fakeTB{name: "TestConformance/X"}
		c.Record(tb, tt.key, 1)
		if len(tb.errs) != 1 || !strings.Contains(tb.errs[0], tt.want) || !strings.Contains(tb.errs[0], "want 1 to 64 bytes") {
			t.Errorf("Record(%q): errors %q, want one containing %q and the accepted form", tt.key, tb.errs, tt.want)
		}
		if got := c.For("X"); got != nil {
			t.Errorf("Record(%q) kept %+v", tt.key, got)
		}
	}
	c := NewCollector()
	tb := &fakeTB{name: "TestConformance/X"}
	c.Record(tb, strings.Repeat("k", MaxKeyLen), 1)
	if len(tb.errs) != 0 || len(c.For("X")) != 1 {
		t.Errorf("a key of exactly %d bytes was rejected: %q", MaxKeyLen, tb.errs)
	}
}

func TestRecordBoundsValuesAndCount(t *testing.T) {
	c := NewCollector()
	tb := &fakeTB{name: "TestConformance/Big"}
	c.Record(tb, "body", strings.Repeat("é", MaxValueLen)) // 2 bytes a rune
	v := c.For("Big")[0].Value
	if len(v) > MaxValueLen || !utf8.ValidString(v) || !strings.HasSuffix(v, "…") {
		t.Errorf("long value kept as %d bytes (valid UTF-8: %t), want at most %d ending in …", len(v), utf8.ValidString(v), MaxValueLen)
	}
	exact := strings.Repeat("x", MaxValueLen)
	c.Record(tb, "exact", exact)
	if got := c.For("Big")[1].Value; got != exact {
		t.Errorf("a value of exactly %d bytes was cut to %d bytes", MaxValueLen, len(got))
	}

	for i := 2; i < MaxPerTest+5; i++ {
		c.Record(tb, "n", i)
	}
	if got := len(c.For("Big")); got != MaxPerTest {
		t.Errorf("kept %d observations, want %d", got, MaxPerTest)
	}
	if got := c.Dropped("Big"); got != 5 {
		t.Errorf("Dropped = %d, want 5", got)
	}
	if last := tb.logs[len(tb.logs)-1]; !strings.Contains(last, "not kept") {
		t.Errorf("last log = %q, want a note that the observation was not kept", last)
	}
	if got := c.Dropped("Unknown"); got != 0 {
		t.Errorf("Dropped(Unknown) = %d, want 0", got)
	}
}

func TestRecordBoundsTests(t *testing.T) {
	c := NewCollector()
	for i := range MaxTests {
		c.Record(&fakeTB{name: fmt.Sprintf("TestConformance/T%d", i)}, "k", i)
	}
	tb := &fakeTB{name: "TestConformance/OneTooMany"}
	c.Record(tb, "k", 1)
	if got := c.For("OneTooMany"); got != nil {
		t.Errorf("observations kept for test number %d: %+v", MaxTests+1, got)
	}
	if len(tb.logs) != 2 || !strings.Contains(tb.logs[1], "not kept") {
		t.Errorf("logs = %q, want the observation and a note that it was not kept", tb.logs)
	}
	// Tests already known still record.
	c.Record(&fakeTB{name: "TestConformance/T0"}, "k2", 2)
	if got := len(c.For("T0")); got != 2 {
		t.Errorf("T0 has %d observations, want 2", got)
	}
}

// TestParallelSubtests records from parallel subtests of two conformance
// tests, as the runner does, through the package-level functions.
func TestParallelSubtests(t *testing.T) {
	Reset()
	t.Cleanup(Reset)
	const perTest, subtests = 50, 8
	for _, short := range []string{"ParallelA", "ParallelB"} {
		t.Run(short, func(t *testing.T) {
			t.Parallel()
			for i := range subtests {
				t.Run(fmt.Sprint("sub", i), func(t *testing.T) {
					t.Parallel()
					for j := range perTest {
						Record(t, "n", j)
					}
				})
			}
		})
	}
	t.Cleanup(func() {
		for _, short := range []string{"ParallelA", "ParallelB"} {
			obs := For(short)
			if len(obs) != perTest*subtests {
				t.Errorf("For(%s) has %d observations, want %d", short, len(obs), perTest*subtests)
			}
			// Each subtest's observations keep their order.
			next := map[string]int{}
			for _, o := range obs {
				if o.Value != fmt.Sprint(next[o.Subtest]) {
					t.Errorf("%s/%s: got value %s, want %d", short, o.Subtest, o.Value, next[o.Subtest])
				}
				next[o.Subtest]++
			}
			if len(next) != subtests {
				t.Errorf("%s: observations from %d subtests, want %d", short, len(next), subtests)
			}
		}
	})
}

// benchTB is a test that discards its logs.
type benchTB struct {
	testing.TB
	name string
}

func (b *benchTB) Helper()             {}
func (b *benchTB) Name() string        { return b.name }
func (b *benchTB) Logf(string, ...any) {}

func BenchmarkRecordParallel(b *testing.B) {
	c := NewCollector()
	var mu sync.Mutex
	n := 0
	b.RunParallel(func(pb *testing.PB) {
		mu.Lock()
		tb := &benchTB{name: fmt.Sprintf("TestConformance/T%d/sub", n)}
		n++
		mu.Unlock()
		for i := 0; pb.Next(); i++ {
			c.Record(tb, "attempts", i)
		}
	})
}

// ledgerLike is a Tabler, as a test's retry ledger summary is.
type ledgerLike struct{ rows [][]string }

func (l ledgerLike) String() string { return fmt.Sprintf("%d attempts", len(l.rows)) }
func (l ledgerLike) ObservationTable() Table {
	return Table{Columns: []string{"attempt", "status"}, Rows: l.rows}
}

func TestRecordKeepsTimingsAndTables(t *testing.T) {
	c := NewCollector()
	tb := &fakeTB{name: "TestConformance/Timed/sub"}
	c.Record(tb, "elapsed", Within(2100*time.Millisecond, 2*time.Second, 2*time.Second, 2500*time.Millisecond))
	c.Record(tb, "ledger", ledgerLike{rows: [][]string{{"1", "503"}, {"2", "200", "extra cell"}, {"3"}}})
	c.Record(tb, "plain", 5*time.Second)
	c.Record(tb, "exact", Within(1001400*time.Microsecond, time.Second, time.Second, 1001*time.Millisecond))

	got := c.For("Timed")
	if len(got) != 4 {
		t.Fatalf("kept %d observations, want 3: %+v", len(got), got)
	}
	tm := got[0]
	if tm.Value != "2.1s" || tm.Timing == nil || tm.Timing.Observed != 2100*time.Millisecond ||
		tm.Timing.Configured != 2*time.Second || tm.Timing.Earliest != 2*time.Second || tm.Timing.Latest != 2500*time.Millisecond {
		t.Errorf("timing kept as %+v (timing %+v), want value 2.1s and the window [2s, 2.5s] for 2s", tm, tm.Timing)
	}
	if !tm.Timing.InWindow() {
		t.Error("2.1s in [2s, 2.5s]: InWindow = false")
	}
	if Within(1999*time.Millisecond, 2*time.Second, 2*time.Second, 3*time.Second).InWindow() ||
		Within(3001*time.Millisecond, 2*time.Second, 2*time.Second, 3*time.Second).InWindow() {
		t.Error("InWindow = true for a duration outside the window")
	}
	if want := "observe: elapsed = 2.1s (window [2s, 2.5s] for 2s configured)"; tb.logs[0] != want {
		t.Errorf("log = %q, want %q", tb.logs[0], want)
	}

	tab := got[1]
	want := Table{Columns: []string{"attempt", "status"}, Rows: [][]string{{"1", "503"}, {"2", "200"}, {"3", ""}}}
	if tab.Value != "3 attempts" || tab.Table == nil || !tablesEqual(*tab.Table, want) {
		t.Errorf("table kept as %+v (table %+v), want value %q and %+v", tab, tab.Table, "3 attempts", want)
	}
	if got[2].Timing != nil || got[2].Table != nil || got[2].Value != "5s" {
		t.Errorf("a plain duration kept as %+v, want its text only", got[2])
	}
	// The text rounds to the millisecond; the window is judged on the
	// exact duration, as the test judged it.
	if ex := got[3]; ex.Value != "1.001s" || ex.Timing.Observed != 1001400*time.Microsecond || ex.Timing.InWindow() {
		t.Errorf("1.0014s against [1s, 1.001s] kept as %+v (timing %+v), want text 1.001s, the exact duration, and outside the window", ex, ex.Timing)
	}

	// For returns copies that share nothing with the collector.
	got[0].Timing.Observed = 0
	got[1].Table.Rows[0][0] = "changed"
	again := c.For("Timed")
	if again[0].Timing.Observed != 2100*time.Millisecond || again[1].Table.Rows[0][0] != "1" {
		t.Error("changing For's result changed the collector's timing or table")
	}
}

func TestRecordBoundsTables(t *testing.T) {
	c := NewCollector()
	tb := &fakeTB{name: "TestConformance/Big"}
	cols := make([]string, MaxTableColumns+3)
	for i := range cols {
		cols[i] = fmt.Sprint("c", i)
	}
	var rows [][]string
	for i := range MaxTableRows + 10 {
		rows = append(rows, []string{fmt.Sprint(i), strings.Repeat("x", MaxCellLen+10), "two\nlines"})
	}
	c.Record(tb, "t", bigTable{Table{Columns: cols, Rows: rows}})
	tab := c.For("Big")[0].Table
	if len(tab.Columns) != MaxTableColumns {
		t.Errorf("kept %d columns, want %d", len(tab.Columns), MaxTableColumns)
	}
	if len(tab.Rows) != MaxTableRows {
		t.Fatalf("kept %d rows, want %d", len(tab.Rows), MaxTableRows)
	}
	if last := tab.Rows[MaxTableRows-1][0]; last != "(11 more rows)" {
		t.Errorf("last row starts %q, want %q", last, "(11 more rows)")
	}
	for _, r := range tab.Rows[:MaxTableRows-1] {
		if len(r) != MaxTableColumns || len(r[1]) > MaxCellLen || !strings.HasSuffix(r[1], "…") || r[2] != "two lines" {
			t.Fatalf("row %q: want %d cells, the long one cut to %d bytes, line breaks gone", r, MaxTableColumns, MaxCellLen)
		}
	}
}

type bigTable struct{ t Table }

func (b bigTable) String() string          { return "big" }
func (b bigTable) ObservationTable() Table { return b.t }

func tablesEqual(a, b Table) bool {
	return slices.Equal(a.Columns, b.Columns) && slices.EqualFunc(a.Rows, b.Rows, slices.Equal)
}

// TestRecordKeepsConsistency: a Consistency keeps its times as numbers,
// its text says them rounded, and For's copy shares nothing.
func TestRecordKeepsConsistency(t *testing.T) {
	c := NewCollector()
	tb := &fakeTB{name: "TestConformance/HTTPRouteRetry"}
	v := Consistency{Step: "served", Routes: "HTTPRoute ns/r", Accepted: 3 * time.Millisecond, Programmed: 3 * time.Millisecond,
		FirstServed: 5400 * time.Microsecond, Served: 12 * time.Millisecond}
	c.Record(tb, "consistency", v)
	got := c.For("HTTPRouteRetry")
	if len(got) != 1 || got[0].Consistency == nil || *got[0].Consistency != v {
		t.Fatalf("For = %+v; want the Consistency kept", got)
	}
	if want := "served in 12ms (accepted 3ms, programmed 3ms, first 5ms)"; got[0].Value != want {
		t.Errorf("Value = %q; want %q", got[0].Value, want)
	}
	got[0].Consistency.Served = 0
	if c.For("HTTPRouteRetry")[0].Consistency.Served != v.Served {
		t.Error("changing For's copy changed the collector")
	}
}
