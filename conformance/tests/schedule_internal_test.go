package tests

import (
	"context"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/gateway-api/conformance/utils/config"
	"sigs.k8s.io/gateway-api/conformance/utils/suite"

	"github.com/gatewitness/gatewitness/conformance/tests/internal/testclient"
)

// withSchedule turns the process's schedule on for t and back off after.
func withSchedule(t *testing.T) {
	SetWindowSchedule(true)
	t.Cleanup(func() { SetWindowSchedule(false) })
}

// heldNow returns what the process's schedule holds.
func heldNow() [3]int {
	sched.mu.Lock()
	defer sched.mu.Unlock()
	return sched.held
}

// waitFor polls cond for up to 5s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after 5s: %s", what)
		}
		time.Sleep(time.Millisecond) // polling the schedule's state
	}
}

// TestWritesWaitForOpenWindows: a write through ConfigWrites waits while a
// window is open and holds windows off while it runs; with the schedule
// off it never waits.
func TestWritesWaitForOpenWindows(t *testing.T) {
	c := ConfigWrites(fake.NewClientBuilder().Build())
	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
	}
	if err := c.Create(context.Background(), pod("off")); err != nil {
		t.Fatalf("schedule off: %v", err)
	}
	withSchedule(t)
	t.Run("window", func(t *testing.T) {
		ConfigStep(t)
		measure(t) // holds a window until this subtest ends
		done := make(chan error, 1)
		go func() { done <- c.Create(context.Background(), pod("during")) }()
		select {
		case err := <-done:
			t.Fatalf("a write went through while a window was open (err %v)", err)
		case <-time.After(50 * time.Millisecond): // a write that waits is what is tested
		}
		t.Cleanup(func() {
			// After EndWindows and the step's end: the write goes.
			go func() {
				if err := <-done; err != nil {
					t.Errorf("the write after the window: %v", err)
				}
			}()
		})
	})
	waitFor(t, "no slot held once the window's test ended", func() bool { return heldNow() == [3]int{} })
}

// TestConfigAppliedHoldsNoWindowBack: a test that has applied its manifests
// and only reads status (ConfigApplied) lets windows open while it runs;
// its clean-up is a configuration step again.
func TestConfigAppliedHoldsNoWindowBack(t *testing.T) {
	withSchedule(t)
	statusRead := make(chan struct{})
	windowOpened := make(chan struct{})
	t.Run("group", func(t *testing.T) {
		t.Run("status", func(t *testing.T) {
			t.Parallel()
			ConfigStep(t)
			ConfigApplied(t)
			t.Cleanup(func() { EndWindows(t) })
			close(statusRead)
			// A status test that waits long: the window opens meanwhile.
			select {
			case <-windowOpened:
			case <-time.After(5 * time.Second):
				t.Error("no window opened while a status test read status")
			}
		})
		t.Run("timing", func(t *testing.T) {
			t.Parallel()
			<-statusRead
			ConfigStep(t)
			measure(t)
			close(windowOpened)
		})
	})
	if h := heldNow(); h != [3]int{} {
		t.Errorf("held %v after both tests ended", h)
	}
}

// TestStepEndsWaitForEvidence: the early step-end functions run when the
// windows end, the final ones once the clean-up's deletions are done,
// with the configuration step held, and no window opens before the
// final ones return.
func TestStepEndsWaitForEvidence(t *testing.T) {
	withSchedule(t)
	var order []string
	var mu sync.Mutex
	note := func(s string) {
		mu.Lock()
		defer mu.Unlock()
		order = append(order, s)
	}
	t.Run("step", func(t *testing.T) {
		ConfigStep(t)
		t.Cleanup(func() { note("manifests deleted") }) // as the Applier's clean-ups run
		t.Cleanup(func() { EndWindows(t) })
		name, _ := sched.holder(t)
		sched.atStepEnd(name, func() { note("early") }, func() {
			if h := heldNow(); h[configSlot] != 1 || h[windowSlot] != 0 {
				t.Errorf("held %v while the evidence is awaited; want the step only", h)
			}
			note("final")
		})
		measure(t)
		note("window")
	})
	if got, want := strings.Join(order, ", "), "window, early, manifests deleted, final"; got != want {
		t.Errorf("order: %s; want %s", got, want)
	}
	if h := heldNow(); h != [3]int{} {
		t.Errorf("held %v after the step ended", h)
	}
}

// replicas is a data plane of two replicas behind one address, each new
// connection going to one of them at random; the second applies the
// configuration at lagUntil. A try answers "served" when its replica has.
type replicas struct {
	lagUntil time.Time
	tries    atomic.Int64
}

