// Package observe lets a conformance test record what it observed (attempt
// counts, gaps between attempts, status codes, elapsed times, the
// grpc-timeout a backend received, ...) so that reports show behaviour and
// not only pass or fail.
//
// Observations are kept by the ShortName of the conformance test that made
// them, in a process-wide collector that parallel tests may share. The
// runner reads them back with For once the test is over.
package observe

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/gatewitness/gatewitness/internal/textcut"
)

// Limits on what one process keeps. A test that records more than
// MaxPerTest observations has the excess dropped and counted (see Dropped).
const (
	// MaxKeyLen is the longest key, in bytes.
	MaxKeyLen = 64
	// MaxValueLen is the longest formatted value kept, in bytes; longer
	// values are cut at a rune boundary and end in "…".
	MaxValueLen = 1024
	// MaxPerTest is the number of observations kept per conformance test.
	MaxPerTest = 1000
	// MaxTests is the number of conformance tests observations are kept for.
	MaxTests = 10000
)

// Observation is one recorded fact.
type Observation struct {
	// Subtest is the part of the recording test's name below the
	// conformance test's ShortName, e.g. "0_request_to_/retry", or "" when
	// the conformance test itself recorded it.
	Subtest string `json:"subtest,omitempty"`
	// Key names what was observed, e.g. "attempts" or "grpc-timeout".
	Key string `json:"key"`
	// Value is the observed value, formatted with fmt's %v when recorded.
	Value string `json:"value"`
	// Timing holds, when the value recorded was a Timing, the observed
	// duration and the window it had to fall in, as numbers a report can
	// draw.
	Timing *Timing `json:"timing,omitempty"`
	// Table holds, when the value recorded was a Tabler (a retry ledger,
	// say), its rows, so a report can show them as a table.
	Table *Table `json:"table,omitempty"`
	// Consistency holds, when the value recorded was a Consistency, the
	// times of a configuration step, as numbers a report can aggregate.
	Consistency *Consistency `json:"consistency,omitempty"`
}

// Collector keeps observations by conformance test. Its methods are safe
// for concurrent use. The zero value is not usable; use NewCollector.
type Collector struct {
	mu    sync.Mutex
	tests map[string]*record
}

type record struct {
	obs     []Observation
	dropped int
}

// NewCollector returns an empty Collector.
func NewCollector() *Collector {
	return &Collector{tests: make(map[string]*record)}
}

// defaultCollector is the process-wide collector behind the package-level
// functions.
var defaultCollector = NewCollector()

// Record records that the running test observed value under key, and logs
// it with t.Logf. The observation is filed under the ShortName of the
// conformance test t belongs to (see ShortName). A key that is empty, longer
// than MaxKeyLen or contains spaces or control characters is reported with
// t.Errorf and not recorded.
func Record(t testing.TB, key string, value any) {
	t.Helper()
	defaultCollector.Record(t, key, value)
}

// For returns a copy of the observations recorded for the conformance test
// with the given ShortName, in the order they were recorded.
func For(shortName string) []Observation { return defaultCollector.For(shortName) }

// Dropped returns how many observations for shortName exceeded the limits
// and were not kept.
func Dropped(shortName string) int { return defaultCollector.Dropped(shortName) }

// Reset forgets every observation, for a runner starting a new run.
func Reset() { defaultCollector.Reset() }

// ShortName returns the ShortName of the conformance test a test named
// testName (as returned by t.Name()) belongs to. The upstream suite and
// gatewitness's runner run each conformance test as t.Run(ShortName) directly
// under the Go test function, so the ShortName is the second element of the
// name: "TestConformance/HTTPRouteRetry/0_request" gives "HTTPRouteRetry".
// A name with one element (a Go test function recording for itself) is
// returned whole.
func ShortName(testName string) string {
	short, _ := split(testName)
	return short
}

// RerunGroup is the subtest, directly under the Go test function, in which
// gatewitness's runner reruns tests (a timing test whose windows the suite's
// own lateness may have missed runs again, alone, after the others):
// "TestConformance/RerunAlone/ConnectionClientTimeout/idle" belongs to
// ConnectionClientTimeout.
const RerunGroup = "RerunAlone"

