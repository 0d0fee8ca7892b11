package testclient

import (
	"fmt"
	"strings"
	"time"

	"github.com/gatewitness/gatewitness/contract/echowire"
	"github.com/gatewitness/gatewitness/contract/observe"
)

// Settled reports whether every attempt of e has ended.
func Settled(e echowire.Entry) bool {
	for _, a := range e.Attempts {
		if a.Outcome == echowire.InFlight || a.Ended == nil {
			return false
		}
	}
	return true
}

// Summary is a ledger entry as tests show it: one line of text (String),
// or, recorded as an observation, a table of its attempts
// (ObservationTable).
type Summary echowire.Entry

// String is "1:503/answered 2:200/answered": each attempt's number, the
// status the backend sent and how the attempt ended; "no attempt" when the
// backend recorded none.
func (e Summary) String() string {
	if len(e.Attempts) == 0 && e.Dropped == 0 {
		return "no attempt"
	}
	var b strings.Builder
	for i, a := range e.Attempts {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%d:%d/%s", a.Number, a.Status, a.Outcome)
	}
	if e.Dropped > 0 {
		if len(e.Attempts) > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "(+%d dropped)", e.Dropped)
	}
	return b.String()
}

// ObservationTable is a row per attempt, by the backend's clock: when it
// arrived, sent its headers, was cancelled and ended, in milliseconds from
// the first attempt's arrival; the gap since the attempt before it ended;
// the status sent and how it ended.
func (e Summary) ObservationTable() observe.Table {
	t := observe.Table{Columns: []string{"attempt", "arrived", "headers sent", "cancelled", "ended", "gap", "status", "outcome", "connection"}}
	if len(e.Attempts) == 0 {
		return t
	}
	start := e.Attempts[0].Arrived
	at := func(ts *time.Time) string {
		if ts == nil {
			return ""
		}
		return fmt.Sprintf("+%dms", ts.Sub(start).Milliseconds())
	}
	for i, a := range e.Attempts {
		gap := ""
		if i > 0 && e.Attempts[i-1].Ended != nil {
			gap = fmt.Sprintf("%dms", a.Arrived.Sub(*e.Attempts[i-1].Ended).Milliseconds())
		}
		status := ""
		if a.Status != 0 {
			status = fmt.Sprint(a.Status)
		}
		t.Rows = append(t.Rows, []string{fmt.Sprint(a.Number), at(&a.Arrived), at(a.HeadersSent), at(a.CancelledAt), at(a.Ended),
			gap, status, string(a.Outcome), a.Conn})
	}
	if e.Dropped > 0 {
		t.Rows = append(t.Rows, []string{fmt.Sprintf("+%d dropped", e.Dropped)})
	}
	return t
}

// Gaps returns, for each attempt after the first, the time from the end of
// the attempt before it to its arrival, by the backend's clock. An attempt
// whose predecessor has no end time gets an error.
func Gaps(e echowire.Entry) ([]time.Duration, error) {
	var out []time.Duration
	for i := 1; i < len(e.Attempts); i++ {
		prev := e.Attempts[i-1]
		if prev.Ended == nil {
			return nil, fmt.Errorf("attempt %d has no end time (outcome %s)", prev.Number, prev.Outcome)
		}
		out = append(out, e.Attempts[i].Arrived.Sub(*prev.Ended))
	}
	return out, nil
}
