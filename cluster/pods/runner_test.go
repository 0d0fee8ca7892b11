package pods_test

import (
	"context"
	"crypto/tls"
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

	"github.com/go-logr/logr/testr"
	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/gateway-api/conformance/utils/kubernetes"

	"github.com/gatewitness/gatewitness/cluster/pods"
	"github.com/gatewitness/gatewitness/cluster/store"
)

// waitTimeout is generous: the test machine is shared and loaded.
const waitTimeout = 60 * time.Second

// wait is gomega for t, its Eventually bounded by waitTimeout and
// polling every 20ms, and its Consistently polling every 50ms.
func wait(t *testing.T) *gomega.WithT {
	g := gomega.NewWithT(t)
	g.SetDefaultEventuallyTimeout(waitTimeout)
	g.SetDefaultEventuallyPollingInterval(20 * time.Millisecond)
	g.SetDefaultConsistentlyPollingInterval(50 * time.Millisecond)
	return g
}

// startRunner runs a Runner on a fresh store until the test ends.
func startRunner(t *testing.T) (*store.Store, *pods.Runner) {
	t.Helper()
	s, err := store.New(store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := pods.New(pods.Options{Client: s, Dir: t.TempDir(), Logger: testr.New(t)})
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

func deployment(ns, name string, replicas int32, image string, env ...corev1.EnvVar) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	env = append([]corev1.EnvVar{
		{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
		{Name: "NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
	}, env...)
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: name, Image: image, Env: env,
					Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 3000}},
				}}},
			},
		},
	}
}

func service(ns, name string, target intstr.IntOrString) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": name},
			Ports:    []corev1.ServicePort{{Name: "web", Port: 8080, TargetPort: target}},
		},
	}
}

func create(t *testing.T, c client.Client, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := c.Create(context.Background(), o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
}

// readyPods returns the Ready pods of app in ns, by name.
func readyPods(c client.Client, ns, app string) (map[string]corev1.Pod, error) {
	var list corev1.PodList
	if err := c.List(context.Background(), &list, client.InNamespace(ns), client.MatchingLabels{"app": app}); err != nil {
		return nil, err
	}
	out := map[string]corev1.Pod{}
	for _, p := range list.Items {
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
				out[p.Name] = p
			}
		}
	}
	return out, nil
}

