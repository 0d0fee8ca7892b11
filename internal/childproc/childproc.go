// Package childproc ends a child process the way gatewitness's tools all
// do: a signal that asks it to stop, a grace period, then SIGKILL. A child
// started in a process group of its own (SysProcAttr.Setpgid) is ended as
// a group, so that what it started (a shell's commands, a proxy's
// workers) ends with it.
package childproc

import (
	"os"
	"syscall"
	"time"
)

// Stop sends sig to p (to its process group, with group) and waits up to
// grace for exited, which the caller closes once p's Wait has returned;
// if exited is not closed by then, it sends SIGKILL the same way and
// waits for exited. It reports whether p had to be killed.
func Stop(p *os.Process, group bool, exited <-chan struct{}, sig syscall.Signal, grace time.Duration) (killed bool) {
	signal(p, group, sig)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-exited:
		return false
	case <-t.C:
		signal(p, group, syscall.SIGKILL)
		<-exited
		return true
	}
}

// KillGroup sends SIGKILL to the process group p leads: what is left of
// it (a proxy's workers whose master died first).
func KillGroup(p *os.Process) { _ = syscall.Kill(-p.Pid, syscall.SIGKILL) }

func signal(p *os.Process, group bool, sig syscall.Signal) {
	if group {
		_ = syscall.Kill(-p.Pid, sig)
		return
	}
	_ = p.Signal(sig)
}
