package pods_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	echobackend "github.com/gatewitness/gatewitness/echo-backend"

	"github.com/gatewitness/gatewitness/cluster/pods"
	"github.com/gatewitness/gatewitness/cluster/store"
	"github.com/gatewitness/gatewitness/gateway/probeproxy"
	"github.com/gatewitness/gatewitness/gateway/probeproxy/probeproxytest"
)

// probeTolerance is how late, beyond periodSeconds × failureThreshold, a
// readiness change may come on this loaded machine: the probe's timeout,
// the runner's writes and the polling all add up.
const probeTolerance = 3 * time.Second

// startRunnerWith runs a Runner with opts (Client, Dir and Logger filled
// in) on a fresh store until the test ends.
func startRunnerWith(t *testing.T, opts pods.Options) (*store.Store, *pods.Runner) {
	t.Helper()
	s, err := store.New(store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	opts.Client, opts.Dir, opts.Logger = s, t.TempDir(), testr.New(t)
	r, err := pods.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return s, r
}

// probed is a one-replica Deployment of the echo-backend with a readiness
// probe (period 1s, failure threshold 2), optionally behind the probe
// proxy.
func probed(name string, p corev1.ProbeHandler, proxy bool, env ...corev1.EnvVar) *appsv1.Deployment {
	d := deployment("default", name, 1, "gatewitness/echo-backend:dev", env...)
	d.Spec.Template.Spec.Containers[0].ReadinessProbe = &corev1.Probe{ProbeHandler: p, PeriodSeconds: 1, FailureThreshold: 2}
	if proxy {
		d.Spec.Template.Annotations = map[string]string{probeproxy.AnnotationInject: "enabled"}
	}
	return d
}

// onlyPod returns the Deployment's one pod, and whether it is Ready.
func onlyPod(c client.Client, app string) (corev1.Pod, bool, error) {
	var list corev1.PodList
	if err := c.List(context.Background(), &list, client.InNamespace("default"), client.MatchingLabels{"app": app}); err != nil {
		return corev1.Pod{}, false, err
	}
	if len(list.Items) != 1 {
		return corev1.Pod{}, false, fmt.Errorf("%d pods, want 1", len(list.Items))
	}
	p := list.Items[0]
	for _, cond := range p.Status.Conditions {
		if cond.Type == corev1.PodReady {
			return p, cond.Status == corev1.ConditionTrue, nil
		}
	}
	return p, false, nil
}

// endpointReady reads the Service's one endpoint's ready and serving
// conditions.
func endpointReady(c client.Client, svc string) (ready, serving bool, err error) {
	var list discoveryv1.EndpointSliceList
	if err := c.List(context.Background(), &list, client.InNamespace("default"), client.MatchingLabels{discoveryv1.LabelServiceName: svc}); err != nil {
		return false, false, err
	}
	var eps []discoveryv1.Endpoint
	for _, s := range list.Items {
		eps = append(eps, s.Endpoints...)
	}
	if len(eps) != 1 {
		return false, false, fmt.Errorf("%d endpoints, want 1", len(eps))
	}
	return *eps[0].Conditions.Ready, *eps[0].Conditions.Serving, nil
}

// waitReady waits until the app's pod and its Service's endpoint are both
// ready (want true) or both not ready, and returns how long it took. It
// fails t after within.
func waitReady(t *testing.T, c client.Client, app string, want bool, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	wait(t).Eventually(func(g gomega.Gomega) {
		_, podReady, err := onlyPod(c, app)
		g.Expect(err).NotTo(gomega.HaveOccurred())
		epReady, _, err := endpointReady(c, app)
		g.Expect(err).NotTo(gomega.HaveOccurred())
		g.Expect([]bool{podReady, epReady}).To(gomega.Equal([]bool{want, want}), "pod ready, endpoint ready")
	}).WithTimeout(within).Should(gomega.Succeed(), app)
	return time.Since(start)
}

// stayReady fails t if the app's pod stops being ready within d.
func stayReady(t *testing.T, c client.Client, app string, d time.Duration) {
	t.Helper()
	wait(t).Consistently(func() (bool, error) {
		_, ready, err := onlyPod(c, app)
		return ready, err
	}).WithTimeout(d).Should(gomega.BeTrue(), "%s: pod ready", app)
}

// startedBackend waits for the app's backend to run and brings its health
// up: the gRPC service "echo" is unknown (so not SERVING) until set.
func startedBackend(t *testing.T, c client.Client, r *pods.Runner, app string, f flip) *echobackend.Backend {
	t.Helper()
	var b *echobackend.Backend
	wait(t).Eventually(func() error {
		p, _, err := onlyPod(c, app)
		if err != nil {
			return err
		}
		if b = r.Backend(p.Namespace, p.Name); b == nil {
			return errors.New("no backend yet")
		}
		return nil
	}).Should(gomega.Succeed(), app+" backend running")
	if err := f.set(b, true); err != nil {
		t.Fatal(err)
	}
	return b
}

func backendOf(t *testing.T, c client.Client, r *pods.Runner, app string) *echobackend.Backend {
	t.Helper()
	p, _, err := onlyPod(c, app)
	if err != nil {
		t.Fatal(err)
	}
	b := r.Backend(p.Namespace, p.Name)
	if b == nil {
		t.Fatalf("no backend for pod %s", p.Name)
	}
	return b
}

var (
	httpHealth = corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/health", Port: intstr.FromString("http")}}
	tcpLines   = corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(3002)}}
	grpcEcho   = func() corev1.ProbeHandler {
		svc := "echo"
		return corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 3000, Service: &svc}}
	}()
	grpcMode = corev1.EnvVar{Name: "GRPC_ECHO_SERVER", Value: "1"}
)

