package probe_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/gatewitness/gatewitness/internal/probe"
)

// tolerance is how late a bounded check may end on a loaded machine.
const tolerance = 2 * time.Second

// hostPort splits a test server's address.
func hostPort(t *testing.T, addr string) (string, int) {
	t.Helper()
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(p)
	return h, n
}

func httpProbe(port intstr.IntOrString, path string, headers ...corev1.HTTPHeader) *corev1.Probe {
	return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
		Path: path, Port: port, HTTPHeaders: headers,
	}}}
}

func TestHTTPStatusRange(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		code, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/status/"))
		w.WriteHeader(code)
	}))
	defer srv.Close()
	host, port := hostPort(t, srv.Listener.Addr().String())
	target := probe.Target{Host: host}
	for code, want := range map[int]bool{200: true, 204: true, 299: true, 304: true, 399: true, 400: false, 404: false, 500: false, 503: false} {
		res := probe.Check(context.Background(), httpProbe(intstr.FromInt32(int32(port)), "/status/"+strconv.Itoa(code)), target, 0)
		if res.Success != want {
			t.Errorf("status %d: success %v (%q), want %v", code, res.Success, res.Message, want)
		}
	}
}

func TestHTTPRedirects(t *testing.T) {
	var otherHits atomic.Int32
	other := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		otherHits.Add(1)
		w.WriteHeader(http.StatusInternalServerError)
	}))
	// Another host: another loopback address.
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("no 127.0.0.2 on this machine: %v", err)
	}
	other.Listener = ln
	other.Start()
	defer other.Close()

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
			w.WriteHeader(http.StatusOK)
		case "/fail":
			w.WriteHeader(http.StatusServiceUnavailable)
		case "/to-ok":
			http.Redirect(w, r, "/ok", http.StatusFound)
		case "/to-fail":
			http.Redirect(w, r, "/fail", http.StatusFound)
		case "/to-other":
			http.Redirect(w, r, other.URL+"/fail", http.StatusFound)
		case "/loop":
			http.Redirect(w, r, "/loop", http.StatusFound)
		}
	}))
	defer srv.Close()
	host, port := hostPort(t, srv.Listener.Addr().String())
	target := probe.Target{Host: host}
	check := func(path string) probe.Result {
		return probe.Check(context.Background(), httpProbe(intstr.FromInt32(int32(port)), path), target, 0)
	}
	if res := check("/to-ok"); !res.Success {
		t.Errorf("same-host redirect to 200: %q, want success", res.Message)
	}
	if res := check("/to-fail"); res.Success {
		t.Errorf("same-host redirect to 503: success, want a failure: the redirect must be followed")
	}
	if res := check("/to-other"); !res.Success || !strings.Contains(res.Message, "not followed") {
		t.Errorf("redirect to another host: %+v, want a success that says the redirect was not followed", res)
	}
	if n := otherHits.Load(); n != 0 {
		t.Errorf("the other host got %d requests; a redirect to another host must not be followed", n)
	}
	if res := check("/loop"); res.Success || !strings.Contains(res.Message, "redirects") {
		t.Errorf("redirect loop: %+v, want a failure after %d redirects", res, probe.MaxRedirects)
	}
}

func TestHTTPHeadersAndBodyLimit(t *testing.T) {
	type seen struct{ host, ua, custom, accept string }
	got := make(chan seen, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- seen{r.Host, r.UserAgent(), r.Header.Get("X-Custom"), r.Header.Get("Accept")}
		w.WriteHeader(http.StatusInternalServerError)
		w.Write([]byte(strings.Repeat("x", 1<<20)))
	}))
	defer srv.Close()
	host, port := hostPort(t, srv.Listener.Addr().String())
	p := httpProbe(intstr.FromInt32(int32(port)), "health",
		corev1.HTTPHeader{Name: "Host", Value: "app.example"},
		corev1.HTTPHeader{Name: "X-Custom", Value: "v"})
	res := probe.Check(context.Background(), p, probe.Target{Host: host}, 0)
	if res.Success {
		t.Fatal("status 500 passed")
	}
	if len(res.Message) > probe.MaxBodyBytes+512 {
		t.Errorf("failure message of %d bytes: the body must be read up to %d bytes only", len(res.Message), probe.MaxBodyBytes)
	}
	s := <-got
	want := seen{"app.example", probe.UserAgent, "v", "*/*"}
	if s != want {
		t.Errorf("request as seen by the server: %+v, want %+v", s, want)
	}
}

func TestHTTPTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	host, port := hostPort(t, srv.Listener.Addr().String())
	p := httpProbe(intstr.FromInt32(int32(port)), "/")
	p.TimeoutSeconds = 2
	const second = 100 * time.Millisecond // timeoutSeconds 2 = 200ms
	start := time.Now()
	res := probe.Check(context.Background(), p, probe.Target{Host: host}, second)
	elapsed := time.Since(start)
	if res.Success {
		t.Fatal("a server that never answers passed")
	}
	if lo := 2 * second; elapsed < lo || elapsed > lo+tolerance {
		t.Errorf("the check ended after %v, want within [%v, %v]", elapsed, lo, lo+tolerance)
	}
}

func TestNamedPort(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	host, port := hostPort(t, srv.Listener.Addr().String())
	target := probe.Target{Host: host, Ports: []corev1.ContainerPort{{Name: "web", ContainerPort: int32(port)}}}
	if res := probe.Check(context.Background(), httpProbe(intstr.FromString("web"), "/"), target, 0); !res.Success {
		t.Errorf("named port web: %q", res.Message)
	}
	res := probe.Check(context.Background(), httpProbe(intstr.FromString("nope"), "/"), target, 0)
	if res.Success || !strings.Contains(res.Message, `"nope"`) || !strings.Contains(res.Message, "accepted") {
		t.Errorf("unknown port name: %+v, want a failure naming it and the accepted form", res)
	}
}

func TestTCP(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	host, port := hostPort(t, ln.Addr().String())
	p := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(int32(port))}}}
	if res := probe.Check(context.Background(), p, probe.Target{Host: host}, 0); !res.Success {
		t.Errorf("open port: %q", res.Message)
	}
	ln.Close()
	if res := probe.Check(context.Background(), p, probe.Target{Host: host}, 0); res.Success {
		t.Error("closed port passed")
	}
}

func TestGRPC(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := health.NewServer()
	hs.SetServingStatus("up", healthpb.HealthCheckResponse_SERVING)
	hs.SetServingStatus("down", healthpb.HealthCheckResponse_NOT_SERVING)
	gs := grpc.NewServer()
	healthpb.RegisterHealthServer(gs, hs)
	go gs.Serve(ln)
	defer gs.Stop()

	bare, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	noHealth := grpc.NewServer()
	go noHealth.Serve(bare)
	defer noHealth.Stop()

	host, port := hostPort(t, ln.Addr().String())
	_, barePort := hostPort(t, bare.Addr().String())
	check := func(port int, service string) probe.Result {
		p := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: int32(port), Service: &service}}}
		return probe.Check(context.Background(), p, probe.Target{Host: host}, 0)
	}
	for svc, want := range map[string]bool{"": true, "up": true, "down": false, "unknown": false} {
		if res := check(port, svc); res.Success != want {
			t.Errorf("service %q: success %v (%q), want %v", svc, res.Success, res.Message, want)
		}
	}
	if res := check(barePort, ""); res.Success || !strings.Contains(res.Message, "does not implement") {
		t.Errorf("server without the health service: %+v, want a failure saying so", res)
	}
	hs.SetServingStatus("up", healthpb.HealthCheckResponse_NOT_SERVING)
	if res := check(port, "up"); res.Success {
		t.Error("service set to NOT_SERVING still passes")
	}
}

func TestValidate(t *testing.T) {
	cases := []struct {
		p    *corev1.Probe
		want string // "" for valid
	}{
		{httpProbe(intstr.FromInt32(80), "/"), ""},
		{&corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}, "x.exec: accepted in-process: httpGet, tcpSocket or grpc"},
		{&corev1.Probe{}, "x: 0 handlers: accepted: exactly one of httpGet, tcpSocket or grpc"},
		{&corev1.Probe{ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 0}}}, "x.grpc.port: 0: accepted"},
		{&corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Scheme: "FTP"}}}, `x.httpGet.scheme: "FTP": accepted: HTTP or HTTPS`},
		{&corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{}}, PeriodSeconds: -1}, "x.periodSeconds: -1: accepted"},
	}
	for _, c := range cases {
		err := probe.Validate("x", c.p)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%+v: %v, want valid", c.p, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%+v: %v, want an error containing %q", c.p, err, c.want)
		}
	}
}
