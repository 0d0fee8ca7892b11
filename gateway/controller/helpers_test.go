package controller

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/gatewitness/gatewitness/gateway/ir"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"
	gwxv1a1 "sigs.k8s.io/gateway-api/apisx/v1alpha1"
	"sigs.k8s.io/gateway-api/conformance"
	confk8s "sigs.k8s.io/gateway-api/conformance/utils/kubernetes"
)

const (
	testClassName      = "gatewitness"
	testControllerName = gwv1.GatewayController("gatewitness.dev/reference-gateway")
	infraNS            = "gateway-conformance-infra"
	webNS              = "gateway-conformance-web-backend"
)

// testScheme holds the kinds the controller and the manifests it is
// tested with use: core, apps and discovery, and Gateway API's. Not all of
// client-go's: the fake client builds a REST mapper of the whole scheme on
// every write, and with client-go's hundreds of kinds that was a third of
// this package's CPU under -race.
func testScheme(t testing.TB) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, appsv1.AddToScheme, discoveryv1.AddToScheme, gwv1.Install, gwv1beta1.Install, gwxv1a1.Install} {
		if err := add(s); err != nil {
			t.Fatalf("building scheme: %v", err)
		}
	}
	return s
}

// newFakeClient returns controller-runtime's fake client with the status
// subresources the controller writes, holding objs.
func newFakeClient(t testing.TB, objs ...client.Object) client.WithWatch {
	t.Helper()
	return fake.NewClientBuilder().
		WithScheme(testScheme(t)).
		WithStatusSubresource(&gwv1.GatewayClass{}, &gwv1.Gateway{}, &gwv1.HTTPRoute{}, &gwv1.GRPCRoute{}, &gwv1.TLSRoute{}, &gwxv1a1.XBackendTrafficPolicy{}).
		WithObjects(objs...).
		Build()
}

// recorder is an Apply func that keeps the snapshots it is given and can be
// told to fail.
type recorder struct {
	mu      sync.Mutex
	configs []*ir.Config
	fail    error
}

func (r *recorder) apply(cfg *ir.Config) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail != nil {
		return r.fail
	}
	r.configs = append(r.configs, cfg)
	return nil
}

func (r *recorder) last() *ir.Config {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.configs) == 0 {
		return nil
	}
	return r.configs[len(r.configs)-1]
}

func loopbackAddresses(*gwv1.Gateway) []gwv1.GatewayStatusAddress {
	ip := gwv1.IPAddressType
	return []gwv1.GatewayStatusAddress{{Type: &ip, Value: "127.0.0.10"}}
}

func newTestController(t testing.TB, cl client.WithWatch, rec *recorder) *Controller {
	t.Helper()
	c, err := New(Options{
		Client:         cl,
		ControllerName: testControllerName,
		Apply:          rec.apply,
		Addresses:      loopbackAddresses,
	})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c
}

// syncTwice runs two recomputes, as the watch would after the first one's
// status writes: the second must see a fixed point.
func syncTwice(t *testing.T, c *Controller) {
	t.Helper()
	for i := 0; i < 2; i++ {
		if err := c.sync(context.Background()); err != nil {
			t.Fatalf("sync %d: %v", i+1, err)
		}
	}
}

func testClass() *gwv1.GatewayClass {
	return &gwv1.GatewayClass{
		ObjectMeta: metav1.ObjectMeta{Name: testClassName, Generation: 1},
		Spec:       gwv1.GatewayClassSpec{ControllerName: testControllerName},
	}
}

// loadManifests decodes upstream conformance manifests (the base manifests
// and the named test manifests from the conformance module's embed.FS),
// substitutes the class and controller names as the upstream applier does,
// and creates every object with generation 1.
func loadManifests(t testing.TB, cl client.Client, paths ...string) {
	t.Helper()
	decoder := serializer.NewCodecFactory(testScheme(t)).UniversalDeserializer()
	for _, p := range paths {
		raw, err := conformance.Manifests.ReadFile(p)
		if err != nil {
			t.Fatalf("reading %s: %v", p, err)
		}
		text := strings.NewReplacer("{GATEWAY_CLASS_NAME}", testClassName, "{GATEWAY_CONTROLLER_NAME}", string(testControllerName)).Replace(string(raw))
		r := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(text)))
		for {
			doc, err := r.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("splitting %s: %v", p, err)
			}
			if len(bytes.TrimSpace(doc)) == 0 || strings.TrimSpace(stripComments(string(doc))) == "" {
				continue
			}
			obj, _, err := decoder.Decode(doc, nil, nil)
			if err != nil {
				t.Fatalf("decoding a document of %s: %v", p, err)
			}
			co := obj.(client.Object)
			co.SetGeneration(1)
			if err := cl.Create(context.Background(), co); err != nil {
				t.Fatalf("creating %T %s from %s: %v", co, co.GetName(), p, err)
			}
		}
	}
}

