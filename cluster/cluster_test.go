package cluster_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net"
	"net/url"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"
	"github.com/onsi/gomega"
	"golang.org/x/net/websocket"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/gateway-api/conformance"
	"sigs.k8s.io/gateway-api/conformance/utils/config"
	grpcutil "sigs.k8s.io/gateway-api/conformance/utils/grpc"
	httputil "sigs.k8s.io/gateway-api/conformance/utils/http"
	"sigs.k8s.io/gateway-api/conformance/utils/kubernetes"
	"sigs.k8s.io/gateway-api/conformance/utils/roundtripper"

	"github.com/gatewitness/gatewitness/cluster"
	"github.com/gatewitness/gatewitness/cluster/pods"
	"github.com/gatewitness/gatewitness/cluster/store"
	"github.com/gatewitness/gatewitness/gateway/ir"
)

const (
	infraNS      = "gateway-conformance-infra"
	appNS        = "gateway-conformance-app-backend"
	webNS        = "gateway-conformance-web-backend"
	startTimeout = 2 * time.Minute // the machine is shared and loaded
	waitTimeout  = 2 * time.Minute
)

// startCluster starts a cluster that is closed when the test ends.
func startCluster(t *testing.T, opts cluster.Options) *cluster.Cluster {
	t.Helper()
	return startClusterWith(t, opts, cluster.Gateway{})
}