// split returns the ShortName and the subtest part of a test name.
func split(testName string) (short, subtest string) {
	top, rest, ok := strings.Cut(testName, "/")
	if !ok {
		return top, ""
	}
	short, subtest, _ = strings.Cut(rest, "/")
	if short == RerunGroup && subtest != "" {
		short, subtest, _ = strings.Cut(subtest, "/")
	}
	return short, subtest
}

// Record is like the package-level Record, for this collector.
func (c *Collector) Record(t testing.TB, key string, value any) {
	t.Helper()
	if err := checkKey(key); err != nil {
		t.Errorf("observe.Record: %v", err)
		return
	}
	o := Observation{Key: key, Value: truncate(fmt.Sprint(value), MaxValueLen)}
	short, subtest := split(t.Name())
	o.Subtest = subtest
	switch v := value.(type) {
	case Timing:
		o.Timing = &v
		t.Logf("observe: %s = %s (window %s)", key, o.Value, v.Window)
	case Consistency:
		v.Step, v.Routes = truncate(v.Step, MaxKeyLen), truncate(v.Routes, MaxValueLen)
		o.Consistency = &v
		t.Logf("observe: %s = %s", key, o.Value)
	case Tabler:
		tab := v.ObservationTable().bounded()
		o.Table = &tab
		t.Logf("observe: %s = %s", key, o.Value)
	default:
		t.Logf("observe: %s = %s", key, o.Value)
	}

	c.mu.Lock()
	r, ok := c.tests[short]
	if !ok {
		if len(c.tests) >= MaxTests {
			c.mu.Unlock()
			t.Logf("observe: %s not kept: observations are already kept for %d tests", key, MaxTests)
			return
		}
		r = &record{}
		c.tests[short] = r
	}
	kept := len(r.obs) < MaxPerTest
	if kept {
		r.obs = append(r.obs, o)
	} else {
		r.dropped++
	}
	c.mu.Unlock()
	if !kept {
		t.Logf("observe: %s not kept: %s already has %d observations", key, short, MaxPerTest)
	}
}

// For is like the package-level For, for this collector.
func (c *Collector) For(shortName string) []Observation {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.tests[shortName]
	if !ok || len(r.obs) == 0 {
		return nil
	}
	out := make([]Observation, len(r.obs))
	for i, o := range r.obs {
		out[i] = o.clone()
	}
	return out
}

// clone copies o deeply, so the copy shares nothing with the collector.
func (o Observation) clone() Observation {
	if o.Timing != nil {
		t := *o.Timing
		o.Timing = &t
	}
	if o.Consistency != nil {
		c := *o.Consistency
		o.Consistency = &c
	}
	if o.Table != nil {
		t := Table{Columns: slices.Clone(o.Table.Columns), Rows: make([][]string, len(o.Table.Rows))}
		for i, r := range o.Table.Rows {
			t.Rows[i] = slices.Clone(r)
		}
		o.Table = &t
	}
	return o
}

// Dropped is like the package-level Dropped, for this collector.
func (c *Collector) Dropped(shortName string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r, ok := c.tests[shortName]; ok {
		return r.dropped
	}
	return 0
}

// Reset is like the package-level Reset, for this collector.
func (c *Collector) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tests = make(map[string]*record)
}

func checkKey(key string) error {
	const form = "want 1 to 64 bytes of printable characters without spaces, such as \"attempts\" or \"gap[1]\""
	if key == "" {
		return fmt.Errorf("key is empty; %s", form)
	}
	if len(key) > MaxKeyLen {
		return fmt.Errorf("key %.20q... is %d bytes long; %s", key, len(key), form)
	}
	if !utf8.ValidString(key) {
		return fmt.Errorf("key %q is not valid UTF-8; %s", key, form)
	}
	for _, r := range key {
		if r <= ' ' || r == 0x7f || r >= 0x80 && r < 0xa0 {
			return fmt.Errorf("key %q contains %q; %s", key, r, form)
		}
	}
	return nil
}

// truncate cuts s to at most n bytes, at a rune boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = "…"
	return textcut.Prefix(s, n-len(mark)) + mark
}
