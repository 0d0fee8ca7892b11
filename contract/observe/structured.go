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