// flip is one way to take an echo-backend's health down and up again.
type flip struct {
	name    string
	handler corev1.ProbeHandler
	env     []corev1.EnvVar
	set     func(*echobackend.Backend, bool) error
}

var flips = []flip{
	{"http", httpHealth, nil, func(b *echobackend.Backend, up bool) error {
		code := 503
		if up {
			code = 200
		}
		return b.Controls().SetHTTPHealth(code)
	}},
	{"tcp", tcpLines, nil, func(b *echobackend.Backend, up bool) error { return b.Controls().SetTCPOpen(up) }},
	{"grpc", grpcEcho, []corev1.EnvVar{grpcMode}, func(b *echobackend.Backend, up bool) error {
		st := healthpb.HealthCheckResponse_NOT_SERVING
		if up {
			st = healthpb.HealthCheckResponse_SERVING
		}
		return b.Controls().SetGRPCHealth("echo", st)
	}},
}

// TestReadinessFollowsProbe flips each kind of health down and up, with
// and without the probe proxy, and wants the Pod's Ready condition, the
// endpoint's ready and serving conditions and the Deployment's
// readyReplicas to follow within periodSeconds × failureThreshold plus a
// tolerance.
func TestReadinessFollowsProbe(t *testing.T) {
	for _, f := range flips {
		for _, proxy := range []bool{false, true} {
			name := f.name + "-direct"
			if proxy {
				name = f.name + "-proxied"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				s, r := startRunnerWith(t, pods.Options{})
				app := "p-" + name
				create(t, s, probed(app, f.handler, proxy, f.env...), service("default", app, intstr.FromInt32(3000)))
				b := startedBackend(t, s, r, app, f)
				waitReady(t, s, app, true, waitTimeout)
				if proxy {
					p, _, _ := onlyPod(s, app)
					if g := p.Spec.Containers[0].ReadinessProbe.HTTPGet; g == nil || g.Port.IntValue() != probeproxy.DefaultPort {
						t.Fatalf("stored readiness probe %+v, want an httpGet on the probe proxy's port %d", p.Spec.Containers[0].ReadinessProbe, probeproxy.DefaultPort)
					}
				}
				follow(t, s, app, b, f)
			})
		}
	}
}

// follow takes the backend's health down and up and checks readiness
// follows each time, within 1s × 2 failures plus probeTolerance.
func follow(t *testing.T, s client.Client, app string, b *echobackend.Backend, f flip) {
	t.Helper()
	window := 2*time.Second + probeTolerance
	if err := f.set(b, false); err != nil {
		t.Fatal(err)
	}
	took := waitReady(t, s, app, false, window)
	t.Logf("%s down: not ready after %v", f.name, took)
	_, serving, err := endpointReady(s, app)
	if err != nil || serving {
		t.Errorf("endpoint serving %v (%v) for an unready pod; want false", serving, err)
	}
	wait(t).Eventually(func() error {
		var dep appsv1.Deployment
		if err := s.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: app}, &dep); err != nil {
			return err
		}
		if dep.Status.ReadyReplicas != 0 || dep.Status.AvailableReplicas != 0 {
			return fmt.Errorf("readyReplicas %d, availableReplicas %d", dep.Status.ReadyReplicas, dep.Status.AvailableReplicas)
		}
		return nil
	}).Should(gomega.Succeed(), "readyReplicas 0")
	if err := f.set(b, true); err != nil {
		t.Fatal(err)
	}
	took = waitReady(t, s, app, true, 1*time.Second+probeTolerance)
	t.Logf("%s up: ready after %v", f.name, took)
}

