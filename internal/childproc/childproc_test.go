package childproc

import (
	"bufio"
	"errors"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// start runs script in sh -c, in a process group of its own, and returns
// the command and a channel closed once its Wait has returned.
func start(t *testing.T, script string) (*exec.Cmd, chan struct{}) {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	return cmd, exited
}

// groupGone reports whether no process of the group led by pid is left.
func groupGone(pid int) bool { return errors.Is(syscall.Kill(-pid, 0), syscall.ESRCH) }

func TestStopEndsTheGroupWithTheSignal(t *testing.T) {
	// The shell waits for a child of its own; SIGTERM to the group ends
	// both.
	cmd, exited := start(t, "sleep 600 & wait")
	if killed := Stop(cmd.Process, true, exited, syscall.SIGTERM, time.Minute); killed {
		t.Error("Stop killed a group that SIGTERM ends")
	}
	if err := waitGone(cmd.Process.Pid); err != nil {
		t.Error(err)
	}
}

func TestStopKillsWhatIgnoresTheSignal(t *testing.T) {
	// The shell and its sleep ignore SIGTERM (an ignored signal stays
	// ignored across exec); the shell says so once the trap is set.
	cmd := exec.Command("sh", "-c", "trap '' TERM; sleep 600 & echo trapped; wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "trapped\n" {
		t.Fatalf("the shell said %q, %v; want trapped", line, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	if killed := Stop(cmd.Process, true, exited, syscall.SIGTERM, 50*time.Millisecond); !killed {
		t.Error("Stop did not report killing a shell that ignores SIGTERM")
	}
	if err := waitGone(cmd.Process.Pid); err != nil {
		t.Error(err)
	}
}

func TestStopOfOneProcess(t *testing.T) {
	cmd, exited := start(t, "exec sleep 600")
	if killed := Stop(cmd.Process, false, exited, syscall.SIGTERM, time.Minute); killed {
		t.Error("Stop killed a sleep that SIGTERM ends")
	}
}

func TestKillGroupEndsWhatTheLeaderLeft(t *testing.T) {
	// The leader exits at once and leaves a child in its group.
	cmd, exited := start(t, "sleep 600 >/dev/null 2>&1 &")
	select {
	case <-exited:
	case <-time.After(time.Minute):
		t.Fatal("the shell did not exit within a minute")
	}
	KillGroup(cmd.Process)
	if err := waitGone(cmd.Process.Pid); err != nil {
		t.Error(err)
	}
}

// waitGone polls, for up to a minute, until the group of pid is empty.
func waitGone(pid int) error {
	deadline := time.Now().Add(time.Minute)
	for !groupGone(pid) {
		if time.Now().After(deadline) {
			return errors.New("a process of the group is still there a minute after")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}
