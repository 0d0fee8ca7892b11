// Package hack_test tests the scripts of hack/ that make targets call.
package hack_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// runNeed runs hack/need.sh with PATH holding only dir and the shell's
// own tools, and returns its exit code and standard error.
func runNeed(t *testing.T, dir string, env []string, args ...string) (int, string) {
	t.Helper()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	tools := t.TempDir()
	for _, tool := range []string{"id", "cat", "chmod"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(p, filepath.Join(tools, tool)); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(bash, append([]string{"need.sh"}, args...)...)
	cmd.Env = append([]string{"PATH=" + dir + ":" + tools}, env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err = cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, stderr.String()
}

func writeScript(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}

func TestNeedFindsNamesOrInstalls(t *testing.T) {
	dir := t.TempDir()
	writeScript(t, filepath.Join(dir, "present"), "exit 0")

	if code, out := runNeed(t, dir, []string{"NEED_INSTALL=no"}, "present"); code != 0 || out != "" {
		t.Errorf("a command on PATH: exit %d, %q; want 0 and nothing said", code, out)
	}
	// Missing and not to be installed: one line naming the package and the command.
	code, out := runNeed(t, dir, []string{"NEED_INSTALL=no"}, "present", "debootstrap", "docker:docker.io")
	if code != 127 || strings.Count(out, "\n") != 1 ||
		!strings.Contains(out, "debootstrap not found") || !strings.Contains(out, "apt-get install -y debootstrap") {
		t.Errorf("debootstrap missing: exit %d, %q; want 127 and one line naming the package and the command", code, out)
	}
	code, out = runNeed(t, dir, []string{"NEED_INSTALL=no"}, "docker:docker.io")
	if code != 127 || !strings.Contains(out, "the Debian package docker.io") {
		t.Errorf("docker missing: exit %d, %q; want the package docker.io named", code, out)
	}
	// Missing, as root with apt-get: installed (the fake apt-get puts the
	// command on PATH), and the script goes on.
	if os.Getuid() != 0 {
		t.Skip("the install path runs as root only")
	}
	apt := filepath.Join(t.TempDir(), "apt-get")
	writeScript(t, apt, `echo "$@" >>`+filepath.Join(dir, "apt.log")+`
[ "$1" = install ] && printf '#!/bin/sh\nexit 0\n' >`+filepath.Join(dir, "haproxy")+` && chmod +x `+filepath.Join(dir, "haproxy"))
	code, out = runNeed(t, dir, []string{"APT_GET=" + apt}, "haproxy")
	log, _ := os.ReadFile(filepath.Join(dir, "apt.log"))
	if code != 0 || !strings.Contains(string(log), "install -y -q haproxy") || !strings.Contains(out, "installing the Debian package haproxy") {
		t.Errorf("haproxy missing, as root: exit %d, %q, apt-get ran %q; want it installed", code, out, log)
	}
	// An install that fails: apt-get update once, then the one line.
	failing := filepath.Join(t.TempDir(), "apt-get")
	writeScript(t, failing, `echo "$@" >>`+filepath.Join(dir, "fail.log")+`; exit 100`)
	code, out = runNeed(t, dir, []string{"APT_GET=" + failing}, "nosuch:nosuch-pkg")
	log, _ = os.ReadFile(filepath.Join(dir, "fail.log"))
	if code != 127 || !strings.Contains(out, "nosuch not found: install the Debian package nosuch-pkg") ||
		strings.Count(string(log), "update") != 1 {
		t.Errorf("a failed install: exit %d, %q, apt-get ran %q; want one update, then the line naming the package", code, out, log)
	}
}
