package main

import (
	"crypto/sha256"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// These tests cover the command's arithmetic and validation only; nothing
// here starts a server or generates load.

func TestConfigCheck(t *testing.T) {
	ok := config{duration: 3 * time.Second, reps: 3, conns: 8}
	if err := ok.check(9); err != nil {
		t.Fatalf("default settings rejected: %v", err)
	}
	bad := []struct {
		cfg  config
		want string // the flag the error must name
	}{
		{config{duration: time.Millisecond, reps: 3, conns: 8}, "-duration"},
		{config{duration: time.Minute, reps: 3, conns: 8}, "-duration"},
		{config{duration: time.Second, reps: 0, conns: 8}, "-reps"},
		{config{duration: time.Second, reps: 3, conns: 0}, "-conns"},
		{config{duration: 10 * time.Second, reps: 3, conns: 8}, "at most 2m30s"}, // 9 × 3 × 10s = 270s
	}
	for _, tc := range bad {
		err := tc.cfg.check(9)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("check(%+v) = %v, want an error naming %q", tc.cfg, err, tc.want)
		}
	}
}

func TestSummarize(t *testing.T) {
	runs := []runResult{
		{qps: 300, p50: 3 * time.Millisecond, p99: 9 * time.Millisecond, requests: 900, errors: 1, cpuPerRequest: 5},
		{qps: 100, p50: 1 * time.Millisecond, p99: 7 * time.Millisecond, requests: 300, cpuPerRequest: 7},
		{qps: 200, p50: 2 * time.Millisecond, p99: 8 * time.Millisecond, requests: 600, errors: 2, cpuPerRequest: 6},
	}
	s := summarize(runs)
	want := summary{qps: 200, qpsMin: 100, qpsMax: 300, p50: 2 * time.Millisecond, p99: 8 * time.Millisecond,
		requests: 1800, errors: 3, cpuPerRequest: 6}
	if s != want {
		t.Errorf("summarize = %+v, want %+v", s, want)
	}
	if s := summarize(nil); s != (summary{}) {
		t.Errorf("summarize(nil) = %+v, want zero", s)
	}
}

func TestFmtLatency(t *testing.T) {
	for d, want := range map[time.Duration]string{
		1500 * time.Microsecond:  "1500 µs",
		12345 * time.Microsecond: "12.3 ms",
	} {
		if got := fmtLatency(d); got != want {
			t.Errorf("fmtLatency(%v) = %q, want %q", d, got, want)
		}
	}
}

// TestProcessCPU reads this process's CPU time, burns CPU until the reading
// grows by a few clock ticks, and checks that it grew by no more than the
// wall time that passed times GOMAXPROCS (a wrong field, such as a page
// fault count, would fail one of the two).
func TestProcessCPU(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc on this system")
	}
	pid := os.Getpid()
	before, err := processCPU(pid)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	deadline := start.Add(20 * time.Second)
	sum := sha256.Sum256(nil)
	for {
		for range 10000 {
			sum = sha256.Sum256(sum[:])
		}
		now, err := processCPU(pid)
		if err != nil {
			t.Fatal(err)
		}
		if grew := now - before; grew >= 3*clockTick {
			procs := runtime.GOMAXPROCS(0)
			if limit := time.Since(start)*time.Duration(procs) + clockTick; grew > limit {
				t.Fatalf("CPU time grew %v in %v of wall time with GOMAXPROCS=%d", grew, time.Since(start), procs)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("CPU time grew from %v to %v in 20s of hashing", before, now)
		}
	}
}
