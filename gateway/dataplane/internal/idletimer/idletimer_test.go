package idletimer

import (
	"io"
	"strings"
	"testing"
	"time"
)

func TestFiresWhenNotKicked(t *testing.T) {
	fired := make(chan struct{})
	it := New(time.Millisecond, func() { close(fired) })
	defer it.Stop()
	select {
	case <-fired:
	case <-time.After(10 * time.Second):
		t.Fatal("a timer of 1ms not kicked did not fire within 10s")
	}
}

// active reports whether it's countdown runs, and stops it.
func active(it *Timer) bool { return it.t.Stop() }

func TestWatchKicksOnBytesOnly(t *testing.T) {
	it := New(time.Hour, func() {})
	defer it.Stop()
	active(it)
	body := it.Watch(io.NopCloser(strings.NewReader("x")))
	buf := make([]byte, 4)
	if n, _ := body.Read(buf); n != 1 {
		t.Fatalf("read %d bytes; want 1", n)
	}
	if !active(it) {
		t.Error("a read that returned a byte did not restart the timer")
	}
	if n, err := body.Read(buf); n != 0 || err != io.EOF {
		t.Fatalf("second read: %d, %v; want 0, EOF", n, err)
	}
	if active(it) {
		t.Error("a read that returned no bytes restarted the timer")
	}
}

func TestStoppedStaysStopped(t *testing.T) {
	it := New(time.Hour, func() {})
	it.Stop()
	it.Kick()
	if active(it) {
		t.Error("Kick after Stop restarted the timer")
	}
}

func TestNilTimerIsOff(t *testing.T) {
	var it *Timer
	it.Kick()
	it.Stop()
	body := io.NopCloser(strings.NewReader(""))
	if got := it.Watch(body); got != body {
		t.Error("a nil Timer's Watch wrapped the body; want it returned as it is")
	}
}
