package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	confv1 "sigs.k8s.io/gateway-api/conformance/apis/v1"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	clientset "k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/gateway-api/apis/v1alpha2"
	"sigs.k8s.io/gateway-api/apis/v1alpha3"
	"sigs.k8s.io/gateway-api/apis/v1beta1"
	xv1alpha1 "sigs.k8s.io/gateway-api/apisx/v1alpha1"
	"sigs.k8s.io/gateway-api/conformance/utils/suite"

	"github.com/gatewitness/gatewitness/cluster"
	"github.com/gatewitness/gatewitness/crds"
	"github.com/gatewitness/gatewitness/features"
	"github.com/gatewitness/gatewitness/reports"
)

// target is what the suite runs against.
type target struct {
	// restoreClient is the client the suite must use on the in-process
	// target (see wrapTests); nil on a cluster.
	restoreClient client.Client
	// info describes the target for the header and the reports.
	info reports.Target
	// kubernetesVersion is the API server's version (in-process: the
	// Kubernetes release of the libraries that validate objects).
	kubernetesVersion string
	// claimsSource says where the features claimed come from.
	claimsSource string
	// began is when Run was called, the start of the run's first phase;
	// zero means when the suites are built.
	began time.Time
	// stop, when set, stops the target at once (the in-process cluster's
	// Close) when the run is interrupted; nil on a cluster, where
	// stopTarget deletes the base namespaces.
	stop func() error
}

// InProcess is the target of a run whose Options name no cluster: the
// embedded cluster hosting the reference gateway, its parts built as
// Gateway says. The zero InProcess is the reference gateway as it ships;
// conformance/runner/runnertest builds one broken on purpose, as
// net/http/httptest builds a server.
type InProcess struct {
	// Gateway builds the reference gateway's parts (cluster.StartWith).
	Gateway cluster.Gateway
	// Implementation, when its Project is set, is what the reports name
	// as the implementation under test instead of the reference gateway:
	// a run whose Gateways another data plane serves (Gateway.ServeWith)
	// is that data plane's run.
	Implementation confv1.Implementation
	// DataPlane names what Gateway.ServeWith builds, for the record of
	// the run (reports.Target.DataPlane); empty: the reference gateway's.
	DataPlane string
}

// startInProcess starts the embedded cluster with the reference gateway
// built as in says and points the suite's options at it. The cluster is closed in a
// cleanup of t, registered before the suite registers its own, so it
// outlives the deletion of the base resources.
func startInProcess(t *testing.T, o *Options, co *suite.ConformanceOptions, in InProcess) (*target, error) {
	// The class publishes what its status holds; the suite is handed every
	// claim (co.SupportedFeatures) whatever the status can list.
	published, _ := features.ForGatewayClassStatus(o.SupportedFeatures)
	supported := make([]gwv1.FeatureName, len(published))
	for i, f := range published {
		supported[i] = gwv1.FeatureName(f)
	}
	// The cluster lives until the last cleanup; t.Context is cancelled
	// before cleanups run, when resources are still being deleted.
	if in.Implementation.Project != "" {
		o.Implementation, co.Implementation = in.Implementation, in.Implementation
	}
	ctx, cancel := context.WithCancel(context.Background())
	c, err := cluster.StartWith(ctx, cluster.Options{
		GatewayClassName:  o.GatewayClassName,
		SupportedFeatures: supported,
		Logger:            o.Logger,
	}, in.Gateway)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("starting the in-process cluster: %w", err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("runner: closing the in-process cluster: %v", err)
		}
		cancel()
	})
	crdList, err := crds.Load()
	if err != nil {
		return nil, fmt.Errorf("loading the in-process CRDs: %w", err)
	}
	co.Client = withCRDs{WithWatch: c.Client(), crds: crdList}
	co.RoundTripper = c.RoundTripper(o.TimeoutConfig, o.Debug)
	co.GRPCClient = c.GRPCClient()
	co.WebSocketDialer = c.WebSocketDialer()
	// The suite builds each test's clientset from RestConfig. The cluster's
	// REST API serves pod logs, which the mirror tests read, and answers
	// every other call with a Status naming the in-process limitation.
	co.RestConfig = c.RestConfig()
	co.Clientset = c.Clientset()
	return &target{
		restoreClient:     co.Client,
		info:              reports.Target{InProcess: true, DataPlane: in.DataPlane},
		kubernetesVersion: inProcessKubernetesVersion(),
		stop:              c.Close,
	}, nil
}

// inProcessKubernetesVersion is the Kubernetes release whose libraries
// (k8s.io/apiextensions-apiserver v0.X.Y is Kubernetes v1.X.Y) validate
// the in-process store's objects, as "v1.X.Y (in-process validation)".
func inProcessKubernetesVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	for _, m := range bi.Deps {
		if m.Path != "k8s.io/apiextensions-apiserver" {
			continue
		}
		v := m.Version
		if m.Replace != nil {
			v = m.Replace.Version
		}
		if rest, ok := strings.CutPrefix(v, "v0."); ok {
			return "v1." + rest + " (in-process validation by k8s.io/apiextensions-apiserver " + v + ")"
		}
	}
	return ""
}

