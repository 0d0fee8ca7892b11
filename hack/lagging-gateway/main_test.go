package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatewitness/gatewitness/gateway/ir"
	"github.com/gatewitness/gatewitness/internal/testhttp"
)

func TestParseFlagsRefusesBadValues(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--kubeconfig", "k", "--replicas", "3"}, "--replicas 3: want 1 or 2"},
		{[]string{"--kubeconfig", "k", "--lag", "-1s"}, "--lag -1s: want a duration from 0 to 1m0s"},
		{[]string{"--kubeconfig", "k", "--late-apply", "2m"}, "--late-apply 2m0s: want a duration from 0 to 1m0s"},
		{[]string{"--kubeconfig", "k", "--replicas", "1", "--lag", "1s"}, "--lag with --replicas 1"},
		{[]string{"--kubeconfig", "k", "--listen-host", "127.0.0.1"}, `--listen-host "127.0.0.1"`},
		{[]string{"--kubeconfig", "k", "extra"}, `unexpected argument "extra"`},
	} {
		_, err := parseFlags(tc.args, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseFlags(%q) = %v; want an error containing %q", tc.args, err, tc.want)
		}
	}
	t.Setenv("KUBECONFIG", "")
	if _, err := parseFlags(nil, io.Discard); err == nil || !strings.Contains(err.Error(), "--kubeconfig is required") {
		t.Errorf("parseFlags with no kubeconfig = %v; want --kubeconfig is required", err)
	}
}

func TestParseFlagsDefaultsToTheLaggingReplicaBreakage(t *testing.T) {
	s, err := parseFlags([]string{"--kubeconfig", "k"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if want := (shape{replicas: 2, lag: 3 * time.Second}); s.shape != want {
		t.Fatalf("shape %+v; want %+v (conformance/tests' lagging-replica)", s.shape, want)
	}
	s, err = parseFlags([]string{"--kubeconfig", "k", "--replicas", "1", "--late-apply", "500ms", "--reload-restarts-timers"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if want := (shape{replicas: 1, lateApply: 500 * time.Millisecond, reloadRestartsTimers: true}); s.shape != want {
		t.Fatalf("shape %+v; want %+v (late-apply-restarts-timers)", s.shape, want)
	}
}

// TestTwoReplicasShareTheAddress: with two replicas the kernel hands new
// connections to both sockets of one address; after a change the first
// replica serves it at once and the second serves the older snapshot
// until its lag is over, then both serve the change.
func TestTwoReplicasShareTheAddress(t *testing.T) {
	const lag = 4 * time.Second
	older, newer := startBackend(t, "older"), startBackend(t, "newer")
	d, addr := startDataPlane(t, shape{replicas: 2, lag: lag})
	for i, r := range d.replicas {
		if err := r.Apply(routeTo(older)); err != nil {
			t.Fatalf("replica %d: Apply: %v", i+1, err)
		}
	}
	start := time.Now()
	if err := d.apply(routeTo(newer)); err != nil {
		t.Fatalf("apply: %v", err)
	}
	seen := map[string]bool{}
	for !seen["older"] || !seen["newer"] {
		if time.Since(start) > lag {
			t.Fatalf("answers within the lag: %v; want both the older backend (the lagging replica) and the newer (the first)", seen)
		}
		seen[testhttp.GetRoot(t, addr)] = true
	}
	const inARow = 20 // a miss of one of two sockets has a chance of 2^-19
	for n := 0; n < inARow; {
		if time.Since(start) > lag+15*time.Second {
			t.Fatalf("%s after the change and %d answers in a row from the newer backend; want %d: the second replica never took it", time.Since(start), n, inARow)
		}
		if testhttp.GetRoot(t, addr) == "newer" {
			n++
		} else {
			n = 0
		}
	}
}

// TestOneReplicaAppliesLate: --late-apply hands the change over late, and
// the controller's apply returns at once.
func TestOneReplicaAppliesLate(t *testing.T) {
	const late = 3 * time.Second
	older, newer := startBackend(t, "older"), startBackend(t, "newer")
	d, addr := startDataPlane(t, shape{replicas: 1, lateApply: late})
	if err := d.replicas[0].Apply(routeTo(older)); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := d.apply(routeTo(newer)); err != nil {
		t.Fatalf("apply: %v", err)
	}
	if got := testhttp.GetRoot(t, addr); got != "older" && time.Since(start) < late {
		t.Fatalf("answered by %q at once; want the older backend until the late apply", got)
	}
	for testhttp.GetRoot(t, addr) != "newer" {
		if time.Since(start) > late+15*time.Second {
			t.Fatalf("the change is not served %s after it was handed over", time.Since(start))
		}
	}
	if e := time.Since(start); e < late {
		t.Fatalf("the change was served %s after it was handed over; want no earlier than %s", e, late)
	}
}

// startDataPlane builds sh's data plane with every listener on one free
// loopback address, closed when t ends, and returns it and the address.
func startDataPlane(t *testing.T, sh shape) (*replicatedDataPlane, string) {
	t.Helper()
	addr := testhttp.FreeLoopbackAddr(t)
	d := newDataPlane(sh, func(string, string, int32) (string, error) { return addr, nil }, logr.Discard())
	t.Cleanup(func() {
		if err := d.close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return d, addr
}

// routeTo is one Gateway with an HTTP listener on port 80 whose one route
// sends everything to b.
func routeTo(b *backend) *ir.Config {
	return &ir.Config{Gateways: []ir.Gateway{{
		Namespace: "gw-ns", Name: "gw",
		Listeners: []ir.Listener{{Name: "http", Port: 80, Protocol: gwv1.HTTPProtocolType, HTTPRoutes: []ir.HTTPRoute{{
			RouteMeta: ir.RouteMeta{Namespace: "default", Name: "r"},
			Rules: []ir.HTTPRule{{Backends: []ir.HTTPBackend{{Backend: ir.Backend{
				Name: "default/" + b.name + ":8080", Weight: 1, Endpoints: []string{b.addr}}}}}},
		}}}},
	}}}
}

// backend answers every request with its name.
type backend struct{ name, addr string }

func startBackend(t *testing.T, name string) *backend {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, name) }))
	t.Cleanup(srv.Close)
	return &backend{name: name, addr: srv.Listener.Addr().String()}
}
