package runner

import (
	"context"
	"fmt"
	"os"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientset "k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/gateway-api/apis/v1alpha2"
	"sigs.k8s.io/gateway-api/apis/v1alpha3"
	"sigs.k8s.io/gateway-api/apis/v1beta1"
	xv1alpha1 "sigs.k8s.io/gateway-api/apisx/v1alpha1"
	"sigs.k8s.io/gateway-api/conformance/utils/suite"

	"github.com/gatecheck/gatecheck/conformance/inprocess"
	"github.com/gatecheck/gatecheck/crds"
)

// target is what the suite runs against.
type target struct {
	// restoreClient is the client the suite must use on the in-process
	// target (see wrapTests); nil on a cluster.
	restoreClient client.Client
}

// startInProcess starts the embedded cluster with the reference gateway
// and points the suite's options at it. The cluster is closed in a
// cleanup of t, registered before the suite registers its own, so it
// outlives the deletion of the base resources.
func startInProcess(t *testing.T, o *Options, co *suite.ConformanceOptions) (*target, error) {
	supported := make([]gwv1.FeatureName, len(o.SupportedFeatures))
	for i, f := range o.SupportedFeatures {
		supported[i] = gwv1.FeatureName(f)
	}
	// The cluster lives until the last cleanup; t.Context is cancelled
	// before cleanups run, when resources are still being deleted.
	ctx, cancel := context.WithCancel(context.Background())
	c, err := inprocess.Start(ctx, inprocess.Options{
		GatewayClassName:  o.GatewayClassName,
		SupportedFeatures: supported,
		MutateConfig:      o.ReferenceGateway.MutateConfig,
		DataPlane:         o.ReferenceGateway.DataPlane,
		Pods:              o.ReferenceGateway.Pods,
		Logger:            o.Logger,
	})
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
	return &target{restoreClient: co.Client}, nil
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

// connect points the suite's options at the cluster a kubeconfig names:
// a controller-runtime client and clientset with the Gateway API types,
// and the upstream suite's default round tripper, gRPC and WebSocket
// clients (left nil, so the suite picks them).
func connect(kubeconfig string, co *suite.ConformanceOptions) (*target, error) {
	if _, err := os.Stat(kubeconfig); err != nil {
		return nil, fmt.Errorf("--kubeconfig: %w", err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig %s: %w", kubeconfig, err)
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
		return nil, fmt.Errorf("client for %s: %w", kubeconfig, err)
	}
	cs, err := clientset.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("clientset for %s: %w", kubeconfig, err)
	}
	co.Client = c
	co.Clientset = cs
	co.RestConfig = cfg
	return &target{}, nil
}
