package selfexec

import (
	"os"
	"slices"
	"testing"
)

func TestEnvSetsTheVariable(t *testing.T) {
	env := Env("SELFEXEC_TEST_MAIN")
	if !slices.Contains(env, "SELFEXEC_TEST_MAIN=1") || len(env) != len(os.Environ())+1 {
		t.Errorf("Env = %d entries; want this process's %d and SELFEXEC_TEST_MAIN=1", len(env), len(os.Environ()))
	}
}

// TestBinaryWithoutRace: without the race detector the command is this
// test binary itself. (Under it, Binary builds the package of the working
// directory, a command's; the commands' tests exercise that.)
func TestBinaryWithoutRace(t *testing.T) {
	if raceEnabled {
		t.Skip("under -race Binary builds a command; cmd/gatewitness's and cmd/echo-backend's tests run it")
	}
	if got := Binary(t, "x"); got != os.Args[0] {
		t.Errorf("Binary = %q; want this test binary, %q", got, os.Args[0])
	}
}
