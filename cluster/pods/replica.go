package pods

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"syscall"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gatewitness/gatewitness/cluster/podlog"
	echobackend "github.com/gatewitness/gatewitness/echo-backend"
	"github.com/gatewitness/gatewitness/gateway/probeproxy"
	"github.com/gatewitness/gatewitness/internal/probe"
)

// replica is one Pod the runner created and, once started, its backend.
type replica struct {
	key     types.NamespacedName
	uid     types.UID
	owner   types.UID // the Deployment's
	hash    string
	pod     *corev1.Pod // metadata and spec as created
	created metav1.Time

	// container is the name of the echo container, whose log is log; set
	// at creation and never changed.
	container string
	log       *podlog.Buffer

	ip      netip.Addr
	backend *echobackend.Backend
	proxy   *probeproxy.Server // the probe proxy, when the pod has one
	prober  *probe.Worker      // the readiness probe, when the pod has one
	// probeReady is the readiness probe's verdict and readyAt when the
	// replica's readiness last changed (or its backend started); both are
	// guarded by Runner.mu, since the prober's goroutine writes them.
	probeReady bool
	readyAt    metav1.Time
	started    metav1.Time // when the backend started
	why        *waiting    // why the backend is not running
}

// ready reports whether rep counts as ready: its backend runs and its
// readiness probe, if any, has passed. The caller holds r.mu.
func (rep *replica) ready() bool {
	return rep.backend != nil && (rep.prober == nil || rep.probeReady)
}

// isReady is rep.ready under r.mu.
func (r *Runner) isReady(rep *replica) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return rep.ready()
}

// maxBindAttempts is how many loopback addresses a replica tries when its
// ports are taken (by another process using the same range).
const maxBindAttempts = 8

// start resolves rep's environment and starts its backend on a free
// loopback address. It records why not on failure and reports whether the
// failure calls for a timed retry.
func (r *Runner) start(ctx context.Context, rep *replica, t *podTemplate) (retry bool) {
	dir := filepath.Join(r.dir, rep.key.Namespace+"_"+rep.key.Name)
	var lastErr error
	for range maxBindAttempts {
		ip, ok := r.allocIP()
		if !ok {
			lastErr = fmt.Errorf("no free loopback address left in %s", r.prefix)
			break
		}
		pod := rep.pod.DeepCopy()
		pod.Status.PodIP = ip.String()
		pod.Status.HostIP = "127.0.0.1"
		env, err := podEnv(ctx, r.c, t, pod, dir)
		var w *waiting
		if errors.As(err, &w) {
			r.releaseIP(ip)
			r.setWhy(rep, w)
			return false
		}
		if err != nil {
			r.releaseIP(ip)
			lastErr = err
			break
		}
		cfg, err := echobackend.ConfigFromEnv(func(k string) string { return env[k] })
		if err != nil {
			r.releaseIP(ip)
			lastErr = err
			break
		}
		cfg.Host = ip.String()
		cfg.Log = rep.log
		b, err := echobackend.Start(cfg)
		var proxy *probeproxy.Server
		if err == nil && t.proxy && !r.noMesh {
			proxy, err = r.startProxy(rep, ip)
			if err != nil {
				b.Close()
			}
		}
		if errors.Is(err, syscall.EADDRINUSE) {
			// Keep the address marked: something else holds its ports.
			lastErr = err
			continue
		}
		if err != nil {
			r.releaseIP(ip)
			lastErr = err
			break
		}
		r.mu.Lock()
		rep.ip, rep.backend, rep.proxy, rep.why = ip, b, proxy, nil
		rep.started = metav1.Now().Rfc3339Copy()
		rep.readyAt = rep.started
		rep.prober = r.startProber(rep, ip)
		r.mu.Unlock()
		r.log.V(1).Info("pod serving", "pod", rep.key.String(), "ip", ip.String(), "mode", cfg.Mode.String())
		return false
	}
	r.setWhy(rep, &waiting{reasonCrashBackOff, lastErr.Error()})
	return true
}

