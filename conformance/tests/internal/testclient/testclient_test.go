package testclient

import (
	"strings"
	"testing"
	"time"

	"github.com/gatewitness/gatewitness/contract/echowire"
)

func TestPollStopsWhenDone(t *testing.T) {
	n := 0
	if !Poll(time.Minute, time.Millisecond, func() bool { n++; return n == 3 }) {
		t.Fatal("Poll = false; want true once try reports done")
	}
	if n != 3 {
		t.Errorf("try called %d times; want 3", n)
	}
}

func TestPollGivesUpAfterItsDeadline(t *testing.T) {
	start := time.Now()
	n := 0
	if Poll(50*time.Millisecond, 10*time.Millisecond, func() bool { n++; return false }) {
		t.Fatal("Poll = true; want false when try never reports done")
	}
	if took := time.Since(start); took < 50*time.Millisecond {
		t.Errorf("Poll gave up after %v; want not before its 50ms", took)
	}
	if n < 2 {
		t.Errorf("try called %d times; want at least once before and once after the deadline", n)
	}
}

func TestPollTriesOnceWithNoTimeLeft(t *testing.T) {
	n := 0
	Poll(-time.Second, time.Second, func() bool { n++; return false })
	if n != 1 {
		t.Errorf("try called %d times; want 1", n)
	}
}

func TestSummary(t *testing.T) {
	if got := Summary(echowire.Entry{}).String(); got != "no attempt" {
		t.Errorf("empty ledger: %q; want %q", got, "no attempt")
	}
	e := echowire.Entry{Attempts: []echowire.Attempt{{Number: 1, Status: 503, Outcome: echowire.Answered}, {Number: 2, Status: 200, Outcome: echowire.Answered}}, Dropped: 1}
	if got, want := Summary(e).String(), "1:503/answered 2:200/answered (+1 dropped)"; got != want {
		t.Errorf("%q; want %q", got, want)
	}
}

func TestNewIDIsUniqueAndSafe(t *testing.T) {
	a, b := NewID(t), NewID(t)
	if a == b {
		t.Errorf("two ids are equal: %s", a)
	}
	if strings.ContainsAny(a, "/ ") || !strings.HasPrefix(a, "TestNewIDIsUniqueAndSafe.") {
		t.Errorf("id %q: want the test's name, safe for a path", a)
	}
}
