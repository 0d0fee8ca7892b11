package localcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/gatecheck/gatecheck/localcp"
)

// binDir is where make localcp-build puts the binaries, or
// $GATECHECK_LOCALCP_BIN.
func binDir(t *testing.T) string {
	if d := os.Getenv("GATECHECK_LOCALCP_BIN"); d != "" {
		return d
	}
	d, err := filepath.Abs("../.cache/localcp/bin")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// startControlPlane starts a control plane, or skips the test when the
// binaries are not built or the test is not root.
func startControlPlane(t *testing.T) *localcp.ControlPlane {
	t.Helper()
	dir := binDir(t)
	if m := localcp.MissingBinaries(dir); len(m) > 0 {
		t.Skipf("the local control plane's binaries are not built (%s lacks %v): run make localcp-build (about 20 minutes cold)", dir, m)
	}
	echo := filepath.Join(dir, "echo-backend")
	if _, err := os.Stat(echo); err != nil {
		t.Skipf("no echo-backend at %s: run make localcp-build", echo)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var log io.Writer
	if testing.Verbose() {
		log = os.Stderr
	}
	cp, err := localcp.Start(ctx, localcp.Options{BinDir: dir, EchoBackend: echo, Log: log})
	if errors.Is(err, localcp.ErrNeedsRoot) {
		t.Skipf("%v; run the test as root", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cp.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return cp
}

// TestDeploymentServesAtPodIP checks the whole chain a conformance test
// relies on: a Deployment of the echo image gets a Pod (controller
// manager), bound to the kwok Node (the binder), running and ready with an
// IP (kwok), served by an echo-backend at that IP (the Pod runner), and
// listed in the Service's EndpointSlice (controller manager).
func TestDeploymentServesAtPodIP(t *testing.T) {
	cp := startControlPlane(t)
	cs, err := kubernetes.NewForConfig(cp.RestConfig())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	ns := "localcp-test"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"app": "echo"}
	replicas := int32(2)
	field := func(p string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: p}}
	}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "echo", Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name:  "echo",
					Image: "gcr.io/k8s-staging-gateway-api/echo-basic:v1",
					Env: []corev1.EnvVar{
						{Name: "POD_NAME", ValueFrom: field("metadata.name")},
						{Name: "NAMESPACE", ValueFrom: field("metadata.namespace")},
					},
					Ports: []corev1.ContainerPort{{ContainerPort: 3000}},
				}}},
			},
		},
	}
	if _, err := cs.AppsV1().Deployments(ns).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "echo", Namespace: ns},
		Spec:       corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{{Port: 8080, TargetPort: intstr.FromInt32(3000)}}},
	}
	if _, err := cs.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// Poll the EndpointSlices until both Pods are ready endpoints.
	var addrs []string
	for {
		addrs = addrs[:0]
		slices, err := cs.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=echo"})
		if err == nil {
			for _, s := range slices.Items {
				for _, e := range s.Endpoints {
					if e.Conditions.Ready != nil && *e.Conditions.Ready {
						addrs = append(addrs, e.Addresses...)
					}
				}
			}
		}
		if len(addrs) == int(replicas) {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("EndpointSlices of echo have ready addresses %v (last error %v); want %d within the deadline", addrs, err, replicas)
		case <-time.After(200 * time.Millisecond):
		}
	}

	// Each address answers as the Pod it belongs to (polled: kwok may
	// report the Pod ready a moment before its process listens).
	client := &http.Client{Timeout: 5 * time.Second}
	pods := map[string]bool{}
	for _, a := range addrs {
		url := fmt.Sprintf("http://%s:3000/localcp", a)
		for {
			var echo struct {
				Pod       string `json:"pod"`
				Namespace string `json:"namespace"`
			}
			resp, err := client.Get(url)
			if err == nil {
				err = json.NewDecoder(resp.Body).Decode(&echo)
				resp.Body.Close()
			}
			if err == nil {
				if echo.Namespace != ns || echo.Pod == "" {
					t.Errorf("%s answered pod %q namespace %q; want a pod of %s", url, echo.Pod, echo.Namespace, ns)
				}
				pods[echo.Pod] = true
				break
			}
			select {
			case <-ctx.Done():
				t.Fatalf("GET %s: %v", url, err)
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	if len(pods) != int(replicas) {
		t.Errorf("answers came from pods %v; want %d distinct", pods, replicas)
	}
}