// sliceEndpoints returns the ready "ip:port" of a Service's EndpointSlices.
func sliceEndpoints(c client.Client, ns, svc string) ([]string, error) {
	var list discoveryv1.EndpointSliceList
	if err := c.List(context.Background(), &list, client.InNamespace(ns), client.MatchingLabels{discoveryv1.LabelServiceName: svc}); err != nil {
		return nil, err
	}
	var out []string
	for _, s := range list.Items {
		for _, ep := range s.Endpoints {
			if ep.Conditions.Ready == nil || !*ep.Conditions.Ready {
				continue
			}
			for _, p := range s.Ports {
				out = append(out, net.JoinHostPort(ep.Addresses[0], fmt.Sprint(*p.Port)))
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

// echo is the part of echo-basic's JSON the tests read.
type echo struct {
	Namespace string `json:"namespace"`
	Pod       string `json:"pod"`
}

func get(client *http.Client, url string) (echo, error) {
	resp, err := client.Get(url)
	if err != nil {
		return echo{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return echo{}, err
	}
	var e echo
	if err := json.Unmarshal(body, &e); err != nil {
		return echo{}, fmt.Errorf("decoding %q: %w", body, err)
	}
	return e, nil
}

func TestDeploymentBecomesPodsAndEndpoints(t *testing.T) {
	s, r := startRunner(t)
	create(t, s,
		deployment("default", "echo", 2, "registry.k8s.io/gateway-api/echo-basic:v1.5.1"),
		service("default", "echo", intstr.FromString("http")),
	)
	var pods map[string]corev1.Pod
	wait(t).Eventually(func() (_ map[string]corev1.Pod, err error) {
		pods, err = readyPods(s, "default", "echo")
		return pods, err
	}).Should(gomega.HaveLen(2), "ready pods")
	var want []string
	for name, p := range pods {
		if !strings.HasPrefix(name, "echo-") {
			t.Errorf("pod name %q does not start with the deployment's name", name)
		}
		if len(p.OwnerReferences) != 1 || p.OwnerReferences[0].Kind != "Deployment" || p.OwnerReferences[0].Name != "echo" {
			t.Errorf("pod %s ownerReferences = %+v, want the Deployment", name, p.OwnerReferences)
		}
		if p.Status.Phase != corev1.PodRunning || !strings.HasPrefix(p.Status.PodIP, "127.2.") {
			t.Errorf("pod %s phase %s podIP %q, want Running on 127.2.x.y", name, p.Status.Phase, p.Status.PodIP)
		}
		want = append(want, net.JoinHostPort(p.Status.PodIP, "3000"))
		if r.Backend("default", name) == nil {
			t.Errorf("Backend(default, %s) = nil for a ready pod", name)
		}
	}
	slices.Sort(want)
	wait(t).Eventually(func() ([]string, error) {
		return sliceEndpoints(s, "default", "echo")
	}).Should(gomega.Equal(want), "endpoints of both pods (named targetPort resolved)")

	// Each pod answers on its own address with its own name, as echo-basic.
	for name, p := range pods {
		e, err := get(http.DefaultClient, "http://"+net.JoinHostPort(p.Status.PodIP, "3000")+"/")
		if err != nil {
			t.Fatal(err)
		}
		if e.Pod != name || e.Namespace != "default" {
			t.Errorf("pod %s echoed pod %q namespace %q", name, e.Pod, e.Namespace)
		}
	}

	wait(t).Eventually(func() error {
		var d appsv1.Deployment
		if err := s.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: "echo"}, &d); err != nil {
			return err
		}
		st := d.Status
		if st.Replicas != 2 || st.ReadyReplicas != 2 || st.AvailableReplicas != 2 || st.UpdatedReplicas != 2 || st.ObservedGeneration != d.Generation {
			return fmt.Errorf("status %+v", st)
		}
		return condition(d.Status.Conditions, appsv1.DeploymentAvailable, corev1.ConditionTrue, "")
	}).Should(gomega.Succeed(), "deployment status")
}

func condition(conds []appsv1.DeploymentCondition, typ appsv1.DeploymentConditionType, status corev1.ConditionStatus, reason string) error {
	for _, c := range conds {
		if c.Type == typ {
			if c.Status != status || (reason != "" && c.Reason != reason) {
				return fmt.Errorf("condition %s = %s (%s: %s), want %s %s", typ, c.Status, c.Reason, c.Message, status, reason)
			}
			return nil
		}
	}
	return fmt.Errorf("no %s condition in %+v", typ, conds)
}

func TestScaleUpdateDelete(t *testing.T) {
	s, _ := startRunner(t)
	ctx := context.Background()
	create(t, s,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "scale"}},
		deployment("scale", "web", 1, "ghcr.io/gatewitness/echo-backend:dev"),
		service("scale", "web", intstr.FromInt32(3000)),
	)
	countEndpoints := func(n int) func() error {
		return func() error {
			eps, err := sliceEndpoints(s, "scale", "web")
			if err == nil && len(eps) != n {
				err = fmt.Errorf("endpoints %v, want %d", eps, n)
			}
			return err
		}
	}
	wait(t).Eventually(countEndpoints(1)).Should(gomega.Succeed(), "one endpoint")

	scale := func(n int32) {
		t.Helper()
		var d appsv1.Deployment
		if err := s.Get(ctx, client.ObjectKey{Namespace: "scale", Name: "web"}, &d); err != nil {
			t.Fatal(err)
		}
		d.Spec.Replicas = &n
		if err := s.Update(ctx, &d); err != nil {
			t.Fatal(err)
		}
	}
	scale(3)
	wait(t).Eventually(countEndpoints(3)).Should(gomega.Succeed(), "three endpoints after scaling up")
	before, err := readyPods(s, "scale", "web")
	if err != nil {
		t.Fatal(err)
	}
	scale(1)
	wait(t).Eventually(countEndpoints(1)).Should(gomega.Succeed(), "one endpoint after scaling down")
	var gone []corev1.Pod
	wait(t).Eventually(func() error {
		now, err := readyPods(s, "scale", "web")
		if err != nil {
			return err
		}
		gone = gone[:0]
		for name, p := range before {
			if _, ok := now[name]; !ok {
				gone = append(gone, p)
			}
		}
		if len(now) != 1 || len(gone) != 2 {
			return fmt.Errorf("%d pods left, %d gone", len(now), len(gone))
		}
		return nil
	}).Should(gomega.Succeed(), "two pods deleted")
	// The stopped replicas' sockets are closed.
	for _, p := range gone {
		addr := net.JoinHostPort(p.Status.PodIP, "3000")
		if c, err := net.DialTimeout("tcp", addr, 5*time.Second); err == nil {
			c.Close()
			t.Errorf("pod %s was deleted but %s still accepts connections", p.Name, addr)
		}
	}

	// A template change rolls out a new pod with a new name.
	old, err := readyPods(s, "scale", "web")
	if err != nil {
		t.Fatal(err)
	}
	var d appsv1.Deployment
	if err := s.Get(ctx, client.ObjectKey{Namespace: "scale", Name: "web"}, &d); err != nil {
		t.Fatal(err)
	}
	d.Spec.Template.Spec.Containers[0].Env = append(d.Spec.Template.Spec.Containers[0].Env, corev1.EnvVar{Name: "INGRESS_NAME", Value: "v2"})
	if err := s.Update(ctx, &d); err != nil {
		t.Fatal(err)
	}
	wait(t).Eventually(func() error {
		now, err := readyPods(s, "scale", "web")
		if err != nil {
			return err
		}
		if len(now) != 1 {
			return fmt.Errorf("%d ready pods", len(now))
		}
		for name := range now {
			if _, ok := old[name]; ok {
				return fmt.Errorf("pod %s is still the old one", name)
			}
		}
		return countEndpoints(1)()
	}).Should(gomega.Succeed(), "rolled out")

	// A Service update (new targetPort) is followed.
	var svc corev1.Service
	if err := s.Get(ctx, client.ObjectKey{Namespace: "scale", Name: "web"}, &svc); err != nil {
		t.Fatal(err)
	}
	svc.Spec.Ports[0].TargetPort = intstr.FromInt32(3001)
	if err := s.Update(ctx, &svc); err != nil {
		t.Fatal(err)
	}
	wait(t).Eventually(func() error {
		eps, err := sliceEndpoints(s, "scale", "web")
		if err == nil && (len(eps) != 1 || !strings.HasSuffix(eps[0], ":3001")) {
			err = fmt.Errorf("endpoints %v, want one on port 3001", eps)
		}
		return err
	}).Should(gomega.Succeed(), "endpoints on the new target port")

	// Deleting the namespace stops everything in it.
	last, err := readyPods(s, "scale", "web")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "scale"}}); err != nil {
		t.Fatal(err)
	}
	for _, p := range last {
		addr := net.JoinHostPort(p.Status.PodIP, "3000")
		wait(t).Eventually(func() error {
			c, err := net.DialTimeout("tcp", addr, 5*time.Second)
			if err != nil {
				return nil
			}
			c.Close()
			return fmt.Errorf("%s still accepts connections", addr)
		}).Should(gomega.Succeed(), "backend of a deleted namespace stopped")
	}
	wait(t).Eventually(func() error {
		err := s.Get(ctx, client.ObjectKey{Name: "scale"}, &corev1.Namespace{})
		if err == nil {
			return errors.New("namespace still there")
		}
		return client.IgnoreNotFound(err)
	}).Should(gomega.Succeed(), "namespace gone")
}

