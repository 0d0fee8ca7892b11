package probeproxy_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/gatewitness/gatewitness/gateway/probeproxy"
	"github.com/gatewitness/gatewitness/gateway/probeproxy/probeproxytest"
	"github.com/gatewitness/gatewitness/internal/probe"
)

// app is an application on 127.0.0.1 with an HTTP port (whose /health
// status can be set), a TCP port that can be closed and a gRPC health
// port.
type app struct {
	httpPort, tcpPort, grpcPort int
	health                      atomic.Int32
	seen                        chan http.Header
	grpcHealth                  *health.Server

	mu  sync.Mutex
	tcp net.Listener
}

func startApp(t *testing.T) *app {
	t.Helper()
	a := &app{seen: make(chan http.Header, 64), grpcHealth: health.NewServer()}
	a.health.Store(http.StatusOK)
	a.grpcHealth.SetServingStatus("echo", healthpb.HealthCheckResponse_SERVING)
	mux := http.NewServeMux()
	mux.HandleFunc("/health", func(w http.ResponseWriter, r *http.Request) {
		h := r.Header.Clone()
		h.Set("X-Seen-Query", r.URL.RawQuery)
		h.Set("X-Seen-Host", r.Host)
		select {
		case a.seen <- h:
		default:
		}
		w.WriteHeader(int(a.health.Load()))
	})
	mux.HandleFunc("/to-health", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/health", http.StatusFound) })
	mux.HandleFunc("/to-other-host", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://127.0.0.2:1/fail", http.StatusFound)
	})
	hl := listen(t)
	hs := &http.Server{Handler: mux}
	go hs.Serve(hl)
	t.Cleanup(func() { hs.Close() })
	a.httpPort = port(hl)

	a.tcp = listen(t)
	a.tcpPort = port(a.tcp)
	t.Cleanup(func() { a.setTCP(t, false) })

	gl := listen(t)
	gs := grpc.NewServer()
	healthpb.RegisterHealthServer(gs, a.grpcHealth)
	go gs.Serve(gl)
	t.Cleanup(gs.Stop)
	a.grpcPort = port(gl)
	return a
}

// setTCP opens or closes the app's TCP port (on the same port number).
func (a *app) setTCP(t *testing.T, open bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !open && a.tcp != nil {
		a.tcp.Close()
		a.tcp = nil
	}
	if open && a.tcp == nil {
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(a.tcpPort))
		if err != nil {
			t.Fatalf("reopening the app's TCP port: %v", err)
		}
		a.tcp = ln
	}
}

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

func port(ln net.Listener) int { return ln.Addr().(*net.TCPAddr).Port }

// pod is the app's pod with one probe of each kind, as a user writes it.
func (a *app) pod() *corev1.Pod {
	svc := "echo"
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "ns"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name:  "app",
			Ports: []corev1.ContainerPort{{Name: "web", ContainerPort: int32(a.httpPort)}},
			ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
				Path: "/health?deep=1", Port: intstr.FromString("web"),
				HTTPHeaders: []corev1.HTTPHeader{{Name: "X-Probe", Value: "ready"}},
			}}},
			LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{
				Port: intstr.FromInt32(int32(a.tcpPort)),
			}}},
			StartupProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{
				Port: int32(a.grpcPort), Service: &svc,
			}}},
		}}},
	}
}

