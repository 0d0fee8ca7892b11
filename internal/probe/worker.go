package probe

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Defaults of the probe fields left zero, as the API server sets them.
const (
	DefaultTimeoutSeconds   = 1
	DefaultPeriodSeconds    = 10
	DefaultSuccessThreshold = 1
	DefaultFailureThreshold = 3
)

// Config configures a Worker.
type Config struct {
	// Probe is the readiness probe to run. It must pass Validate.
	Probe *corev1.Probe
	// Target is the pod it is run against.
	Target Target
	// Second is how long one second of the probe's fields lasts; zero means
	// time.Second. Unit tests shorten it; nothing else should.
	Second time.Duration
	// OnChange, when set, is called from the worker's goroutine each time
	// readiness changes, with the check that decided it. It must not call
	// Stop.
	OnChange func(ready bool, last Result)
	// OnCheck, when set, is called from the worker's goroutine after every
	// check with its result.
	OnCheck func(Result)
}

// Worker repeats one readiness probe until Stop. Its methods are safe for
// concurrent use.
type Worker struct {
	cfg    Config
	cancel context.CancelFunc
	done   chan struct{}

	mu    sync.Mutex
	ready bool
	last  Result
}

// Start starts a Worker for cfg. The container is not ready until the
// probe has succeeded successThreshold times in a row.
func Start(cfg Config) *Worker {
	if cfg.Second <= 0 {
		cfg.Second = time.Second
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := &Worker{cfg: cfg, cancel: cancel, done: make(chan struct{})}
	go w.run(ctx)
	return w
}

// Ready reports whether the container is ready, and the last check's
// result.
func (w *Worker) Ready() (bool, Result) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ready, w.last
}

// Stop ends the worker and waits for a check in flight to end.
func (w *Worker) Stop() {
	w.cancel()
	<-w.done
}

func (w *Worker) run(ctx context.Context) {
	defer close(w.done)
	p := w.cfg.Probe
	sec := w.cfg.Second
	period := time.Duration(cmpOr(p.PeriodSeconds, DefaultPeriodSeconds)) * sec
	successes := int(cmpOr(p.SuccessThreshold, DefaultSuccessThreshold))
	failures := int(cmpOr(p.FailureThreshold, DefaultFailureThreshold))

	timer := time.NewTimer(time.Duration(p.InitialDelaySeconds) * sec)
	defer timer.Stop()
	// run counts the checks in a row with the same outcome, as the kubelet
	// does; the first check starts a run of its own.
	run, lastOK, first := 0, false, true
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		start := time.Now()
		res := Check(ctx, p, w.cfg.Target, sec)
		if ctx.Err() != nil {
			return
		}
		if first || res.Success != lastOK {
			run = 0
		}
		first, lastOK = false, res.Success
		run++
		w.mu.Lock()
		w.last = res
		changed := false
		switch {
		case res.Success && run >= successes && !w.ready:
			w.ready, changed = true, true
		case !res.Success && run >= failures && w.ready:
			w.ready, changed = false, true
		}
		ready := w.ready
		w.mu.Unlock()
		if w.cfg.OnCheck != nil {
			w.cfg.OnCheck(res)
		}
		if changed && w.cfg.OnChange != nil {
			w.cfg.OnChange(ready, res)
		}
		// The next check is a period after this one began, or at once if
		// this one took longer.
		timer.Reset(max(period-time.Since(start), 0))
	}
}
