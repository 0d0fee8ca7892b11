package tests

// Helpers of the MeshProbe* tests: each flips an echo-backend's health
// through its admin endpoint, reached through the Gateway on a Service that
// publishes not-ready addresses (so the admin endpoint stays reachable
// while the pod is out of rotation), and waits for the Pod's Ready
// condition and the Gateway's traffic to follow.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/gateway-api/conformance/utils/suite"

	"github.com/gatewitness/gatewitness/conformance/tests/internal/testclient"
	"github.com/gatewitness/gatewitness/contract/observe"
)

// The probe settings of every MeshProbe* manifest's readiness probe.
const (
	probePeriod           = time.Second // periodSeconds: 1
	probeFailureThreshold = 2           // failureThreshold: 2
	probeSuccessThreshold = 1           // successThreshold: 1 (the default)
	probeTimeout          = time.Second // timeoutSeconds: 1 (the default)
	// probePropagation is how long a readiness change may take to reach
	// the Gateway: the kubelet's status write, the EndpointSlice
	// controller's update and the Gateway's reprogramming, which take
	// seconds on a real cluster, with a data plane fed asynchronously, or
	// (over 5s seen) with the reference gateway under the race detector on
	// a loaded machine. It only widens the windows' upper ends: the meshes
	// the tests catch keep a failing Pod Ready for good, not a few seconds
	// longer.
	probePropagation = 10 * time.Second
)

// probeDownWindow is how soon after the app's health goes down the Pod
// must be unready and the Gateway must stop sending it traffic: the
// failing checks (periodSeconds × failureThreshold, counted from the flip,
// so the first failing check may come up to a period after it), one
// check's timeout, the propagation and the suite's timing tolerance.
func probeDownWindow() time.Duration {
	return probePeriod*probeFailureThreshold + probeTimeout + probePropagation + TimingTolerance()
}

// probeUpWindow is the same for the way back: successThreshold checks.
func probeUpWindow() time.Duration {
	return probePeriod*probeSuccessThreshold + probeTimeout + probePropagation + TimingTolerance()
}

// probeTarget is one Deployment of a MeshProbe* test: its health switch
// and how to tell whether the Gateway sends it traffic.
type probeTarget struct {
	// app is the Deployment's app label (and name).
	app string
	// setHealth takes the app's health down or up through the Gateway.
	setHealth func(up bool) error
	// served sends one request through the Gateway and reports whether
	// the app's pod (named pod) answered it, with what was seen.
	served func(pod string) (bool, string)
}

// probePod returns the one Pod of app in the infrastructure namespace and
// whether it is Ready.
func probePod(s *suite.ConformanceTestSuite, app string) (name string, ready bool, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var list corev1.PodList
	if err := s.Client.List(ctx, &list, client.InNamespace(infraNamespace), client.MatchingLabels{"app": app}); err != nil {
		return "", false, fmt.Errorf("listing the pods of %s: %w", app, err)
	}
	var live []corev1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			live = append(live, p)
		}
	}
	if len(live) != 1 {
		return "", false, fmt.Errorf("%d pods of %s, want 1", len(live), app)
	}
	for _, c := range live[0].Status.Conditions {
		if c.Type == corev1.PodReady {
			return live[0].Name, c.Status == corev1.ConditionTrue, nil
		}
	}
	return live[0].Name, false, nil
}

// probeState is what one poll saw.
type probeState struct {
	ready, served bool
	detail        string
}

// waitProbeState polls until the Pod's readiness and the Gateway's traffic
// both equal want, and returns when each first did (from start). It fails
// t when that does not happen within window; the message says which of
// the two lagged.
func waitProbeState(t *testing.T, s *suite.ConformanceTestSuite, pt probeTarget, pod string, want bool, start time.Time, window time.Duration) (readyAt, servedAt time.Duration) {
	t.Helper()
	readyAt, servedAt = -1, -1
	var last probeState
	both := testclient.Poll(window-time.Since(start), 100*time.Millisecond, func() bool {
		name, ready, err := probePod(s, pt.app)
		if err != nil {
			t.Fatalf("%s: %v", pt.app, err)
		}
		if name != pod {
			t.Fatalf("%s: the pod changed from %s to %s during the test; a readiness probe must not restart or replace it", pt.app, pod, name)
		}
		served, detail := pt.served(pod)
		last = probeState{ready, served, detail}
		now := time.Since(start)
		if ready == want && readyAt < 0 {
			readyAt = now
		}
		if ready != want {
			readyAt = -1
		}
		if served == want && servedAt < 0 {
			servedAt = now
		}
		if served != want {
			servedAt = -1
		}
		return readyAt >= 0 && servedAt >= 0
	})
	if !both {
		t.Fatalf("%s: %v after the health change, pod %s Ready=%v (want %v) and the Gateway's traffic served by it: %v (want %v; last: %s)",
			pt.app, window, pod, last.ready, want, last.served, want, last.detail)
	}
	return readyAt, servedAt
}