// startClusterWith is startCluster with the reference gateway built as gw
// says.
func startClusterWith(t *testing.T, opts cluster.Options, gw cluster.Gateway) *cluster.Cluster {
	t.Helper()
	if opts.Logger.GetSink() == nil {
		opts.Logger = testr.NewWithOptions(t, testr.Options{Verbosity: 0})
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	c, err := cluster.StartWith(ctx, opts, gw)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return c
}

func applier() kubernetes.Applier {
	return kubernetes.Applier{
		GatewayClass:   cluster.DefaultGatewayClassName,
		ControllerName: string(cluster.DefaultControllerName),
		ManifestFS:     []fs.FS{conformance.Manifests},
	}
}

// setUpBase applies upstream's base manifests and the Secrets the suite's
// Setup creates for them, and waits as the suite does until the Gateways
// are programmed and every Pod is ready.
func setUpBase(t *testing.T, c *cluster.Cluster, timeouts config.TimeoutConfig) {
	t.Helper()
	a := applier()
	a.MustApplyWithCleanup(t, c.Client(), timeouts, "base/manifests.yaml", false)
	_, ca, caKey := kubernetes.MustCreateCACertConfigMap(t, infraNS, "tls-checks-ca-certificate")
	a.MustApplyObjectsWithCleanup(t, c.Client(), timeouts, []client.Object{
		kubernetes.MustCreateSelfSignedCertSecret(t, infraNS, "tls-validity-checks-certificate", []string{"*", "*.org", "*.wildcard.org"}),
		kubernetes.MustCreateCASignedCertSecret(t, infraNS, "tls-checks-certificate", []string{"abc.example.com"}, ca, caKey),
		kubernetes.MustCreateCASignedCertSecret(t, infraNS, "tls-passthrough-checks-certificate", []string{"abc.example.com"}, ca, caKey),
		kubernetes.MustCreateCASignedCertSecret(t, appNS, "tls-passthrough-checks-certificate", []string{"abc.example.com"}, ca, caKey),
	}, false)
	kubernetes.NamespacesMustBeReady(t, c.Client(), timeouts, []string{infraNS, appNS, webNS})
}

// TestUpstreamBase runs the upstream base manifests on a cluster and sends
// traffic through the reference gateway the way upstream's tests do.
func TestUpstreamBase(t *testing.T) {
	if testing.Short() {
		t.Skip("starts every backend of the upstream base manifests")
	}
	timeouts := config.DefaultTimeoutConfig()
	c := startCluster(t, cluster.Options{})
	setUpBase(t, c, timeouts)
	a := applier()
	gwNN := types.NamespacedName{Namespace: infraNS, Name: "same-namespace"}

	t.Run("HTTPRoute", func(t *testing.T) {
		a.MustApplyWithCleanup(t, c.Client(), timeouts, "tests/httproute-simple-same-namespace.yaml", true)
		routeNN := types.NamespacedName{Namespace: infraNS, Name: "gateway-conformance-infra-test"}
		gwAddr := kubernetes.GatewayAndHTTPRoutesMustBeAccepted(t, c.Client(), timeouts, string(cluster.DefaultControllerName), kubernetes.NewGatewayRef(gwNN), routeNN)
		host, _, _ := net.SplitHostPort(gwAddr)
		if !strings.HasPrefix(host, "127.1.") {
			t.Errorf("gateway address %s, want one of %s", gwAddr, cluster.GatewayPrefix)
		}
		rt := c.RoundTripper(timeouts, false)
		httputil.MakeRequestAndExpectEventuallyConsistentResponse(t, rt, timeouts, gwAddr, httputil.ExpectedResponse{
			Request:   httputil.Request{Path: "/"},
			Response:  httputil.Response{StatusCode: 200},
			Backend:   "infra-backend-v1",
			Namespace: infraNS,
		})

		// The echo names a Pod of infra-backend-v1 that the runner serves.
		u := url.URL{Scheme: "http", Host: gwAddr, Path: "/"}
		creq, cres, err := rt.CaptureRoundTrip(roundtripper.Request{T: t, URL: u, Protocol: "HTTP"})
		if err != nil {
			t.Fatal(err)
		}
		if cres.StatusCode != 200 {
			t.Fatalf("status %d", cres.StatusCode)
		}
		var list corev1.PodList
		if err := c.Client().List(context.Background(), &list, client.InNamespace(infraNS), client.MatchingLabels{"app": "infra-backend-v1"}); err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, p := range list.Items {
			names = append(names, p.Name)
		}
		if !slices.Contains(names, creq.Pod) {
			t.Errorf("echo from pod %q, want one of infra-backend-v1's %v", creq.Pod, names)
		}
		if c.Pods().Backend(infraNS, creq.Pod) == nil {
			t.Errorf("pod %s answered but the runner has no backend for it", creq.Pod)
		}

		// A port of the Gateway with no listener is refused.
		if _, err := c.DialContext(context.Background(), "tcp", net.JoinHostPort(host, "81")); !errors.Is(err, syscall.ECONNREFUSED) {
			t.Errorf("dialing port 81 of the gateway: %v, want a refused connection", err)
		}
	})

	t.Run("H2CPriorKnowledge", func(t *testing.T) {
		a.MustApplyWithCleanup(t, c.Client(), timeouts, "tests/httproute-backend-protocol-h2c.yaml", true)
		routeNN := types.NamespacedName{Namespace: infraNS, Name: "backend-protocol-h2c"}
		gwAddr := kubernetes.GatewayAndHTTPRoutesMustBeAccepted(t, c.Client(), timeouts, string(cluster.DefaultControllerName), kubernetes.NewGatewayRef(gwNN), routeNN)
		httputil.MakeRequestAndExpectEventuallyConsistentResponse(t, c.RoundTripper(timeouts, false), timeouts, gwAddr, httputil.ExpectedResponse{
			Request:   httputil.Request{Path: "/", Protocol: roundtripper.H2CPriorKnowledgeProtocol},
			Response:  httputil.Response{StatusCode: 200},
			Backend:   "infra-backend-v1",
			Namespace: infraNS,
		})
	})

	t.Run("GRPCRoute", func(t *testing.T) {
		a.MustApplyWithCleanup(t, c.Client(), timeouts, "tests/grpcroute-exact-method-matching.yaml", true)
		routeNN := types.NamespacedName{Namespace: infraNS, Name: "exact-matching"}
		gwAddr := kubernetes.GatewayAndRoutesMustBeAccepted(t, c.Client(), timeouts, string(cluster.DefaultControllerName), kubernetes.NewGatewayRef(gwNN), &gwv1.GRPCRoute{}, true, routeNN)
		gc := c.GRPCClient()
		defer gc.Close()
		for _, tc := range []grpcutil.ExpectedResponse{
			{EchoRequest: newOf(grpcutil.ExpectedResponse{}.EchoRequest), Backend: "grpc-infra-backend-v1", Namespace: infraNS},
			{EchoTwoRequest: newOf(grpcutil.ExpectedResponse{}.EchoTwoRequest), Backend: "grpc-infra-backend-v2", Namespace: infraNS},
			{EchoRequest: newOf(grpcutil.ExpectedResponse{}.EchoRequest), Backend: "grpc-infra-backend-v1", Namespace: infraNS,
				RequestMetadata: &grpcutil.RequestMetadata{Authority: "other.example.com", Metadata: map[string]string{"x-test": "1"}}},
		} {
			grpcutil.MakeRequestAndExpectEventuallyConsistentResponse(t, gc, timeouts, gwAddr, tc)
		}
		// The :authority of a request reaches the backend.
		resp, err := gc.SendRPC(t, gwAddr, grpcutil.ExpectedResponse{EchoRequest: newOf(grpcutil.ExpectedResponse{}.EchoRequest),
			RequestMetadata: &grpcutil.RequestMetadata{Authority: "authority.example.com"}}, 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.Response.GetAssertions().GetAuthority(); got != "authority.example.com" {
			t.Errorf("backend saw authority %q, want authority.example.com", got)
		}
	})

	t.Run("WebSocket", func(t *testing.T) {
		a.MustApplyWithCleanup(t, c.Client(), timeouts, "tests/httproute-backend-protocol-websocket.yaml", true)
		routeNN := types.NamespacedName{Namespace: infraNS, Name: "backend-protocol-ws"}
		gwAddr := kubernetes.GatewayAndHTTPRoutesMustBeAccepted(t, c.Client(), timeouts, string(cluster.DefaultControllerName), kubernetes.NewGatewayRef(gwNN), routeNN)
		d := c.WebSocketDialer()
		awaitConvergence(t, timeouts, func(time.Duration) bool {
			ws, err := d.Dial("ws://"+gwAddr+"/ws", "", "ws://gateway/test")
			if err != nil {
				t.Logf("dial: %v", err)
				return false
			}
			defer ws.Close()
			want := []byte{1, 2, 3, 4}
			var got []byte
			if err := websocket.Message.Send(ws, want); err != nil {
				t.Logf("send: %v", err)
				return false
			}
			if err := websocket.Message.Receive(ws, &got); err != nil {
				t.Logf("receive: %v", err)
				return false
			}
			return bytes.Equal(got, want)
		})
	})
}

// TestScaleFollowsEndpointSlices scales a Deployment of the cluster and
// watches the EndpointSlices and the data plane's backends follow.
func TestScaleFollowsEndpointSlices(t *testing.T) {
	c := startCluster(t, cluster.Options{})
	ctx := context.Background()
	ns := "scale"
	create(t, c.Client(), namespace(ns), echoDeployment(ns, "web", 1, "ghcr.io/gatewitness/echo-backend:dev"), echoService(ns, "web"))
	for _, n := range []int32{3, 1, 2} {
		var d appsv1.Deployment
		// The pod runner writes the Deployment's status meanwhile, which
		// changes its resourceVersion: read again and retry on a conflict,
		// as a client of an API server does.
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := c.Client().Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, &d); err != nil {
				return err
			}
			d.Spec.Replicas = &n
			return c.Client().Update(ctx, &d)
		})
		if err != nil {
			t.Fatalf("scaling to %d: %v", n, err)
		}
		wait(t).Eventually(func() error {
			var list discoveryv1.EndpointSliceList
			if err := c.Client().List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{discoveryv1.LabelServiceName: "web"}); err != nil {
				return err
			}
			ready := 0
			for _, s := range list.Items {
				for _, ep := range s.Endpoints {
					if ep.Conditions.Ready != nil && *ep.Conditions.Ready {
						ready++
					}
				}
			}
			if ready != int(n) {
				return fmt.Errorf("%d ready endpoints", ready)
			}
			if err := c.Client().Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, &d); err != nil {
				return err
			}
			if d.Status.ReadyReplicas != n || d.Status.Replicas != n {
				return fmt.Errorf("deployment status %+v", d.Status)
			}
			return nil
		}).Should(gomega.Succeed(), fmt.Sprintf("%d ready endpoints", n))
	}
}