var (
	conformanceSecretsOnce sync.Once
	conformanceSecrets     []*corev1.Secret
)

// addConformanceSecrets creates the certificate Secrets the upstream suite
// creates at start-up, made once per test binary with upstream's own
// generator (RSA key generation is slow on a loaded machine).
func addConformanceSecrets(t *testing.T, cl client.Client) {
	t.Helper()
	conformanceSecretsOnce.Do(func() {
		conformanceSecrets = []*corev1.Secret{
			confk8s.MustCreateSelfSignedCertSecret(t, webNS, "certificate", []string{"*"}),
			confk8s.MustCreateSelfSignedCertSecret(t, infraNS, "tls-validity-checks-certificate", []string{"*", "*.org", "*.wildcard.org"}),
		}
	})
	if len(conformanceSecrets) == 0 {
		t.Fatal("conformance Secrets could not be made")
	}
	for _, s := range conformanceSecrets {
		s := s.DeepCopy()
		if err := cl.Create(context.Background(), s); err != nil {
			t.Fatalf("creating Secret %s/%s: %v", s.Namespace, s.Name, err)
		}
	}
}

func stripComments(doc string) string {
	var b strings.Builder
	for _, line := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			b.WriteString(line)
			b.WriteString("\n")
		}
	}
	return b.String()
}

func getGateway(t *testing.T, cl client.Client, ns, name string) *gwv1.Gateway {
	t.Helper()
	gw := &gwv1.Gateway{}
	if err := cl.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, gw); err != nil {
		t.Fatalf("getting Gateway %s/%s: %v", ns, name, err)
	}
	return gw
}

func getHTTPRoute(t *testing.T, cl client.Client, ns, name string) *gwv1.HTTPRoute {
	t.Helper()
	r := &gwv1.HTTPRoute{}
	if err := cl.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, r); err != nil {
		t.Fatalf("getting HTTPRoute %s/%s: %v", ns, name, err)
	}
	return r
}

func findCondition(conds []metav1.Condition, typ string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == typ {
			return &conds[i]
		}
	}
	return nil
}

// wantCondition fails unless conds hold typ with the given status and
// reason (reason "" matches any) at the given observedGeneration.
func wantCondition(t *testing.T, what string, conds []metav1.Condition, typ string, status metav1.ConditionStatus, reason string, generation int64) {
	t.Helper()
	c := findCondition(conds, typ)
	switch {
	case c == nil:
		t.Errorf("%s: no %s condition in %v", what, typ, conds)
	case c.Status != status || (reason != "" && c.Reason != reason):
		t.Errorf("%s: %s = %s/%s (%q), want %s/%s", what, typ, c.Status, c.Reason, c.Message, status, reason)
	case c.ObservedGeneration != generation:
		t.Errorf("%s: %s observedGeneration = %d, want %d", what, typ, c.ObservedGeneration, generation)
	}
}

func listenerStatus(t *testing.T, gw *gwv1.Gateway, name string) gwv1.ListenerStatus {
	t.Helper()
	for _, l := range gw.Status.Listeners {
		if string(l.Name) == name {
			return l
		}
	}
	t.Fatalf("Gateway %s has no status for listener %q: %+v", gw.Name, name, gw.Status.Listeners)
	return gwv1.ListenerStatus{}
}

// ourParent returns the route's parent status of ours for the Gateway.
func ourParent(t *testing.T, parents []gwv1.RouteParentStatus, gwNS, gwName string) gwv1.RouteParentStatus {
	t.Helper()
	for _, p := range parents {
		ns := ""
		if p.ParentRef.Namespace != nil {
			ns = string(*p.ParentRef.Namespace)
		}
		if p.ControllerName == testControllerName && string(p.ParentRef.Name) == gwName && (ns == "" || ns == gwNS) {
			return p
		}
	}
	t.Fatalf("no parent status of ours for Gateway %s/%s in %+v", gwNS, gwName, parents)
	return gwv1.RouteParentStatus{}
}

func kindNames(kinds []gwv1.RouteGroupKind) []string {
	var out []string
	for _, k := range kinds {
		out = append(out, string(k.Kind))
	}
	return out
}
