package cluster_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clientset "k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/gateway-api/conformance/utils/config"
	httputil "sigs.k8s.io/gateway-api/conformance/utils/http"
	"sigs.k8s.io/gateway-api/conformance/utils/kubernetes"

	"github.com/gatewitness/gatewitness/cluster"
)

// TestMirrorFoundInPodLogs applies upstream's mirror route, sends a request
// through the reference gateway and finds the mirror backend's log line
// the way upstream's ExpectMirroredRequest does: DumpEchoLogs lists the
// Pods by app label with the cluster's client and reads each one's log
// through the clientset, since a time, for the container named after the
// app.
func TestMirrorFoundInPodLogs(t *testing.T) {
	if testing.Short() {
		t.Skip("starts every backend of the upstream base manifests")
	}
	timeouts := config.DefaultTimeoutConfig()
	c := startCluster(t, cluster.Options{})
	setUpBase(t, c, timeouts)
	applier().MustApplyWithCleanup(t, c.Client(), timeouts, "tests/httproute-request-mirror.yaml", true)
	gwAddr := kubernetes.GatewayAndHTTPRoutesMustBeAccepted(t, c.Client(), timeouts, string(cluster.DefaultControllerName),
		kubernetes.NewGatewayRef(types.NamespacedName{Namespace: infraNS, Name: "same-namespace"}),
		types.NamespacedName{Namespace: infraNS, Name: "request-mirror"})

	// A path no other request uses, so only this test's request can match.
	path := fmt.Sprintf("/mirror/%s-%d", t.Name(), time.Now().UnixNano())
	re := httputil.GetMirrorLogRegexp(path)
	since := time.Now().Add(-time.Second)
	ctx := context.Background()
	found := func(cs clientset.Interface, app string, since time.Time) (bool, error) {
		logs, err := kubernetes.DumpEchoLogs(ctx, infraNS, app, c.Client(), cs, since)
		return slices.ContainsFunc(logs, re.MatchString), err
	}
	if ok, err := found(c.Clientset(), "infra-backend-v2", since); ok || err != nil {
		t.Fatalf("before the request: found %v, err %v; want no line for %s yet", ok, err, path)
	}

	httputil.MakeRequestAndExpectEventuallyConsistentResponse(t, c.RoundTripper(timeouts, false), timeouts, gwAddr, httputil.ExpectedResponse{
		Request:   httputil.Request{Path: path},
		Backend:   "infra-backend-v1",
		Namespace: infraNS,
	})
	// The mirror is sent beside the request; poll for its line.
	wait(t).Eventually(func() error {
		if ok, err := found(c.Clientset(), "infra-backend-v2", since); !ok || err != nil {
			return fmt.Errorf("found %v, err %v", ok, err)
		}
		return nil
	}).Should(gomega.Succeed(), "the mirrored request in infra-backend-v2's log")
	// The primary backend logged it too; an unrelated one did not.
	if ok, err := found(c.Clientset(), "infra-backend-v1", since); !ok || err != nil {
		t.Errorf("infra-backend-v1 (the route's backend): found %v, err %v; want the line", ok, err)
	}
	if ok, err := found(c.Clientset(), "infra-backend-v3", since); ok || err != nil {
		t.Errorf("infra-backend-v3 (no route to it): found %v, err %v; want no line", ok, err)
	}

	// A clientset built from RestConfig, as the suite builds one per test,
	// reads the same logs, and sinceTime is honoured.
	cs, err := clientset.NewForConfig(c.RestConfig())
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := found(cs, "infra-backend-v2", since); !ok || err != nil {
		t.Errorf("through a clientset from RestConfig: found %v, err %v; want the line", ok, err)
	}
	if ok, err := found(cs, "infra-backend-v2", time.Now().Add(time.Hour)); ok || err != nil {
		t.Errorf("since an hour from now: found %v, err %v; want no line", ok, err)
	}

	// And upstream's own check, as HTTPRouteRequestMirror runs it.
	wait := httputil.ExpectMirroredRequest(t, c.Client(), c.Clientset(),
		[]httputil.MirroredBackend{{BackendRef: httputil.BackendRef{Name: "infra-backend-v2", Namespace: infraNS}}}, path, timeouts)
	wait()
}