// TestUnsupportedImage shows the error a Deployment the runner cannot run
// gets: a condition naming the field and the accepted form.
func TestUnsupportedImage(t *testing.T) {
	c := startCluster(t, cluster.Options{})
	ctx := context.Background()
	create(t, c.Client(), echoDeployment("default", "nginx", 1, "nginx:1.27"))
	wait(t).Eventually(func() error {
		var d appsv1.Deployment
		if err := c.Client().Get(ctx, client.ObjectKey{Namespace: "default", Name: "nginx"}, &d); err != nil {
			return err
		}
		for _, cond := range d.Status.Conditions {
			if cond.Type != appsv1.DeploymentAvailable {
				continue
			}
			if cond.Status != corev1.ConditionFalse || cond.Reason != pods.ReasonUnsupported {
				return fmt.Errorf("Available = %s (%s)", cond.Status, cond.Reason)
			}
			want := `spec.template.spec.containers[0].image: "nginx:1.27": accepted: an image whose repository ends in /echo-basic or /echo-backend`
			if !strings.Contains(cond.Message, want) {
				return fmt.Errorf("message %q, want it to contain %q", cond.Message, want)
			}
			return nil
		}
		return errors.New("no Available condition yet")
	}).Should(gomega.Succeed(), "Available=False")
}