// startProxy starts rep's probe proxy on ip, at the port Rewrite chose.
func (r *Runner) startProxy(rep *replica, ip netip.Addr) (*probeproxy.Server, error) {
	port, err := probeproxy.Port(rep.pod)
	if err != nil {
		return nil, fmt.Errorf("pod %s: %w", rep.key, err)
	}
	return r.listenProxy(netip.AddrPortFrom(ip, uint16(port)).String(), probeproxy.Options{AppHost: ip.String()})
}

// startProber starts the readiness probe of rep's echo container (as
// stored: rewritten when the pod has a probe proxy), or returns nil when it
// has none. The caller holds r.mu.
func (r *Runner) startProber(rep *replica, ip netip.Addr) *probe.Worker {
	var c *corev1.Container
	for i := range rep.pod.Spec.Containers {
		if rep.pod.Spec.Containers[i].Name == rep.container {
			c = &rep.pod.Spec.Containers[i]
		}
	}
	if c == nil || c.ReadinessProbe == nil {
		return nil
	}
	return probe.Start(probe.Config{
		Probe:  c.ReadinessProbe.DeepCopy(),
		Target: probe.Target{Host: ip.String(), Ports: c.Ports},
		OnChange: func(ready bool, last probe.Result) {
			r.mu.Lock()
			rep.probeReady = ready
			rep.readyAt = metav1.Now().Rfc3339Copy()
			r.mu.Unlock()
			r.log.V(1).Info("readiness changed", "pod", rep.key.String(), "ready", ready, "probe", last.Message)
			r.poke()
		},
	})
}

func (r *Runner) setWhy(rep *replica, w *waiting) {
	if rep.why == nil || *rep.why != *w {
		r.log.Info("pod not started", "pod", rep.key.String(), "reason", w.reason, "message", w.message)
	}
	rep.why = w
}

// stop ends rep's backend and forgets it. Its Pod is deleted by the caller.
func (r *Runner) stop(rep *replica) {
	r.mu.Lock()
	delete(r.replicas, rep.key)
	b, proxy, prober := rep.backend, rep.proxy, rep.prober
	rep.backend, rep.proxy, rep.prober, rep.probeReady = nil, nil, nil, false
	r.mu.Unlock()
	// Not under r.mu: the prober's last change takes it.
	if prober != nil {
		prober.Stop()
	}
	if proxy != nil {
		if err := proxy.Close(); err != nil {
			r.log.Error(err, "stopping a probe proxy", "pod", rep.key.String())
		}
	}
	if b != nil {
		if err := b.Close(); err != nil {
			r.log.Error(err, "stopping a backend", "pod", rep.key.String())
		}
		r.releaseIP(rep.ip)
	}
	if r.dir != "" {
		os.RemoveAll(filepath.Join(r.dir, rep.key.Namespace+"_"+rep.key.Name))
	}
}

// stopAll stops every backend.
func (r *Runner) stopAll() {
	r.mu.Lock()
	reps := make([]*replica, 0, len(r.replicas))
	for _, rep := range r.replicas {
		reps = append(reps, rep)
	}
	r.mu.Unlock()
	for _, rep := range reps {
		r.stop(rep)
	}
}

// allocIP returns a free address of the range, scanning on from the last
// one handed out and skipping the range's first and last addresses.
func (r *Runner) allocIP() (netip.Addr, bool) {
	first := r.prefix.Addr().Next()
	for range 1 << (32 - r.prefix.Bits()) {
		a := r.ipNext
		r.ipNext = r.ipNext.Next()
		if !r.prefix.Contains(r.ipNext.Next()) {
			r.ipNext = first
		}
		if !r.ipUsed[a] {
			r.ipUsed[a] = true
			return a, true
		}
	}
	return netip.Addr{}, false
}

func (r *Runner) releaseIP(a netip.Addr) { delete(r.ipUsed, a) }