// followHealth checks one probe target: the pod is Ready and served; once
// its health goes down it becomes unready and the Gateway stops sending
// it traffic within probeDownWindow; once its health is back, both return
// within probeUpWindow. It records the times it measured.
func followHealth(t *testing.T, s *suite.ConformanceTestSuite, pt probeTarget) {
	t.Helper()
	var pod, detail string
	var ready, served bool
	var err error
	if !testclient.Poll(s.TimeoutConfig.MaxTimeToConsistency, 200*time.Millisecond, func() bool {
		pod, ready, err = probePod(s, pt.app)
		served, detail = false, ""
		if err == nil && ready {
			served, detail = pt.served(pod)
		}
		return err == nil && ready && served
	}) {
		t.Fatalf("%s: not Ready and served within %v before the test: ready %v, err %v, %s", pt.app, s.TimeoutConfig.MaxTimeToConsistency, ready, err, detail)
	}
	t.Cleanup(func() {
		// Leave the backend healthy for whoever reads it next; the
		// manifests are deleted after the test anyway.
		_ = pt.setHealth(true)
	})

	start := time.Now()
	if err := pt.setHealth(false); err != nil {
		t.Fatalf("%s: taking the health down: %v", pt.app, err)
	}
	readyAt, servedAt := waitProbeState(t, s, pt, pod, false, start, probeDownWindow())
	observe.Record(t, "unready-after", readyAt.Round(time.Millisecond))
	observe.Record(t, "traffic-stopped-after", servedAt.Round(time.Millisecond))

	start = time.Now()
	if err := pt.setHealth(true); err != nil {
		t.Fatalf("%s: bringing the health back: %v", pt.app, err)
	}
	readyAt, servedAt = waitProbeState(t, s, pt, pod, true, start, probeUpWindow())
	observe.Record(t, "ready-after", readyAt.Round(time.Millisecond))
	observe.Record(t, "traffic-restored-after", servedAt.Round(time.Millisecond))
}

// adminSwitch returns the backend's admin path and query that bring a
// probe target's health up or down (echowire.AdminHealthPath, ...).
type adminSwitch func(up bool) (path string, query url.Values)

// httpProbeTarget is a probe target behind an HTTPRoute hostname: its
// admin endpoint under /_gatewitness/ and its echo under /.
func httpProbeTarget(t *testing.T, s *suite.ConformanceTestSuite, gwAddr, host, app string, admin adminSwitch) probeTarget {
	c := newRouteClient(t, s, gwAddr, host)
	return probeTarget{
		app:       app,
		setHealth: func(up bool) error { _, err := c.Admin(admin(up)); return err },
		served: func(pod string) (bool, string) {
			x := c.Do(t, testclient.Request{Path: "/", Limit: 5 * time.Second})
			if x.Err != nil || x.Status != http.StatusOK {
				return false, x.String()
			}
			var e struct {
				Pod string `json:"pod"`
			}
			if err := json.Unmarshal(x.Body, &e); err != nil {
				return false, fmt.Sprintf("%s: not an echo: %v", x, err)
			}
			return e.Pod == pod, fmt.Sprintf("%s from pod %q", x, e.Pod)
		},
	}
}

// meshTargets returns those of apps (Deployments in the infrastructure
// namespace, one Pod each) whose readiness probes a mesh intercepts, and
// skips t, saying why, when none does: a probe test on a Pod that the
// kubelet probes directly shows only that the Gateway follows readiness,
// which says nothing of a mesh. It waits for each Deployment's Pod to
// exist, and records the evidence it found for each app.
func meshTargets(t *testing.T, s *suite.ConformanceTestSuite, apps ...string) []string {
	t.Helper()
	var out, none []string
	for _, app := range apps {
		evidence, err := waitMeshEvidence(s, app)
		if err != nil {
			t.Fatalf("%s: %v", app, err)
		}
		if evidence == "" {
			none = append(none, app)
			observe.Record(t, "mesh/"+app, "none: the kubelet probes the app directly")
			continue
		}
		observe.Record(t, "mesh/"+app, evidence)
		out = append(out, app)
	}
	if len(out) == 0 {
		t.Skipf("no mesh intercepts the readiness probes of the Pods of %s: each Pod's probe is its Deployment's own and no container was added beside the app, so the kubelet probes the app directly and the test would show nothing of a mesh (enable the mesh's injection for namespace %s)",
			strings.Join(none, ", "), infraNamespace)
	}
	for _, app := range none {
		t.Logf("%s: no mesh intercepts its readiness probe; it is left out", app)
	}
	return out
}