// TestCloseLeavesNoGoroutines starts a cluster, serves a request through
// it, closes it and polls until the goroutine count is back to where it was.
func TestCloseLeavesNoGoroutines(t *testing.T) {
	// Process-wide caches (the compiled CRDs) are built once; warm them so
	// they are not counted.
	if _, err := store.New(store.Options{}); err != nil {
		t.Fatal(err)
	}
	before := runtime.NumGoroutine()

	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	c, err := cluster.Start(ctx, cluster.Options{Logger: testr.New(t)})
	if err != nil {
		t.Fatal(err)
	}
	timeouts := config.DefaultTimeoutConfig()
	gwAddr := smallSetup(t, c, "leak")
	httputil.MakeRequestAndExpectEventuallyConsistentResponse(t, c.RoundTripper(timeouts, false), timeouts, gwAddr, httputil.ExpectedResponse{
		Request: httputil.Request{Path: "/"}, Response: httputil.Response{StatusCode: 200}, Backend: "web", Namespace: "leak",
	})
	// A gRPC client the caller never closes (as the runner did not): the
	// cluster's Close must close its connections.
	gc := c.GRPCClient()
	if _, err := gc.SendRPC(t, gwAddr, grpcutil.ExpectedResponse{EchoRequest: newOf(grpcutil.ExpectedResponse{}.EchoRequest)}, 5*time.Second); err != nil {
		t.Fatalf("SendRPC: %v", err)
	}
	if runtime.NumGoroutine() <= before {
		t.Fatalf("%d goroutines with the cluster running, %d before: the count cannot show a leak", runtime.NumGoroutine(), before)
	}

	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	wait(t).Eventually(runtime.NumGoroutine).WithPolling(10*time.Millisecond).Should(gomega.BeNumerically("<=", before), func() string {
		buf := make([]byte, 1<<20)
		n := runtime.Stack(buf, true)
		return fmt.Sprintf("goroutines after Close, %d before:\n%s", before, buf[:n])
	})
	if err := c.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// wait is gomega for t, its Eventually bounded by waitTimeout and polling
// every 20ms.
func wait(t testing.TB) *gomega.WithT {
	g := gomega.NewWithT(t)
	g.SetDefaultEventuallyTimeout(waitTimeout)
	g.SetDefaultEventuallyPollingInterval(20 * time.Millisecond)
	return g
}

func create(t testing.TB, c client.Client, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := c.Create(context.Background(), o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
}

func namespace(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

func echoDeployment(ns, name string, replicas int32, image string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: name, Image: image,
					Env: []corev1.EnvVar{
						{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
						{Name: "NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
					},
				}}},
			},
		},
	}
}

func echoService(ns, name string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": name},
			Ports:    []corev1.ServicePort{{Port: 8080, TargetPort: intstr.FromInt32(3000)}},
		},
	}
}