func TestUnsupportedDeployment(t *testing.T) {
	s, _ := startRunner(t)
	ctx := context.Background()
	bad := deployment("default", "nginx", 1, "docker.io/library/nginx:1.27")
	sidecar := deployment("default", "meshed", 1, "registry.k8s.io/gateway-api/echo-basic:v1.5.1")
	sidecar.Spec.Template.Spec.Containers = append(sidecar.Spec.Template.Spec.Containers,
		corev1.Container{Name: "istio-proxy", Image: "docker.io/istio/proxyv2:1.22.0"})
	hostNet := deployment("default", "hostnet", 1, "registry.k8s.io/gateway-api/echo-basic:v1.5.1")
	hostNet.Spec.Template.Spec.HostNetwork = true
	create(t, s, bad, sidecar, hostNet)

	for _, tc := range []struct{ name, field string }{
		{"nginx", `spec.template.spec.containers[0].image: "docker.io/library/nginx:1.27": accepted: an image whose repository ends in /echo-basic or /echo-backend`},
		{"hostnet", "spec.template.spec.hostNetwork: true: accepted: false or unset"},
	} {
		wait(t).Eventually(func() error {
			var d appsv1.Deployment
			if err := s.Get(ctx, client.ObjectKey{Namespace: "default", Name: tc.name}, &d); err != nil {
				return err
			}
			if err := condition(d.Status.Conditions, appsv1.DeploymentAvailable, corev1.ConditionFalse, pods.ReasonUnsupported); err != nil {
				return err
			}
			for _, c := range d.Status.Conditions {
				if c.Type == appsv1.DeploymentAvailable && !strings.Contains(c.Message, tc.field) {
					return fmt.Errorf("message %q does not name %q", c.Message, tc.field)
				}
			}
			return nil
		}).Should(gomega.Succeed(), tc.name+" reported unsupported")
	}
	// The known sidecar does not stop its pod from running.
	wait(t).Eventually(func() error {
		p, err := readyPods(s, "default", "meshed")
		if err == nil && len(p) != 1 {
			err = fmt.Errorf("%d ready pods", len(p))
		}
		return err
	}).Should(gomega.Succeed(), "meshed pod ready")
	for _, app := range []string{"nginx", "hostnet"} {
		var list corev1.PodList
		if err := s.List(ctx, &list, client.InNamespace("default"), client.MatchingLabels{"app": app}); err != nil {
			t.Fatal(err)
		}
		if len(list.Items) != 0 {
			t.Errorf("unsupported deployment %s got %d pods", app, len(list.Items))
		}
	}
}