// TestPodLogAPI checks the pod log endpoint's options and errors through
// client-go, as a caller of the Clientset sees them.
func TestPodLogAPI(t *testing.T) {
	c := startCluster(t, cluster.Options{})
	const ns = "logs"
	smallSetup(t, c, ns)
	ctx := context.Background()
	var pods corev1.PodList
	wait(t).Eventually(func() error {
		if err := c.Client().List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{"app": "web"}); err != nil {
			return err
		}
		ready := 0
		for _, p := range pods.Items {
			if p.Status.PodIP != "" && p.Status.Phase == corev1.PodRunning {
				ready++
			}
		}
		if ready != 2 {
			return fmt.Errorf("%d of %d pods running", ready, len(pods.Items))
		}
		return nil
	}).Should(gomega.Succeed(), "two ready pods")
	pod := pods.Items[0]
	for _, target := range []string{"/first", "/second?x=1"} {
		resp, err := http.Get("http://" + net.JoinHostPort(pod.Status.PodIP, "3000") + target)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	cs := c.Clientset()
	// Stream, as upstream's DumpEchoLogs reads logs: it turns a Status
	// body into a typed error (DoRaw would not).
	podLogs := func(name string, opts *corev1.PodLogOptions) (string, error) {
		r, err := cs.CoreV1().Pods(ns).GetLogs(name, opts).Stream(ctx)
		if err != nil {
			return "", err
		}
		defer r.Close()
		b, err := io.ReadAll(r)
		return string(b), err
	}
	logs := func(opts *corev1.PodLogOptions) (string, error) { return podLogs(pod.Name, opts) }
	int64p := func(n int64) *int64 { return &n }

	all, err := logs(&corev1.PodLogOptions{Container: "web"})
	lines := strings.Split(strings.TrimSuffix(all, "\n"), "\n")
	if err != nil || len(lines) != 2 || !strings.HasPrefix(lines[0], "Echoing back request made to /first to client (") ||
		!strings.HasPrefix(lines[1], "Echoing back request made to /second?x=1 to client (") {
		t.Fatalf("log = %q, %v; want the two request lines", all, err)
	}
	if got, err := logs(&corev1.PodLogOptions{}); got != all || err != nil {
		t.Errorf("no container (the pod has one): %q, %v; want the same log", got, err)
	}
	if got, err := logs(&corev1.PodLogOptions{TailLines: int64p(1)}); got != lines[1]+"\n" || err != nil {
		t.Errorf("tailLines=1: %q, %v; want the last line", got, err)
	}
	if got, err := logs(&corev1.PodLogOptions{TailLines: int64p(0)}); got != "" || err != nil {
		t.Errorf("tailLines=0: %q, %v; want nothing", got, err)
	}
	if got, err := logs(&corev1.PodLogOptions{LimitBytes: int64p(12)}); got != all[:12] || err != nil {
		t.Errorf("limitBytes=12: %q, %v; want %q", got, err, all[:12])
	}
	if got, err := logs(&corev1.PodLogOptions{SinceTime: &metav1.Time{Time: time.Now().Add(time.Hour)}}); got != "" || err != nil {
		t.Errorf("sinceTime an hour ahead: %q, %v; want nothing", got, err)
	}
	if got, err := logs(&corev1.PodLogOptions{SinceSeconds: int64p(3600)}); got != all || err != nil {
		t.Errorf("sinceSeconds=3600: %q, %v; want the whole log", got, err)
	}
	stamped, err := logs(&corev1.PodLogOptions{Timestamps: true})
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range strings.Split(strings.TrimSuffix(stamped, "\n"), "\n") {
		ts, text, _ := strings.Cut(l, " ")
		at, err := time.Parse(time.RFC3339Nano, ts)
		if err != nil || text != lines[i] || time.Since(at) < 0 || time.Since(at) > waitTimeout+time.Minute {
			t.Errorf("timestamped line %d = %q: want a recent RFC 3339 time, a space and %q", i, l, lines[i])
		}
	}

	// Errors, as the API server gives them.
	_, err = logs(&corev1.PodLogOptions{Container: "nope"})
	if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), `container "nope" is not valid`) {
		t.Errorf("unknown container: %v; want a 400 naming it", err)
	}
	_, err = podLogs("no-such-pod", &corev1.PodLogOptions{})
	if !apierrors.IsNotFound(err) || !strings.Contains(err.Error(), `pods "no-such-pod" not found`) {
		t.Errorf("unknown pod: %v; want a 404", err)
	}
	_, err = logs(&corev1.PodLogOptions{Follow: true})
	if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "follow=true: accepted: false") {
		t.Errorf("follow: %v; want a 400 saying it is not supported", err)
	}
	_, err = logs(&corev1.PodLogOptions{TailLines: int64p(-1)})
	if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), `tailLines="-1": accepted: a whole number of at least 0`) {
		t.Errorf("tailLines=-1: %v; want a 400 naming tailLines", err)
	}
	bare := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bare"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}}}
	create(t, c.Client(), bare)
	_, err = podLogs("bare", &corev1.PodLogOptions{})
	if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "has no log") {
		t.Errorf("a Pod the runner does not run: %v; want a 400 saying it has no log", err)
	}
	_, err = cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	var se *apierrors.StatusError
	if !errors.As(err, &se) || se.ErrStatus.Code != http.StatusNotImplemented || !strings.Contains(err.Error(), "serves only GET /api/v1/namespaces/{namespace}/pods/{name}/log") {
		t.Errorf("listing pods through the clientset: %v; want a 501 naming the one path served", err)
	}

	// A bad query straight to the server gets a Status naming the field.
	resp, err := http.Get(c.RestConfig().Host + "/api/v1/namespaces/" + ns + "/pods/" + pod.Name + "/log?sinceTime=yesterday")
	if err != nil {
		t.Fatal(err)
	}
	var st metav1.Status
	err = json.NewDecoder(resp.Body).Decode(&st)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusBadRequest || st.Kind != "Status" || st.Reason != metav1.StatusReasonBadRequest ||
		!strings.Contains(st.Message, `sinceTime="yesterday": accepted: an RFC 3339 time`) {
		t.Errorf("sinceTime=yesterday: status %d, %+v, %v; want a 400 Status naming sinceTime", resp.StatusCode, st, err)
	}

	// Close stops the server.
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := logs(&corev1.PodLogOptions{}); err == nil {
		t.Error("the log API still answers after Close")
	}
}
