// Package gcpace sets how often the garbage collector runs in a short-lived
// `gatewitness run`. Go's default (GOGC=100: collect when the heap has grown
// by as much as was live after the last collection) suits a long-running
// server that must stay small. A run lives for a minute or two and, in
// process, allocates fast: at 10,000 HTTPRoutes the collector was about a
// quarter of its CPU. Collecting when the heap has grown by four times
// what was live costs a few hundred MiB more at most, and a memory limit
// keeps a run on a small machine from growing past half of its RAM.
//
// The settings are the environment's when it has them: GOGC and GOMEMLIMIT
// override both, as for any Go program. gateway/controller's
// BenchmarkRoutesReady calls Run too, so that it measures the collector as
// `gatewitness run` paces it.
package gcpace

import (
	"bufio"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// Percent is the GOGC `gatewitness run` uses when the environment sets none.
const Percent = 400

// Run paces the collector for a short run: GOGC=Percent unless $GOGC is
// set, and a memory limit of half the memory the process may use unless
// $GOMEMLIMIT is set (none when that cannot be read). It returns a
// function that puts back the settings it changed.
func Run() (restore func()) {
	var undo []func()
	if _, set := os.LookupEnv("GOGC"); !set {
		old := debug.SetGCPercent(Percent)
		undo = append(undo, func() { debug.SetGCPercent(old) })
	}
	if _, set := os.LookupEnv("GOMEMLIMIT"); !set {
		if total := memory(); total > 0 {
			old := debug.SetMemoryLimit(total / 2)
			undo = append(undo, func() { debug.SetMemoryLimit(old) })
		}
	}
	return func() {
		for _, f := range undo {
			f()
		}
	}
}

// memory returns the memory the process may use: the machine's, or its
// cgroup's limit (a container's) when that is lower; 0 when unknown.
func memory() int64 {
	total := memTotal()
	if b, err := os.ReadFile("/sys/fs/cgroup/memory.max"); err == nil {
		if limit, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && limit > 0 && (total == 0 || limit < total) {
			total = limit // "max" (no limit) does not parse
		}
	}
	return total
}

// memTotal returns the machine's memory in bytes from /proc/meminfo, or 0
// where there is none (not Linux) or it cannot be read.
func memTotal() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// MemTotal:       24684092 kB
		rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:")
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		if err != nil || kb <= 0 {
			return 0
		}
		return kb << 10
	}
	return 0
}
