package runner

import (
	"context"
	"fmt"
	"os"
	"syscall"
	"time"
)

// The stop phase of an interrupted run: the record written as the run
// stood, then the target stopped.

// stopTimeout bounds the target's stop after an interruption: a run
// stopped by a signal must end within seconds, whatever the target does.
const stopTimeout = 5 * time.Second

// watchInterrupts waits, in a goroutine, for a signal on opts.Interrupt
// and stops the run when one arrives before the run's end is recorded:
// the record of the interrupted run is written (rr.interrupt), the target
// stopped (stopTarget), and opts.OnInterrupt called with the Result. It
// does nothing when opts.Interrupt is nil.
func watchInterrupts(opts *Options, rr *runRecord, p *runPlan, tgt *target, clock *phaseClock) {
	if opts.Interrupt == nil {
		return
	}
	go func() {
		var sig os.Signal
		select {
		case sig = <-opts.Interrupt:
		case <-rr.ended:
			return
		}
		name := signalName(sig)
		if opts.Progress != nil {
			fmt.Fprintf(opts.Progress, "\n%s: interrupting the run: recording the tests that finished, stopping the target\n", name)
		}
		res := rr.interrupt(sig, name, clock.list(), func() error { return stopTarget(p, tgt) })
		if res.Signal == sig && opts.OnInterrupt != nil {
			opts.OnInterrupt(res)
		}
	}()
}

// stopTarget stops the target of an interrupted run, within stopTimeout:
// the in-process cluster is closed; on a cluster the namespaces of the
// base resources are deleted (not waited for: the next run waits, see
// waitForPreviousRun).
func stopTarget(p *runPlan, tgt *target) error {
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		switch {
		case tgt.stop != nil:
			done <- tgt.stop()
		case !tgt.info.InProcess:
			done <- deleteBaseNamespaces(ctx, &p.co)
		default:
			done <- nil
		}
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("runner: stopping the target: not done after %v", stopTimeout)
	}
}

// signalName names sig as a shell does: "SIGINT", "SIGTERM".
func signalName(sig os.Signal) string {
	switch sig {
	case os.Interrupt:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGHUP:
		return "SIGHUP"
	case syscall.SIGQUIT:
		return "SIGQUIT"
	}
	return sig.String()
}
