package watchloop_test

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gatewitness/gatewitness/internal/watchloop"
)

// patience bounds every wait for Run to do something; it is long because
// the machine may be loaded, and no test waits it unless it fails.
const patience = 10 * time.Second

// reply is what one call of scriptedClient.Watch returns.
type reply struct {
	w   watch.Interface
	err error
}

// scriptedClient answers each Watch call with the next reply the test
// sends, so a send returns only once Run has asked for a watch. Every other
// method is the nil embedded interface's: Run must not call them.
type scriptedClient struct {
	client.WithWatch
	replies chan reply
}

func (c *scriptedClient) Watch(ctx context.Context, _ client.ObjectList, _ ...client.ListOption) (watch.Interface, error) {
	select {
	case r := <-c.replies:
		return r.w, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// harness runs watchloop.Run on a scriptedClient and records its calls.
type harness struct {
	t        *testing.T
	c        *scriptedClient
	cancel   context.CancelFunc
	done     chan struct{}
	notes    chan struct{}
	failures chan time.Duration
}

func start(t *testing.T, opts watchloop.Options, failed func(error, time.Duration) time.Duration) *harness {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	h := &harness{
		t:        t,
		c:        &scriptedClient{replies: make(chan reply)},
		cancel:   cancel,
		done:     make(chan struct{}),
		notes:    make(chan struct{}, 100),
		failures: make(chan time.Duration, 100),
	}
	opts.Notify = func() { h.notes <- struct{}{} }
	opts.Failed = func(err error, d time.Duration) time.Duration {
		next := d
		if failed != nil {
			next = failed(err, d)
		}
		h.failures <- d
		return next
	}
	go func() {
		defer close(h.done)
		watchloop.Run(ctx, h.c, func() client.ObjectList { return &corev1.PodList{} }, opts)
	}()
	t.Cleanup(func() {
		cancel()
		<-h.done
	})
	return h
}

// give answers Run's next Watch call.
func (h *harness) give(r reply) {
	h.t.Helper()
	select {
	case h.c.replies <- r:
	case <-time.After(patience):
		h.t.Fatalf("Run did not ask for a watch within %v", patience)
	}
}

// notified waits for n calls of Notify.
func (h *harness) notified(n int) {
	h.t.Helper()
	for i := range n {
		select {
		case <-h.notes:
		case <-time.After(patience):
			h.t.Fatalf("Notify called %d times, want %d", i, n)
		}
	}
}

// failed waits for the next call of Failed and returns its delay.
func (h *harness) failed() time.Duration {
	h.t.Helper()
	select {
	case d := <-h.failures:
		return d
	case <-time.After(patience):
		h.t.Fatalf("Failed was not called within %v", patience)
		return 0
	}
}

// stopped cancels Run's context and waits for Run to return.
func (h *harness) stopped() {
	h.t.Helper()
	h.cancel()
	select {
	case <-h.done:
	case <-time.After(patience):
		h.t.Fatalf("Run did not return within %v of its context ending", patience)
	}
}

func pod() *corev1.Pod { return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}} }

func TestNotifiesOnOpenAndEveryEvent(t *testing.T) {
	h := start(t, watchloop.Options{}, nil)
	w := watch.NewFake()
	h.give(reply{w: w})
	h.notified(1) // the watch is open
	w.Add(pod())
	w.Modify(pod())
	w.Delete(pod())
	h.notified(3)
	if w.IsStopped() {
		t.Error("a healthy watch was stopped")
	}
	if n := len(h.notes); n != 0 {
		t.Errorf("%d extra Notify calls", n)
	}
}

func TestRewatchesAfterErrorEvent(t *testing.T) {
	h := start(t, watchloop.Options{}, nil)
	first := watch.NewFake()
	h.give(reply{w: first})
	h.notified(1)
	first.Error(&metav1.Status{Status: metav1.StatusFailure, Reason: metav1.StatusReasonExpired})
	second := watch.NewFake()
	h.give(reply{w: second}) // returns only once Run asks for a new watch
	if !first.IsStopped() {
		t.Error("the watch that sent an error event was not stopped")
	}
	h.notified(2) // the error event, then the new watch
	second.Add(pod())
	h.notified(1)
	if n := len(h.failures); n != 0 {
		t.Errorf("Failed called %d times for an error event; want 0 (the re-watch opened)", n)
	}
}

func TestRewatchesAfterClosedChannel(t *testing.T) {
	h := start(t, watchloop.Options{}, nil)
	first := watch.NewFake()
	h.give(reply{w: first})
	h.notified(1)
	first.Stop() // the server ended the watch
	second := watch.NewFake()
	h.give(reply{w: second})
	h.notified(1)
	second.Add(pod())
	h.notified(1)
}

func TestRetryDelayDoublesToMaxAndResets(t *testing.T) {
	h := start(t, watchloop.Options{MinDelay: time.Millisecond, MaxDelay: 4 * time.Millisecond}, nil)
	boom := errors.New("boom")
	want := []time.Duration{time.Millisecond, 2 * time.Millisecond, 4 * time.Millisecond, 4 * time.Millisecond}
	for i, d := range want {
		h.give(reply{err: boom})
		if got := h.failed(); got != d {
			t.Fatalf("failure %d: delay %v, want %v", i+1, got, d)
		}
	}
	w := watch.NewFake()
	h.give(reply{w: w})
	h.notified(1)
	w.Stop()
	h.give(reply{err: boom})
	if got := h.failed(); got != time.Millisecond {
		t.Errorf("after a watch opened: delay %v, want it back at %v", got, time.Millisecond)
	}
}

func TestFailedChoosesTheDelay(t *testing.T) {
	boom := errors.New("boom")
	var seen error
	h := start(t, watchloop.Options{MinDelay: time.Millisecond, MaxDelay: time.Hour}, func(err error, d time.Duration) time.Duration {
		seen = err
		return 3 * time.Millisecond
	})
	h.give(reply{err: boom})
	if got := h.failed(); got != time.Millisecond {
		t.Fatalf("first delay %v, want %v", got, time.Millisecond)
	}
	h.give(reply{err: boom})
	// Run waited the 3ms Failed chose, and doubles from there.
	if got := h.failed(); got != 6*time.Millisecond {
		t.Errorf("second delay %v, want 6ms (double the 3ms Failed returned)", got)
	}
	if seen != boom {
		t.Errorf("Failed got %v, want the client's error as it is", seen)
	}
}

func TestStopsOnContextWhileWatching(t *testing.T) {
	h := start(t, watchloop.Options{}, nil)
	w := watch.NewFake()
	h.give(reply{w: w})
	h.notified(1)
	h.stopped()
	if !w.IsStopped() {
		t.Error("the open watch was not stopped when Run returned")
	}
}

func TestStopsOnContextWhileWaitingToRetry(t *testing.T) {
	h := start(t, watchloop.Options{MinDelay: time.Hour}, nil)
	h.give(reply{err: errors.New("boom")})
	h.failed()
	h.stopped() // well before the hour
}