// withCRDs answers lists of CustomResourceDefinitions, which the upstream
// suite reads for the Gateway API version and channel of its report, with
// the CRDs the in-process store serves; everything else goes to the store.
// The store does not serve CRD objects (yet): once it does, this goes.
type withCRDs struct {
	client.WithWatch
	crds []*apiextensionsv1.CustomResourceDefinition
}

func (c withCRDs) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	l, ok := list.(*apiextensionsv1.CustomResourceDefinitionList)
	if !ok {
		return c.WithWatch.List(ctx, list, opts...)
	}
	l.Items = l.Items[:0]
	for _, crd := range c.crds {
		l.Items = append(l.Items, *crd.DeepCopy())
	}
	return nil
}

// connect points the suite's options at the cluster the options name
// (Kubeconfig, from --kubeconfig or $KUBECONFIG, and Context): a
// controller-runtime client and clientset with the Gateway API types, and
// the upstream suite's default round tripper and WebSocket dialer (left
// nil, so the suite picks them), and upstream's gRPC client with a
// connection a call (freshConnGRPC). It asks the API server its version,
// so an unreachable cluster is an error here, naming where the kubeconfig
// came from.
func connect(o *Options, co *suite.ConformanceOptions) (*target, error) {
	source := o.KubeconfigSource
	if source == "" {
		source = "kubeconfig"
	}
	named := fmt.Sprintf("%s=%s", source, o.Kubeconfig)
	if strings.HasPrefix(source, "--") {
		named = fmt.Sprintf("%s %s", source, o.Kubeconfig)
	}
	rules := &clientcmd.ClientConfigLoadingRules{}
	if source == "KUBECONFIG" {
		// A list, as kubectl reads it; files that do not exist are
		// skipped, but at least one must.
		rules.Precedence = filepath.SplitList(o.Kubeconfig)
		var errs []error
		for _, p := range rules.Precedence {
			if _, err := os.Stat(p); err != nil {
				errs = append(errs, err)
			}
		}
		if len(errs) == len(rules.Precedence) {
			return nil, fmt.Errorf("%s names no kubeconfig file that exists (%v); point KUBECONFIG at your cluster's kubeconfig, or run the in-process reference gateway with --in-process", named, errors.Join(errs...))
		}
	} else {
		if _, err := os.Stat(o.Kubeconfig); err != nil {
			return nil, fmt.Errorf("%s: %w", named, err)
		}
		rules.ExplicitPath = o.Kubeconfig
	}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: o.Context})
	raw, err := cc.RawConfig()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", named, err)
	}
	contextName := raw.CurrentContext
	if o.Context != "" {
		contextName = o.Context
		if _, ok := raw.Contexts[o.Context]; !ok {
			return nil, fmt.Errorf("--context %s: %s has no such context", o.Context, named)
		}
	}
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", named, err)
	}
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme,
		apiextensionsv1.AddToScheme,
		gwv1.Install,
		v1beta1.Install,
		v1alpha2.Install,
		v1alpha3.Install,
		xv1alpha1.Install,
	} {
		if err := add(scheme); err != nil {
			return nil, fmt.Errorf("building the client's scheme: %w", err)
		}
	}
	co.ClientOptions = client.Options{Scheme: scheme}
	c, err := client.New(cfg, co.ClientOptions)
	if err != nil {
		return nil, fmt.Errorf("client for %s: %w", named, err)
	}
	cs, err := clientset.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("clientset for %s: %w", named, err)
	}
	probe := rest.CopyConfig(cfg)
	probe.Timeout = o.TimeoutConfig.GetTimeout
	dc, err := discovery.NewDiscoveryClientForConfig(probe)
	if err != nil {
		return nil, fmt.Errorf("discovery client for %s: %w", named, err)
	}
	sv, err := dc.ServerVersion()
	if err != nil {
		return nil, fmt.Errorf("the API server %s (context %q of %s) does not answer: %w", cfg.Host, contextName, named, err)
	}
	co.Client = c
	co.Clientset = cs
	co.RestConfig = cfg
	if co.GRPCClient == nil {
		co.GRPCClient = freshConnGRPC{}
	}
	return &target{
		info:              reports.Target{Server: cfg.Host, Context: contextName},
		kubernetesVersion: sv.GitVersion,
	}, nil
}

// gatewayClassController returns the controllerName of the GatewayClass
// name, or "" if it cannot be read (the suite's set-up then says why).
func gatewayClassController(c client.Client, name string, timeout time.Duration) string {
	if c == nil || name == "" {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), max(timeout, time.Second))
	defer cancel()
	var gc gwv1.GatewayClass
	if err := c.Get(ctx, client.ObjectKey{Name: name}, &gc); err != nil {
		return ""
	}
	return string(gc.Spec.ControllerName)
}
