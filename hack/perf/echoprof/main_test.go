package main

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestRunRejectsBadFlags(t *testing.T) {
	if err := run("127.0.0.1:0", "", false); err == nil || !strings.Contains(err.Error(), "-cpuprofile") {
		t.Errorf("run without -cpuprofile: %v, want an error naming -cpuprofile", err)
	}
	out := filepath.Join(t.TempDir(), "p.pprof")
	if err := run("not-an-address", out, false); err == nil || !strings.Contains(err.Error(), "-addr") {
		t.Errorf("run with a bad -addr: %v, want an error naming -addr", err)
	}
}