// smallSetup creates in namespace ns a two-replica echo Deployment and its
// Service "web", a Gateway "gw" with one HTTP listener on port 80, and an
// HTTPRoute to the Service; it returns the Gateway's address once the
// route is accepted.
func smallSetup(t testing.TB, c *cluster.Cluster, ns string) string {
	t.Helper()
	create(t, c.Client(), namespace(ns), echoDeployment(ns, "web", 2, "registry.k8s.io/gateway-api/echo-basic:v1.5.1"), echoService(ns, "web"))
	create(t, c.Client(), &gwv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gw"},
		Spec: gwv1.GatewaySpec{GatewayClassName: cluster.DefaultGatewayClassName,
			Listeners: []gwv1.Listener{{Name: "http", Port: 80, Protocol: gwv1.HTTPProtocolType}}},
	})
	port := gwv1.PortNumber(8080)
	create(t, c.Client(), &gwv1.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "route"},
		Spec: gwv1.HTTPRouteSpec{
			CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{{Name: "gw"}}},
			Rules:           []gwv1.HTTPRouteRule{{BackendRefs: []gwv1.HTTPBackendRef{{BackendRef: gwv1.BackendRef{BackendObjectReference: gwv1.BackendObjectReference{Name: "web", Port: &port}}}}}},
		},
	})
	// Wait as upstream's GatewayAndHTTPRoutesMustBeAccepted does, without
	// its *testing.T.
	var addr string
	wait(t).Eventually(func() error {
		var gw gwv1.Gateway
		if err := c.Client().Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "gw"}, &gw); err != nil {
			return err
		}
		if len(gw.Status.Addresses) == 0 {
			return errors.New("no address yet")
		}
		var r gwv1.HTTPRoute
		if err := c.Client().Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "route"}, &r); err != nil {
			return err
		}
		for _, p := range r.Status.Parents {
			for _, cond := range p.Conditions {
				if cond.Type == string(gwv1.RouteConditionAccepted) && cond.Status == metav1.ConditionTrue {
					addr = net.JoinHostPort(gw.Status.Addresses[0].Value, "80")
					return nil
				}
			}
		}
		return errors.New("route not accepted yet")
	}).Should(gomega.Succeed(), "gateway programmed with an address and the route accepted")
	return addr
}

// TestBrokenApply builds a broken reference gateway (every HTTPRoute rule
// loses its backends on its way to the data plane) and shows traffic fail
// while status stays healthy.
func TestBrokenApply(t *testing.T) {
	var calls atomic.Int32
	mutate := func(cfg *ir.Config) {
		calls.Add(1)
		for gi := range cfg.Gateways {
			for li := range cfg.Gateways[gi].Listeners {
				for ri := range cfg.Gateways[gi].Listeners[li].HTTPRoutes {
					rules := cfg.Gateways[gi].Listeners[li].HTTPRoutes[ri].Rules
					for i := range rules {
						rules[i].Backends = nil
					}
				}
			}
		}
	}
	c := startClusterWith(t, cluster.Options{}, cluster.Gateway{WrapApply: func(apply func(*ir.Config) error, _ logr.Logger) func(*ir.Config) error {
		return func(cfg *ir.Config) error { mutate(cfg); return apply(cfg) }
	}})
	timeouts := config.DefaultTimeoutConfig()
	gwAddr := smallSetup(t, c, "broken")
	httputil.MakeRequestAndExpectEventuallyConsistentResponse(t, c.RoundTripper(timeouts, false), timeouts, gwAddr, httputil.ExpectedResponse{
		Request: httputil.Request{Path: "/"}, Response: httputil.Response{StatusCode: 500}, Namespace: "broken",
	})
	if calls.Load() == 0 {
		t.Error("the broken Apply was never called")
	}
}

