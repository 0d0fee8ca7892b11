package gcpace

import (
	"math"
	"os"
	"runtime/debug"
	"testing"
)

// gcPercent reads the current GOGC without changing it.
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

func TestRunRaisesGOGCAndRestores(t *testing.T) {
	if _, set := os.LookupEnv("GOGC"); set {
		t.Skip("GOGC is set in the environment; Run leaves it alone")
	}
	if _, set := os.LookupEnv("GOMEMLIMIT"); set {
		t.Skip("GOMEMLIMIT is set in the environment; Run leaves it alone")
	}
	before, limitBefore := gcPercent(), debug.SetMemoryLimit(-1)
	restore := Run()
	if got := gcPercent(); got != Percent {
		t.Errorf("GOGC during Run = %d, want %d", got, Percent)
	}
	limit := debug.SetMemoryLimit(-1)
	if total := memory(); total > 0 && limit != total/2 {
		t.Errorf("memory limit during Run = %d, want half of the memory %d", limit, total)
	}
	restore()
	if got := gcPercent(); got != before {
		t.Errorf("GOGC after restore = %d, want %d", got, before)
	}
	if got := debug.SetMemoryLimit(-1); got != limitBefore {
		t.Errorf("memory limit after restore = %d, want %d", got, limitBefore)
	}
}

func TestRunLeavesTheEnvironmentsSettings(t *testing.T) {
	t.Setenv("GOGC", "150")
	t.Setenv("GOMEMLIMIT", "1GiB")
	before, limitBefore := gcPercent(), debug.SetMemoryLimit(-1)
	restore := Run()
	defer restore()
	if got := gcPercent(); got != before {
		t.Errorf("GOGC set in the environment: Run changed it from %d to %d", before, got)
	}
	if got := debug.SetMemoryLimit(-1); got != limitBefore {
		t.Errorf("GOMEMLIMIT set in the environment: Run changed the limit from %d to %d", limitBefore, got)
	}
}

func TestMemTotal(t *testing.T) {
	total := memTotal()
	if _, err := os.Stat("/proc/meminfo"); err != nil {
		if total != 0 {
			t.Errorf("memTotal without /proc/meminfo = %d, want 0", total)
		}
		return
	}
	if total < 64<<20 || total == math.MaxInt64 {
		t.Errorf("memTotal = %d bytes, want the machine's memory", total)
	}
}
