// Package selfexec lets a command's tests run the command as a process of
// its own: the test binary itself, whose TestMain runs the command's main
// when the process's environment says so, or, when the tests are built
// with the race detector (whose reports change a process's exit status
// and multiply its memory), a build of the command without it.
package selfexec

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Main is a command's TestMain: in a process whose environment sets env
// to 1 (Env) it runs main and exits 0 if main returns; else it runs the
// tests.
func Main(m *testing.M, env string, main func()) {
	if os.Getenv(env) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// Env is the environment of a process of Binary that runs the command's
// main: this process's, with env set to 1.
func Env(env string) []string { return append(os.Environ(), env+"=1") }

// Binary returns the command to start as a process: this test binary,
// whose TestMain runs main (Main, with Env), or under the race detector
// the command built without it (go build of the package in the working
// directory, a test's own) into t's temporary folder as name.
func Binary(t testing.TB, name string) string {
	t.Helper()
	if !raceEnabled {
		return os.Args[0]
	}
	bin := filepath.Join(t.TempDir(), name)
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "GOFLAGS=")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building %s without -race: %v\n%s", name, err, out)
	}
	return bin
}