// BenchmarkRequestThroughGateway measures one HTTP/1.1 request from
// upstream's round tripper through the dialer, the data plane and an
// in-process backend (a new connection per request, as upstream's
// transport disables keep-alives).
func BenchmarkRequestThroughGateway(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	c, err := cluster.Start(ctx, cluster.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	gwAddr := smallSetup(b, c, "bench")
	rt := c.RoundTripper(config.DefaultTimeoutConfig(), false)
	req := roundtripper.Request{URL: url.URL{Scheme: "http", Host: gwAddr, Path: "/"}, Protocol: "HTTP"}
	wait(b).Eventually(func() error {
		_, res, err := rt.CaptureRoundTrip(req)
		if err == nil && res.StatusCode != 200 {
			err = fmt.Errorf("status %d", res.StatusCode)
		}
		return err
	}).Should(gomega.Succeed(), "route served")
	b.ReportAllocs()
	for b.Loop() {
		_, res, err := rt.CaptureRoundTrip(req)
		if err != nil || res.StatusCode != 200 {
			b.Fatalf("request: %v, %+v", err, res)
		}
	}
}

// BenchmarkResolve measures the dialer's mapping of a Gateway address.
func BenchmarkResolve(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	c, err := cluster.Start(ctx, cluster.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	gwAddr := smallSetup(b, c, "bench")
	wait(b).Eventually(func() error { _, err := c.Resolve(gwAddr); return err }).Should(gomega.Succeed(), "listener programmed")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Resolve(gwAddr); err != nil {
			b.Fatal(err)
		}
	}
}

// newOf returns a new T for a field of type *T: upstream's gRPC request
// type, which moved between Gateway API releases, named through the field
// of upstream's client package that holds it.
func newOf[T any](*T) *T { return new(T) }

// awaitConvergence calls upstream's httputil.AwaitConvergence, whose
// parameters changed in Gateway API v1.7 (a TimeoutConfig for v1.6's
// threshold and duration), in the form the linked release has.
func awaitConvergence(t *testing.T, timeouts config.TimeoutConfig, fn func(time.Duration) bool) {
	t.Helper()
	var await any = httputil.AwaitConvergence
	switch f := await.(type) {
	case func(*testing.T, int, time.Duration, func(time.Duration) bool): // v1.6
		f(t, timeouts.RequiredConsecutiveSuccesses, timeouts.MaxTimeToConsistency, fn)
	case func(*testing.T, config.TimeoutConfig, func(time.Duration) bool): // v1.7
		f(t, timeouts, fn)
	default:
		t.Fatalf("httputil.AwaitConvergence has an unknown signature %T", await)
	}
}

// TestReplicaBehindTheSameAddress: with Gateway.Replica, connections to a
// Gateway's address are spread over the data planes listening on its
// port, as the kernel spreads those of SO_REUSEPORT sockets: until the
// second replica applies the snapshot with the listener, every
// connection goes to the first; after, to both.
func TestReplicaBehindTheSameAddress(t *testing.T) {
	var (
		mu      sync.Mutex
		held    []*ir.Config
		release bool
		second  func(*ir.Config) error
	)
	c := startClusterWith(t, cluster.Options{}, cluster.Gateway{Replica: func(apply func(*ir.Config) error, _ logr.Logger) func(*ir.Config) error {
		second = apply
		return func(cfg *ir.Config) error {
			mu.Lock()
			defer mu.Unlock()
			if !release {
				held = append(held, cfg)
				return nil
			}
			return apply(cfg)
		}
	}})
	gwAddr := smallSetup(t, c, "replica")
	// resolved returns the distinct sockets 64 connections went to and
	// how many were refused.
	resolved := func() (sockets map[string]bool, refused int) {
		sockets = map[string]bool{}
		for range 64 {
			if real, err := c.Resolve(gwAddr); err != nil {
				refused++
			} else {
				sockets[real] = true
			}
		}
		return sockets, refused
	}
	wait(t).Eventually(func() error {
		if sockets, _ := resolved(); len(sockets) == 0 {
			return fmt.Errorf("no connection resolved")
		}
		return nil
	}).Should(gomega.Succeed(), "the first replica serves")
	if sockets, refused := resolved(); len(sockets) != 1 || refused != 0 {
		t.Errorf("before the second replica applied the snapshot: %d refused of 64, to sockets %v; want none refused, all to the first replica's",
			refused, slices.Sorted(maps.Keys(sockets)))
	}
	mu.Lock()
	release = true
	last := held[len(held)-1]
	mu.Unlock()
	if err := second(last); err != nil {
		t.Fatal(err)
	}
	// 64 connections all to one of two replicas: a chance of 2^-63.
	if sockets, refused := resolved(); len(sockets) != 2 || refused != 0 {
		t.Errorf("after both applied it: %d refused of 64, to sockets %v; want none refused, spread over both replicas' sockets",
			refused, slices.Sorted(maps.Keys(sockets)))
	}
}