// TestBrokenProbeProxyHidesFailures shows what the probe tests must catch:
// a probe proxy that accepts every TCP probe, or answers every gRPC probe
// SERVING, keeps a pod ready whose app is down.
func TestBrokenProbeProxyHidesFailures(t *testing.T) {
	cases := []struct {
		name  string
		fault probeproxytest.Hooks
		f     flip
	}{
		{"tcp-always-up", probeproxytest.Hooks{TCPAlwaysUp: true}, flips[1]},
		{"grpc-always-serving", probeproxytest.Hooks{GRPCAlwaysServing: true}, flips[2]},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s, r := startRunnerWith(t, pods.Options{ListenProbeProxy: func(addr string, o probeproxy.Options) (*probeproxy.Server, error) {
				return probeproxytest.Listen(addr, o, c.fault)
			}})
			app := "broken-" + c.f.name
			create(t, s, probed(app, c.f.handler, true, c.f.env...), service("default", app, intstr.FromInt32(3000)))
			b := startedBackend(t, s, r, app, c.f)
			waitReady(t, s, app, true, waitTimeout)
			if err := c.f.set(b, false); err != nil {
				t.Fatal(err)
			}
			// The window in which a faithful proxy makes the pod unready.
			stayReady(t, s, app, 2*time.Second+probeTolerance)
		})
	}
}

func TestPublishNotReadyAddresses(t *testing.T) {
	s, r := startRunnerWith(t, pods.Options{})
	d := probed("pnra", httpHealth, false)
	svc := service("default", "pnra", intstr.FromInt32(3000))
	svc.Spec.PublishNotReadyAddresses = true
	create(t, s, d, svc)
	wait(t).Eventually(func() error {
		if _, ready, err := onlyPod(s, "pnra"); err != nil || !ready {
			return fmt.Errorf("ready %v: %v", ready, err)
		}
		return nil
	}).Should(gomega.Succeed(), "a ready pod")
	if err := backendOf(t, s, r, "pnra").Controls().SetHTTPHealth(503); err != nil {
		t.Fatal(err)
	}
	wait(t).Eventually(func() error {
		_, podReady, err := onlyPod(s, "pnra")
		if err != nil {
			return err
		}
		ready, serving, err := endpointReady(s, "pnra")
		if err != nil {
			return err
		}
		if podReady || !ready || serving {
			return fmt.Errorf("pod ready %v, endpoint ready %v serving %v", podReady, ready, serving)
		}
		return nil
	}).Should(gomega.Succeed(), "the pod unready, its endpoint still ready but not serving")
}

func TestUnsupportedProbes(t *testing.T) {
	s, _ := startRunnerWith(t, pods.Options{})
	exec := probed("exec-probe", corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}, false)
	badAnn := probed("bad-annotation", httpHealth, false)
	badAnn.Annotations = map[string]string{probeproxy.AnnotationInject: "yes"}
	badName := probed("bad-port-name", corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("nope")}}, true)
	create(t, s, exec, badAnn, badName)
	want := map[string]string{
		"exec-probe":     "spec.template.spec.containers[0] (exec-probe).readinessProbe.exec: accepted in-process: httpGet, tcpSocket or grpc",
		"bad-annotation": `metadata.annotations: annotation gatewitness.dev/probe-proxy: "yes": accepted: enabled or disabled`,
		"bad-port-name":  `readinessProbe.tcpSocket.port: "nope": accepted`,
	}
	for name, msg := range want {
		wait(t).Eventually(func() error {
			var d appsv1.Deployment
			if err := s.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: name}, &d); err != nil {
				return err
			}
			for _, c := range d.Status.Conditions {
				if c.Type == appsv1.DeploymentAvailable && c.Reason == pods.ReasonUnsupported {
					if !strings.Contains(c.Message, msg) {
						return errors.New("message " + c.Message + " does not contain " + msg)
					}
					return nil
				}
			}
			return fmt.Errorf("conditions %+v", d.Status.Conditions)
		}).Should(gomega.Succeed(), name+" unsupported")
	}
}