// proxied starts a proxy for the app and returns the pod rewritten to it.
func proxied(t *testing.T, a *app, broken probeproxytest.Hooks) *corev1.Pod {
	t.Helper()
	s, err := probeproxytest.Listen("127.0.0.1:0", probeproxy.Options{AppHost: "127.0.0.1"}, broken)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	_, p, _ := net.SplitHostPort(s.Addr())
	pod := a.pod()
	pod.Annotations = map[string]string{probeproxy.AnnotationPort: p}
	out, err := probeproxy.Rewrite(pod)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

type probes struct{ ready, live, startup bool }

func run(pod *corev1.Pod) probes {
	c := pod.Spec.Containers[0]
	target := probe.Target{Host: "127.0.0.1", Ports: c.Ports}
	ctx := context.Background()
	return probes{
		ready:   probe.Check(ctx, c.ReadinessProbe, target, 0).Success,
		live:    probe.Check(ctx, c.LivenessProbe, target, 0).Success,
		startup: probe.Check(ctx, c.StartupProbe, target, 0).Success,
	}
}

// TestProxyIsFaithful runs each probe directly against the app and through
// the proxy, in every app state, and wants the same verdicts.
func TestProxyIsFaithful(t *testing.T) {
	a := startApp(t)
	direct := a.pod()
	rewritten := proxied(t, a, probeproxytest.Hooks{})
	states := []struct {
		name  string
		set   func()
		want  probes
		codes int
	}{
		{"all up", func() {}, probes{true, true, true}, 200},
		{"http 503", func() { a.health.Store(503) }, probes{false, true, true}, 503},
		{"http 302", func() { a.health.Store(302) }, probes{true, true, true}, 302},
		{"tcp closed", func() { a.health.Store(200); a.setTCP(t, false) }, probes{true, false, true}, 200},
		{"grpc not serving", func() {
			a.setTCP(t, true)
			a.grpcHealth.SetServingStatus("echo", healthpb.HealthCheckResponse_NOT_SERVING)
		}, probes{true, true, false}, 200},
		{"all up again", func() { a.grpcHealth.SetServingStatus("echo", healthpb.HealthCheckResponse_SERVING) }, probes{true, true, true}, 200},
	}
	for _, s := range states {
		s.set()
		d, p := run(direct), run(rewritten)
		if d != s.want {
			t.Errorf("%s: direct probes %+v, want %+v (the test's app is wrong)", s.name, d, s.want)
		}
		if p != d {
			t.Errorf("%s: probes through the proxy %+v, directly %+v; want the same", s.name, p, d)
		}
	}
}

func TestProxyForwardsRequest(t *testing.T) {
	a := startApp(t)
	rewritten := proxied(t, a, probeproxytest.Hooks{})
	for len(a.seen) > 0 {
		<-a.seen
	}
	c := rewritten.Spec.Containers[0]
	c.ReadinessProbe.HTTPGet.HTTPHeaders = append(c.ReadinessProbe.HTTPGet.HTTPHeaders, corev1.HTTPHeader{Name: "Host", Value: "app.example"})
	if res := probe.Check(context.Background(), c.ReadinessProbe, probe.Target{Host: "127.0.0.1"}, 0); !res.Success {
		t.Fatalf("probe through the proxy: %s", res.Message)
	}
	h := <-a.seen
	if h.Get("X-Probe") != "ready" || h.Get("X-Seen-Query") != "deep=1" || h.Get("X-Seen-Host") != "app.example" {
		t.Errorf("the app saw X-Probe %q, query %q, host %q; want ready, deep=1, app.example",
			h.Get("X-Probe"), h.Get("X-Seen-Query"), h.Get("X-Seen-Host"))
	}
	if !strings.HasPrefix(h.Get("User-Agent"), "kube-probe/") {
		t.Errorf("the app saw User-Agent %q, want the prober's", h.Get("User-Agent"))
	}
}

func TestProxyRedirects(t *testing.T) {
	a := startApp(t)
	s, err := probeproxy.Listen("127.0.0.1:0", probeproxy.Options{AppHost: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	get := func(path string) probe.Result {
		_, p, _ := net.SplitHostPort(s.Addr())
		n, _ := strconv.Atoi(p)
		return probe.HTTP(context.Background(), probe.URL("http", "127.0.0.1", n, "/"+strconv.Itoa(a.httpPort)+path), nil, 5*time.Second)
	}
	// A same-host redirect is followed through the proxy: the verdict is
	// /health's.
	a.health.Store(503)
	if res := get("/to-health"); res.Success {
		t.Error("redirect to a failing /health passed through the proxy; the prober must follow it to the app")
	}
	a.health.Store(200)
	if res := get("/to-health"); !res.Success {
		t.Errorf("redirect to a healthy /health failed through the proxy: %s", res.Message)
	}
	if res := get("/to-other-host"); !res.Success || !strings.Contains(res.Message, "not followed") {
		t.Errorf("redirect to another host: %+v, want the 3xx to count as a success, unfollowed", res)
	}
}

func TestProxyFaults(t *testing.T) {
	a := startApp(t)
	a.setTCP(t, false)
	a.grpcHealth.SetServingStatus("echo", healthpb.HealthCheckResponse_NOT_SERVING)
	for _, c := range []struct {
		fault probeproxytest.Hooks // zero: none
		want  probes
	}{
		{probeproxytest.Hooks{}, probes{true, false, false}},
		{probeproxytest.Hooks{TCPAlwaysUp: true}, probes{true, true, false}},
		{probeproxytest.Hooks{GRPCAlwaysServing: true}, probes{true, false, true}},
	} {
		if got := run(proxied(t, a, c.fault)); got != c.want {
			t.Errorf("fault %+v: probes %+v with the TCP port closed and gRPC NOT_SERVING, want %+v", c.fault, got, c.want)
		}
	}
}

func TestProxyBadRequests(t *testing.T) {
	s, err := probeproxy.Listen("127.0.0.1:0", probeproxy.Options{AppHost: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, c := range []struct {
		method, path string
		code         int
		body         string
	}{
		{"GET", "/health", 404, "accepted: /<port><path>, /tcp/<port> or /grpc/<port>"},
		{"GET", "/tcp/99999", 404, "accepted"},
		{"GET", "/grpc/3000/extra", 404, "nothing may follow the port"},
		{"GET", "/-1/x", 404, "accepted"},
		{"POST", "/3000/health", 405, "accepted: GET"},
	} {
		req, _ := http.NewRequest(c.method, "http://"+s.Addr()+c.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.code || !strings.Contains(string(body), c.body) {
			t.Errorf("%s %s: %d %q, want %d with %q", c.method, c.path, resp.StatusCode, body, c.code, c.body)
		}
	}
}