// waitMeshEvidence waits (up to a minute) for app's Pod and returns the
// evidence that a mesh is in the path of its readiness probe, or "" when
// there is none. The evidence comes from the Pod as the API server stores
// it, against its Deployment's template: a mesh's injector rewrote the
// readiness probe (as Istio and gatewitness's in-process probe proxy do), or
// added a container to the Pod, a sidecar in the Pod's network namespace
// that captures the probe's connection (as Linkerd does without
// rewriting). A mesh that neither rewrites probes nor adds a container
// (probes exempted from capture, as in Istio's ambient mode) is not in the
// probe's path, and gets no evidence.
func waitMeshEvidence(s *suite.ConformanceTestSuite, app string) (string, error) {
	var evidence string
	var found bool
	var err error
	if testclient.Poll(max(s.TimeoutConfig.MaxTimeToConsistency, time.Minute), 200*time.Millisecond, func() bool {
		evidence, found, err = meshEvidence(s, app)
		return err == nil && found
	}) {
		return evidence, nil
	}
	if err == nil {
		err = fmt.Errorf("no Pod of %s appeared", app)
	}
	return "", err
}

func meshEvidence(s *suite.ConformanceTestSuite, app string) (evidence string, found bool, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var d appsv1.Deployment
	if err := s.Client.Get(ctx, types.NamespacedName{Namespace: infraNamespace, Name: app}, &d); err != nil {
		return "", false, fmt.Errorf("reading Deployment %s: %w", app, err)
	}
	var list corev1.PodList
	if err := s.Client.List(ctx, &list, client.InNamespace(infraNamespace), client.MatchingLabels{"app": app}); err != nil {
		return "", false, fmt.Errorf("listing the pods of %s: %w", app, err)
	}
	var pod *corev1.Pod
	for i := range list.Items {
		if list.Items[i].DeletionTimestamp == nil {
			pod = &list.Items[i]
		}
	}
	if pod == nil {
		return "", false, nil
	}
	var seen []string
	declared := map[string]bool{}
	for _, c := range append(slices.Clone(d.Spec.Template.Spec.InitContainers), d.Spec.Template.Spec.Containers...) {
		declared[c.Name] = true
	}
	for _, tc := range d.Spec.Template.Spec.Containers {
		if tc.ReadinessProbe == nil {
			continue
		}
		for _, pc := range pod.Spec.Containers {
			if pc.Name == tc.Name && !sameProbeHandler(tc.ReadinessProbe, pc.ReadinessProbe) {
				seen = append(seen, fmt.Sprintf("pod %s: the readiness probe of container %s was rewritten to %s", pod.Name, pc.Name, describeProbe(pc.ReadinessProbe)))
			}
		}
	}
	for _, c := range pod.Spec.Containers {
		if !declared[c.Name] {
			seen = append(seen, fmt.Sprintf("pod %s: container %s was added", pod.Name, c.Name))
		}
	}
	for _, c := range pod.Spec.InitContainers {
		if !declared[c.Name] && c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			seen = append(seen, fmt.Sprintf("pod %s: sidecar container %s was added", pod.Name, c.Name))
		}
	}
	return strings.Join(seen, "; "), true, nil
}

// sameProbeHandler reports whether two probes check the same thing (the
// handler: what is probed, where, how), whatever their timings and
// whatever defaults the API server filled in.
func sameProbeHandler(a, b *corev1.Probe) bool {
	if a == nil || b == nil {
		return a == b
	}
	norm := func(p *corev1.Probe) corev1.ProbeHandler {
		h := *p.ProbeHandler.DeepCopy()
		if h.HTTPGet != nil && h.HTTPGet.Scheme == "" {
			h.HTTPGet.Scheme = corev1.URISchemeHTTP
		}
		if h.HTTPGet != nil && len(h.HTTPGet.HTTPHeaders) == 0 {
			h.HTTPGet.HTTPHeaders = nil
		}
		if h.GRPC != nil && h.GRPC.Service != nil && *h.GRPC.Service == "" {
			h.GRPC.Service = nil
		}
		return h
	}
	return reflect.DeepEqual(norm(a), norm(b))
}

// describeProbe names a probe's handler for the report.
func describeProbe(p *corev1.Probe) string {
	switch {
	case p == nil:
		return "no probe"
	case p.HTTPGet != nil:
		return fmt.Sprintf("httpGet %s on port %s", p.HTTPGet.Path, p.HTTPGet.Port.String())
	case p.TCPSocket != nil:
		return "tcpSocket on port " + p.TCPSocket.Port.String()
	case p.GRPC != nil:
		return fmt.Sprintf("grpc on port %d", p.GRPC.Port)
	case p.Exec != nil:
		return "exec " + strings.Join(p.Exec.Command, " ")
	}
	return "an unknown handler"
}