func (r *replicas) check() check {
	return check{what: "a route of two replicas", try: func() answer {
		r.tries.Add(1)
		if rand.IntN(2) == 1 && time.Now().Before(r.lagUntil) {
			return answer{what: "status 404 from the data plane itself"}
		}
		return answer{served: true, what: "a pod of the backend"}
	}}
}

// TestEvidenceCrossesReplicas: a step is not served while one of two
// replicas behind the address still lags, however often the other
// answers; once both serve it, it is.
func TestEvidenceCrossesReplicas(t *testing.T) {
	s := &suite.ConformanceTestSuite{TimeoutConfig: config.DefaultTimeoutConfig()}
	for range 3 {
		r := &replicas{lagUntil: time.Now().Add(300 * time.Millisecond)}
		start := time.Now()
		first, all, err := awaitInARow(s, r.check(), true, start)
		if err != nil {
			t.Fatal(err)
		}
		if all < 300*time.Millisecond {
			t.Errorf("served after %v (first at %v, %d tries), before the lagging replica applied the step at 300ms", all, first, r.tries.Load())
		}
	}
	s.TimeoutConfig.MaxTimeToConsistency = 200 * time.Millisecond
	r := &replicas{lagUntil: time.Now().Add(time.Hour)}
	_, _, err := awaitInARow(s, r.check(), true, time.Now())
	if err == nil || !strings.HasPrefix(err.Error(), "not yet served: ") || !strings.Contains(err.Error(), "404 from the data plane itself") {
		t.Errorf("a replica that never applies the step: %v; want a not-yet-served error naming the last answer", err)
	}
}

// TestAnswersNameWhatAnswered: the evidence's answers, and the messages
// of a step not yet served, say what answered: the route's backend,
// another backend, the data plane itself or no one.
func TestAnswersNameWhatAnswered(t *testing.T) {
	for _, tc := range []struct {
		x      testclient.Exchange
		served bool
		want   string
	}{
		{testclient.Exchange{Status: 200, Body: []byte(`{"pod":"echo-abc-1"}`)}, true, "status 200 from a pod of echo-abc"},
		{testclient.Exchange{Status: 503, Body: []byte(`{"pod":"echo-abc-1"}`)}, false, "status 503 from a pod of echo-abc"},
		{testclient.Exchange{Status: 404, Body: []byte("route not found")}, false, `status 404 from the data plane itself (no backend's echo in the body): "route not found"`},
		{testclient.Exchange{Status: 200, Body: []byte(`{"pod":"other-1"}`)}, false, "status 200 from pod other-1, which is not echo-abc's: another route's backend"},
		{testclient.Exchange{Err: context.DeadlineExceeded}, false, "no answer"},
	} {
		a := httpAnswer(tc.x, "echo-abc")
		if a.served != tc.served || !strings.HasPrefix(a.what, tc.want) {
			t.Errorf("httpAnswer(%v) = %+v; want served %v, what starting %q", tc.x, a, tc.served, tc.want)
		}
	}
	if got := testclient.NotReached("id-1"); !strings.HasPrefix(got, "not yet served: the route's backend has no attempt of request id-1") {
		t.Errorf("notReachedBackend = %q", got)
	}
}

var _ client.Client = ConfigWrites(nil)

// A row counts the answers that came to what it waits for, sends again
// those that timed out (up to as many as the row needs), and ends on any
// other answer.
func TestRowSkipsTimeoutsAndEndsOnAMiss(t *testing.T) {
	served, timedOut, miss := answer{served: true}, timedOutAnswer("no answer"), answer{what: "status 404"}
	for _, tc := range []struct {
		name    string
		answers []answer
		n       int
		ok      bool
	}{
		{"all served", []answer{served, served, served}, 3, true},
		{"timeouts between", []answer{timedOut, served, timedOut, served, served}, 3, true},
		{"a miss", []answer{served, miss, served, served}, 3, false},
		{"too many timeouts", []answer{timedOut, timedOut, timedOut, timedOut, served}, 3, false},
	} {
		var mu sync.Mutex
		next := 0
		c := check{oneAtATime: true, try: func() answer {
			mu.Lock()
			defer mu.Unlock()
			if next >= len(tc.answers) {
				return miss
			}
			next++
			return tc.answers[next-1]
		}}
		if _, ok := rowOf(c, true, tc.n); ok != tc.ok {
			t.Errorf("%s: rowOf = %v; want %v", tc.name, ok, tc.ok)
		}
	}
	if a := httpAnswer(testclient.Exchange{Status: 504, Body: []byte("upstream request timeout")}, "echo-abc"); !a.timedOut || a.served {
		t.Errorf("a 504 from the data plane itself: %+v; want a timeout, not served", a)
	}
	if a := httpAnswer(testclient.Exchange{Err: context.DeadlineExceeded}, "echo-abc"); !a.timedOut {
		t.Errorf("a request past its deadline: %+v; want a timeout", a)
	}
}
