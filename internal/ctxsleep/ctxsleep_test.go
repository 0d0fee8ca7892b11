package ctxsleep

import (
	"context"
	"testing"
	"time"
)

func TestSleepWaitsTheWholeDuration(t *testing.T) {
	const d = 20 * time.Millisecond
	start := time.Now()
	if !Sleep(context.Background(), d) {
		t.Fatal("Sleep with a live context = false, want true")
	}
	if got := time.Since(start); got < d {
		t.Errorf("Sleep(%v) returned after %v, before the duration", d, got)
	}
}

func TestSleepStopsWhenTheContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan bool)
	go func() { done <- Sleep(ctx, time.Hour) }()
	cancel()
	select {
	case ok := <-done:
		if ok {
			t.Error("Sleep cancelled = true, want false")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Sleep(1h) did not return within 10s of its context's cancellation")
	}
}

func TestSleepZero(t *testing.T) {
	if !Sleep(context.Background(), 0) {
		t.Error("Sleep(live, 0) = false, want true")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if Sleep(ctx, 0) || Sleep(ctx, -time.Second) {
		t.Error("Sleep(cancelled, <=0) = true, want false")
	}
	if Sleep(ctx, time.Hour) {
		t.Error("Sleep(cancelled, 1h) = true, want false")
	}
}
