package localcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatewitness/gatewitness/localcp"
)

// binDir is where make localcp-build puts the binaries, or
// $GATEWITNESS_LOCALCP_BIN.
func binDir(t *testing.T) string {
	if d := os.Getenv("GATEWITNESS_LOCALCP_BIN"); d != "" {
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
		netns := cp.PodNetNS()
		if err := cp.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if out, err := exec.Command("ip", "netns", "list").CombinedOutput(); err != nil || strings.Contains(string(out), netns) {
			t.Errorf("after Close, ip netns list (%v) says %q; want %s gone", err, out, netns)
		}
		if out, err := exec.Command("ip", "route", "show", localcp.DefaultPodCIDR).CombinedOutput(); err != nil || len(bytes.TrimSpace(out)) > 0 {
			t.Errorf("after Close, ip route show %s (%v) says %q; want no route", localcp.DefaultPodCIDR, err, out)
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

	// The Pod IPs, which answered above, are in the Pods' network
	// namespace, not on the host.
	hostAddrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hostAddrs {
		for _, a := range addrs {
			if ip, _, _ := net.ParseCIDR(h.String()); ip.String() == a {
				t.Errorf("Pod IP %s is an address of the host (%s); want it only in the network namespace %s", a, h, cp.PodNetNS())
			}
		}
	}
	out, err := exec.Command("ip", "-n", cp.PodNetNS(), "-o", "addr", "show").CombinedOutput()
	if err != nil {
		t.Fatalf("ip -n %s addr show: %v: %s", cp.PodNetNS(), err, out)
	}
	for _, a := range addrs {
		if !strings.Contains(string(out), " "+a+"/32 ") {
			t.Errorf("ip -n %s addr show lacks Pod IP %s:\n%s", cp.PodNetNS(), a, out)
		}
	}
}

// checkVersion checks that the API server and the controller manager
// report the release they were built from, as kubectl and implementations
// that check the server's version expect (a plain go build reports
// v0.0.0-master+$Format:%H$, which neither can parse).
func checkVersion(t *testing.T, cp *localcp.ControlPlane) {
	cs, err := kubernetes.NewForConfig(cp.RestConfig())
	if err != nil {
		t.Fatal(err)
	}
	v, err := cs.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("kube-apiserver /version: %s (major %q, minor %q, %s)", v.GitVersion, v.Major, v.Minor, v.Platform)
	if v.GitVersion != kubernetesVersion || v.Major != "1" || v.Minor != "36" {
		t.Errorf("kube-apiserver reports %s (major %q, minor %q); want %s (1, 36): rebuild with make localcp-build", v.GitVersion, v.Major, v.Minor, kubernetesVersion)
	}
	out, err := exec.Command(filepath.Join(binDir(t), "kube-controller-manager"), "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("kube-controller-manager --version: %v: %s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != "Kubernetes "+kubernetesVersion {
		t.Errorf("kube-controller-manager --version printed %q; want %q", got, "Kubernetes "+kubernetesVersion)
	}
}

// envFakeImplementation, set in the environment of this test binary, makes
// it a fake Gateway implementation (see fakeImplementation) instead of
// running the tests.
const envFakeImplementation = "LOCALCP_TEST_FAKE_IMPLEMENTATION"

func TestMain(m *testing.M) {
	if mode := os.Getenv(envFakeImplementation); mode != "" {
		os.Exit(fakeImplementation(mode))
	}
	os.Exit(m.Run())
}

// fakeImplementation is an implementation under test as
// StartImplementation runs it: it reads the environment the harness gives
// it and, depending on mode, accepts its GatewayClass and runs until
// SIGINT ("accept"), never accepts it ("ignore"), or fails at once
// ("exit").
func fakeImplementation(mode string) int {
	fmt.Printf("fake implementation %s: class %s, controller %s, addresses %s\n",
		mode, os.Getenv(localcp.EnvGatewayClass), os.Getenv(localcp.EnvControllerName), os.Getenv(localcp.EnvGatewayAddresses))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	switch mode {
	case "exit":
		fmt.Println("fake implementation: cannot start: no licence")
		return 3
	case "ignore":
		<-ctx.Done()
		return 0
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG"))
	if err != nil {
		fmt.Println(err)
		return 1
	}
	s := runtime.NewScheme()
	if err := gwv1.Install(s); err != nil {
		fmt.Println(err)
		return 1
	}
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		fmt.Println(err)
		return 1
	}
	var gc gwv1.GatewayClass
	if err := c.Get(ctx, client.ObjectKey{Name: os.Getenv(localcp.EnvGatewayClass)}, &gc); err != nil {
		fmt.Println(err)
		return 1
	}
	if string(gc.Spec.ControllerName) != os.Getenv(localcp.EnvControllerName) {
		fmt.Printf("GatewayClass %s is for %s, not me\n", gc.Name, gc.Spec.ControllerName)
		return 1
	}
	gc.Status.Conditions = []metav1.Condition{{
		Type: string(gwv1.GatewayClassConditionStatusAccepted), Status: metav1.ConditionTrue, ObservedGeneration: gc.Generation,
		Reason: string(gwv1.GatewayClassReasonAccepted), Message: "fake", LastTransitionTime: metav1.Now(),
	}}
	gc.Status.SupportedFeatures = []gwv1.SupportedFeature{{Name: "Gateway"}, {Name: "HTTPRoute"}}
	if err := c.Status().Update(ctx, &gc); err != nil {
		fmt.Println(err)
		return 1
	}
	<-ctx.Done()
	fmt.Println("fake implementation: stopped")
	return 0
}

// kubernetesVersion is the version hack/build.sh builds (KUBERNETES_VERSION)
// and stamps into kube-apiserver and kube-controller-manager.
const kubernetesVersion = "v1.36.3"

// TestImplementationOnTheHost checks what an implementation run on the
// host meets (one control plane for all, to keep the test short): the
// server version it may check, and the harness starting it. This test
// binary plays the implementation (fakeImplementation): one that accepts
// its class and stops at SIGINT, one that exits at once, and one that
// never accepts its class.
func TestImplementationOnTheHost(t *testing.T) {
	cp := startControlPlane(t)
	t.Run("version", func(t *testing.T) { checkVersion(t, cp) })
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	command := func(mode string) string { return fmt.Sprintf("%s=%s exec '%s'", envFakeImplementation, mode, self) }
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	t.Run("accepts", func(t *testing.T) {
		var out safeBuffer
		impl, err := cp.StartImplementation(ctx, localcp.ImplementationOptions{
			Command: command("accept"), GatewayClass: "fake-accept", ControllerName: "example.com/fake", Output: &out,
		})
		if err != nil {
			t.Fatal(err)
		}
		if want := []gwv1.FeatureName{"Gateway", "HTTPRoute"}; !slices.Equal(impl.SupportedFeatures, want) {
			t.Errorf("SupportedFeatures %v; want %v, from the class's status", impl.SupportedFeatures, want)
		}
		if want := "class fake-accept, controller example.com/fake, addresses " + localcp.DefaultImplementationAddresses; !strings.Contains(out.String(), want) {
			t.Errorf("the implementation printed %q; want its environment to give %q", out.String(), want)
		}
		if err := impl.Stop(); err != nil {
			t.Errorf("Stop: %v", err)
		}
		select {
		case <-impl.Exited():
		default:
			t.Error("Stop returned before the implementation exited")
		}
		if !strings.Contains(out.String(), "fake implementation: stopped") {
			t.Errorf("the implementation printed %q; want it to have stopped on SIGINT", out.String())
		}
	})

	t.Run("exits", func(t *testing.T) {
		_, err := cp.StartImplementation(ctx, localcp.ImplementationOptions{
			Command: command("exit"), GatewayClass: "fake-exit", ControllerName: "example.com/fake",
		})
		if err == nil || !strings.Contains(err.Error(), "exit status 3") || !strings.Contains(err.Error(), "no licence") {
			t.Errorf("err = %v; want one with the exit status and the end of the output", err)
		}
	})

	t.Run("never accepts", func(t *testing.T) {
		start := time.Now()
		_, err := cp.StartImplementation(ctx, localcp.ImplementationOptions{
			Command: command("ignore"), GatewayClass: "fake-ignore", ControllerName: "example.com/fake", AcceptTimeout: 2 * time.Second,
		})
		if err == nil || !strings.Contains(err.Error(), `GatewayClass "fake-ignore" not accepted within 2s (Accepted=Unknown, reason Pending: Waiting for controller): is the implementation watching for controllerName "example.com/fake"?`) {
			t.Errorf("err = %v; want one saying the class was not accepted in time", err)
		}
		if took := time.Since(start); took > 2*time.Second+15*time.Second {
			t.Errorf("StartImplementation took %v with AcceptTimeout 2s; want it bounded", took)
		}
	})
}

// safeBuffer is a bytes.Buffer for one writer and one reader.
type safeBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *safeBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *safeBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
