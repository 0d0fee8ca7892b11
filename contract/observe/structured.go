package observe

import (
	"fmt"
	"strings"
	"time"
)

// Two kinds of value keep more than their text when recorded, so a report
// can draw them: a Timing (an observed duration and the window it had to
// fall in) and a Tabler (rows, such as the attempts of a retry ledger).
// Any other value is kept as its text only.

// Window is the range of durations a timed behaviour had to fall in to
// pass: not before Earliest, not after Latest. Configured is the limit the
// test set (a timeout, a backoff, a probe period); the window is usually
// [Configured, Configured+tolerance], but a test may open it earlier (to
// allow for a clock it cannot read exactly) or place it elsewhere.
type Window struct {
	Configured time.Duration `json:"configured"`
	Earliest   time.Duration `json:"earliest"`
	Latest     time.Duration `json:"latest"`
}

// String describes w as "[2s, 2.5s] for 2s configured".
func (w Window) String() string {
	return fmt.Sprintf("[%v, %v] for %v configured", w.Earliest, w.Latest, w.Configured)
}

// Timing is an observed duration and the window it was held to. Record it
// as a value (observe.Record(t, "elapsed", observe.Within(...))): its text
// is the observed duration rounded to the millisecond, and the exact
// numbers are kept in Observation.Timing, so a report judges the window as
// the test did.
type Timing struct {
	Observed time.Duration `json:"observed"`
	Window
}

// Within returns the Timing of observed, held to [earliest, latest] around
// the configured limit.
func Within(observed, configured, earliest, latest time.Duration) Timing {
	return Timing{Observed: observed, Window: Window{Configured: configured, Earliest: earliest, Latest: latest}}
}

// String is the observed duration, rounded to the millisecond.
func (t Timing) String() string { return t.Observed.Round(time.Millisecond).String() }

// InWindow reports whether the observed duration lies in the window.
func (t Timing) InWindow() bool { return t.Observed >= t.Earliest && t.Observed <= t.Latest }

// Limits on a table kept with an observation.
const (
	// MaxTableColumns is the most columns kept; later ones are dropped.
	MaxTableColumns = 16
	// MaxTableRows is the most rows kept; a last row says how many more
	// there were.
	MaxTableRows = 100
	// MaxCellLen is the longest cell, in bytes; longer cells are cut at a
	// rune boundary and end in "…".
	MaxCellLen = 256
)

// Table is a small table: a header and rows of cells, each row as long as
// the header.
type Table struct {
	Columns []string   `json:"columns"`
	Rows    [][]string `json:"rows"`
}

// A Tabler is a value that can show itself as a table. Recording one keeps
// its text (fmt's %v, so give it a String method) and its table.
type Tabler interface {
	ObservationTable() Table
}

// bounded returns a copy of t within the limits: at most MaxTableColumns
// columns and MaxTableRows rows (the last saying how many more there were),
// each row padded or cut to the header's length, each cell at most
// MaxCellLen bytes and free of line breaks.
func (t Table) bounded() Table {
	cols := t.Columns
	if len(cols) > MaxTableColumns {
		cols = cols[:MaxTableColumns]
	}
	out := Table{Columns: make([]string, len(cols))}
	for i, c := range cols {
		out.Columns[i] = cell(c)
	}
	rows := t.Rows
	more := 0
	if len(rows) > MaxTableRows {
		more = len(rows) - (MaxTableRows - 1)
		rows = rows[:MaxTableRows-1]
	}
	for _, r := range rows {
		row := make([]string, len(cols))
		for i := range row {
			if i < len(r) {
				row[i] = cell(r[i])
			}
		}
		out.Rows = append(out.Rows, row)
	}
	if more > 0 && len(cols) > 0 {
		row := make([]string, len(cols))
		row[0] = fmt.Sprintf("(%d more rows)", more)
		out.Rows = append(out.Rows, row)
	}
	return out
}

func cell(s string) string {
	return truncate(strings.Join(strings.Fields(s), " "), MaxCellLen)
}

// Consistency is how long one configuration step of a test took to reach
// the data plane, each time from the step's start (before its API calls:
// the manifests applied, or the routes deleted) to when the suite saw it.
// Record it as a value (observe.Record(t, "consistency", ...)); a report
// draws the distribution over a run's steps. A time the step did not wait
// for is zero.
type Consistency struct {
	// Step names the step: "served" for routes added, "deleted" for
	// routes taken away; Routes names what it configured.
	Step   string `json:"step"`
	Routes string `json:"routes,omitempty"`
	// Accepted and Programmed are when the suite saw the routes Accepted
	// and their Gateway Programmed (status), zero for a deletion.
	Accepted   time.Duration `json:"accepted,omitempty"`
	Programmed time.Duration `json:"programmed,omitempty"`
	// FirstServed is when the first request answered as only the new
	// configuration answers (by the route's backend; for a deletion, by
	// anything else); Served is when the last of the answers in a row
	// the step waits for came, each on a connection of its own: the data
	// plane was then seen serving the step on every path the requests took.
	FirstServed time.Duration `json:"firstServed"`
	Served      time.Duration `json:"served"`
}

// String is "served in 12ms (accepted 3ms, programmed 3ms, first served 5ms)".
func (c Consistency) String() string {
	ms := func(d time.Duration) string { return d.Round(time.Millisecond).String() }
	s := fmt.Sprintf("%s in %s", c.Step, ms(c.Served))
	var parts []string
	if c.Accepted > 0 {
		parts = append(parts, "accepted "+ms(c.Accepted))
	}
	if c.Programmed > 0 {
		parts = append(parts, "programmed "+ms(c.Programmed))
	}
	parts = append(parts, "first "+ms(c.FirstServed))
	return s + " (" + strings.Join(parts, ", ") + ")"
}
