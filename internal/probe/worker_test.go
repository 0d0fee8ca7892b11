package probe_test

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/gatewitness/gatewitness/internal/probe"
)

// scripted is an HTTP server whose n-th request (from 1) is answered with
// script[n-1], and every later one with the script's last status. It
// records when each request arrived.
type scripted struct {
	mu      sync.Mutex
	script  []int
	arrived []time.Time
}

func (s *scripted) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.arrived = append(s.arrived, time.Now())
	n := len(s.arrived)
	code := s.script[min(n, len(s.script))-1]
	s.mu.Unlock()
	w.WriteHeader(code)
}

func (s *scripted) hits() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.arrived)
}

type transition struct {
	ready bool
	check int // the check that decided it, from 1
}

func TestWorkerThresholds(t *testing.T) {
	const ok, bad = 200, 503
	s := &scripted{script: []int{
		bad, ok, ok, // 3: ready (2 successes in a row)
		bad, bad, ok, bad, bad, bad, // 9: unready (3 failures in a row)
		ok, bad, ok, ok, // 13: ready again
	}}
	srv := httptest.NewServer(s)
	defer srv.Close()
	host, port := hostPort(t, srv.Listener.Addr().String())
	p := httpProbe(intstr.FromInt32(int32(port)), "/")
	p.PeriodSeconds, p.SuccessThreshold, p.FailureThreshold = 1, 2, 3
	// A probe second is 5ms here, so the default 1s timeout would be 5ms of
	// real time: a slow answer under load would count as a failure and shift
	// every transition. The script must decide each check, so the timeout
	// (10s of real time) is one the local server cannot reach.
	p.TimeoutSeconds = 2000

	changes := make(chan transition, 16)
	checks := make(chan struct{}, 64)
	w := probe.Start(probe.Config{
		Probe:    p,
		Target:   probe.Target{Host: host},
		Second:   5 * time.Millisecond,
		OnChange: func(ready bool, _ probe.Result) { changes <- transition{ready, s.hits()} },
		OnCheck:  func(probe.Result) { checks <- struct{}{} },
	})
	defer w.Stop()
	if ready, _ := w.Ready(); ready {
		t.Fatal("ready before any check; a container starts not ready")
	}
	want := []transition{{true, 3}, {false, 9}, {true, 13}}
	deadline := time.After(30 * time.Second)
	for _, tr := range want {
		select {
		case got := <-changes:
			if got != tr {
				t.Fatalf("transition %+v, want %+v (script %v)", got, tr, s.script)
			}
		case <-deadline:
			t.Fatalf("no transition %+v within 30s; %d checks ran", tr, s.hits())
		}
	}
	// Three more checks, all successes, change nothing.
	for range 3 {
		select {
		case <-checks:
		case <-deadline:
			t.Fatal("the worker stopped checking")
		}
	}
	w.Stop()
	select {
	case got := <-changes:
		t.Errorf("extra transition %+v; want none while the probe keeps succeeding", got)
	default:
	}
	if ready, _ := w.Ready(); !ready {
		t.Error("Ready() is false after the last transition to ready")
	}
}

func TestWorkerSchedule(t *testing.T) {
	s := &scripted{script: []int{200}}
	srv := httptest.NewServer(s)
	defer srv.Close()
	host, port := hostPort(t, srv.Listener.Addr().String())
	p := httpProbe(intstr.FromInt32(int32(port)), "/")
	p.InitialDelaySeconds, p.PeriodSeconds = 3, 2
	const second = 100 * time.Millisecond
	checks := make(chan struct{}, 16)
	start := time.Now()
	w := probe.Start(probe.Config{
		Probe: p, Target: probe.Target{Host: host}, Second: second,
		OnCheck: func(probe.Result) { checks <- struct{}{} },
	})
	defer w.Stop()
	for range 4 {
		select {
		case <-checks:
		case <-time.After(30 * time.Second):
			t.Fatalf("only %d checks within 30s", s.hits())
		}
	}
	w.Stop()
	s.mu.Lock()
	arrived := append([]time.Time(nil), s.arrived...)
	s.mu.Unlock()
	if d := arrived[0].Sub(start); d < 3*second || d > 3*second+tolerance {
		t.Errorf("first check after %v, want within [%v, %v] (initialDelaySeconds 3)", d, 3*second, 3*second+tolerance)
	}
	// Arrival gaps can be shorter than the period by the connect time of
	// the earlier check; allow a quarter of it.
	for i := 1; i < len(arrived); i++ {
		if gap := arrived[i].Sub(arrived[i-1]); gap < 2*second*3/4 || gap > 2*second+tolerance {
			t.Errorf("checks %d and %d %v apart, want about %v (periodSeconds 2)", i, i+1, gap, 2*second)
		}
	}
}