// TestSecretVolumeTLS mounts a certificate from a Secret created after the
// Deployment, as upstream's tls-backend does: the pod waits, then serves
// HTTPS on 8443 with that certificate.
func TestSecretVolumeTLS(t *testing.T) {
	s, _ := startRunner(t)
	ctx := context.Background()
	d := deployment("default", "tls-backend", 1, "registry.k8s.io/gateway-api/echo-basic:v1.5.1",
		corev1.EnvVar{Name: "TLS_SERVER_CERT", Value: "/etc/secret-volume/crt"},
		corev1.EnvVar{Name: "TLS_SERVER_PRIVKEY", Value: "/etc/secret-volume/key"},
	)
	d.Spec.Template.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "secret-volume", MountPath: "/etc/secret-volume"}}
	d.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "secret-volume", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
		SecretName: "tls-cert",
		Items:      []corev1.KeyToPath{{Key: "tls.crt", Path: "crt"}, {Key: "tls.key", Path: "key"}},
	}}}}
	create(t, s, d)

	wait(t).Eventually(func() error {
		var list corev1.PodList
		if err := s.List(ctx, &list, client.MatchingLabels{"app": "tls-backend"}); err != nil {
			return err
		}
		if len(list.Items) != 1 {
			return fmt.Errorf("%d pods", len(list.Items))
		}
		p := list.Items[0]
		if len(p.Status.ContainerStatuses) != 1 || p.Status.ContainerStatuses[0].State.Waiting == nil ||
			!strings.Contains(p.Status.ContainerStatuses[0].State.Waiting.Message, `secret "tls-cert" not found`) {
			return fmt.Errorf("container statuses %+v", p.Status.ContainerStatuses)
		}
		return nil
	}).Should(gomega.Succeed(), "pod waiting for its secret")

	secret := kubernetes.MustCreateSelfSignedCertSecret(t, "default", "tls-cert", []string{"abc.example.com"})
	create(t, s, secret)
	var pod corev1.Pod
	wait(t).Eventually(func() error {
		p, err := readyPods(s, "default", "tls-backend")
		if err == nil && len(p) != 1 {
			err = fmt.Errorf("%d ready pods", len(p))
		}
		for _, v := range p {
			pod = v
		}
		return err
	}).Should(gomega.Succeed(), "pod ready")
	conn, err := tls.Dial("tcp", net.JoinHostPort(pod.Status.PodIP, "8443"), &tls.Config{InsecureSkipVerify: true, ServerName: "abc.example.com"})
	if err != nil {
		t.Fatalf("HTTPS port of the pod: %v", err)
	}
	defer conn.Close()
	cert := conn.ConnectionState().PeerCertificates[0]
	if !slices.Contains(cert.DNSNames, "abc.example.com") {
		t.Errorf("served certificate names %v, want the Secret's abc.example.com", cert.DNSNames)
	}
}

// TestDeletedPodIsReplaced deletes a running Pod as a user would: its
// backend stops and the Deployment gets a new Pod.
func TestDeletedPodIsReplaced(t *testing.T) {
	s, _ := startRunner(t)
	ctx := context.Background()
	create(t, s, deployment("default", "echo", 1, "registry.k8s.io/gateway-api/echo-basic:v1.5.1"))
	var old corev1.Pod
	wait(t).Eventually(func() error {
		p, err := readyPods(s, "default", "echo")
		if err == nil && len(p) != 1 {
			err = fmt.Errorf("%d ready pods", len(p))
		}
		for _, v := range p {
			old = v
		}
		return err
	}).Should(gomega.Succeed(), "one ready pod")
	if err := s.Delete(ctx, &old); err != nil {
		t.Fatal(err)
	}
	wait(t).Eventually(func() error {
		p, err := readyPods(s, "default", "echo")
		if err != nil {
			return err
		}
		if _, still := p[old.Name]; still || len(p) != 1 {
			return fmt.Errorf("ready pods %d, old one still there: %v", len(p), still)
		}
		return nil
	}).Should(gomega.Succeed(), "a new pod")
	addr := net.JoinHostPort(old.Status.PodIP, "3000")
	wait(t).Eventually(func() error {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			return nil
		}
		c.Close()
		return fmt.Errorf("%s still accepts connections", addr)
	}).Should(gomega.Succeed(), "the deleted pod's backend stopped")
}
