// Package cluster is gatewitness's embedded cluster: the in-memory object
// store, the pod runner, the reference gateway's controller and data plane,
// and a dialer that reaches the Gateways' published addresses, all in one
// process, with no cluster, no Docker, no root and no fixed ports.
//
// The upstream conformance suite is given Cluster.Client as its client and
// Cluster.RoundTripper, Cluster.GRPCClient and Cluster.WebSocketDialer to
// send traffic, and Cluster.Clientset (or a clientset built from
// Cluster.RestConfig) to read pod logs, which a small REST server on
// 127.0.0.1 serves from the pods' in-memory logs. Every Gateway of the
// cluster's GatewayClass gets a stable loopback address of its own
// (127.1.x.y) in its status; the dialer maps that address and a listener
// port to the data plane's real socket, and dials every other address (the
// pods' 127.2.x.y) directly.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatewitness/gatewitness/cluster/pods"
	"github.com/gatewitness/gatewitness/cluster/store"
	"github.com/gatewitness/gatewitness/gateway/controller"
	"github.com/gatewitness/gatewitness/gateway/dataplane"
	"github.com/gatewitness/gatewitness/gateway/gatewayaddr"
	"github.com/gatewitness/gatewitness/gateway/ir"
	"github.com/gatewitness/gatewitness/gateway/probeproxy"
	"github.com/gatewitness/gatewitness/gateway/sharedport"
	"github.com/gatewitness/gatewitness/internal/closeerr"
)

// Defaults for Options fields left empty.
const (
	DefaultGatewayClassName                        = "gatewitness"
	DefaultControllerName   gwv1.GatewayController = "gatewitness.dev/reference-gateway"
)

// DataPlane is what serves the Gateways' listeners: it takes each routing
// snapshot the controller makes, and says which socket serves a Gateway's
// listener port, which the dialer maps the Gateway's address to. The
// reference data plane (*dataplane.Server) is one; calibration/ drives real
// proxies (HAProxy, nginx) through it.
type DataPlane interface {
	// Apply serves cfg, returning only once it is served (the controller
	// writes Programmed after it); an error means some of it is not.
	Apply(cfg *ir.Config) error
	// Addr returns the "ip:port" serving port of the Gateway
	// namespace/name, if one does.
	Addr(namespace, name string, port int32) (string, bool)
	// Close stops serving and releases everything the data plane holds.
	Close() error
}

// Gateway says how Start builds the reference gateway's parts, as
// http.Server's Handler says what a server does: each nil field means the
// part as it ships. The zero Gateway is the reference gateway;
// conformance/runner/runnertest builds one broken on purpose from the
// test-only constructors (dataplanetest, probeproxytest).
type Gateway struct {
	// NewDataPlane builds the data plane. Nil means dataplane.New.
	NewDataPlane func(dataplane.Options) *dataplane.Server
	// ServeWith, when set, builds the data plane in place of the reference
	// one (NewDataPlane is then not used): the controller's snapshots go to
	// it, and the dialer maps Gateway addresses to the sockets it reports.
	// calibration/ sets it to a real proxy's adapter.
	ServeWith func(log logr.Logger) (DataPlane, error)
	// WrapApply, when set, stands between the controller and the data
	// plane: it is given the data plane's Apply (and the data plane's
	// logger) and returns what the controller calls instead, which may
	// change each snapshot or hand it over late.
	WrapApply func(apply func(*ir.Config) error, log logr.Logger) func(*ir.Config) error
	// Replica, when set, runs a second replica of the data plane (built
	// as the first is) behind every Gateway address, as two proxy
	// processes on sockets bound with SO_REUSEPORT are run: each new
	// connection to a Gateway's address goes, at random, to one of the
	// replicas with a listener on that port (Resolve), as the kernel
	// spreads them. A replica that has not yet applied the snapshot with
	// a new listener gets none of its connections, so no request can see
	// that it lags until it binds the port with that (older) snapshot;
	// behind a Service, where such a replica would refuse them, the lag
	// shows at once. The controller's snapshots
	// reach the second replica through what Replica returns, given its
	// Apply (dataplanetest.LateApply makes it lag); the status the
	// controller writes follows the first replica only.
	Replica func(apply func(*ir.Config) error, log logr.Logger) func(*ir.Config) error
	// WrapControllerClient, when set, is given the object store and
	// returns the client the controller reads objects and writes status
	// through (one that drops a condition models a controller that never
	// writes it).
	WrapControllerClient func(client.WithWatch) client.WithWatch
	// ListenProbeProxy starts each proxied Pod's probe proxy. Nil means
	// probeproxy.Listen.
	ListenProbeProxy func(addr string, opts probeproxy.Options) (*probeproxy.Server, error)
	// NoMesh runs the Pods as a cluster with no mesh would: the kubelet
	// probes every Pod directly (pods.Options.NoMesh).
	NoMesh bool
	// SharedAddress makes the reference gateway one of the implementations
	// with one entry point per port: every Gateway gets the address
	// SharedGatewayAddress, and the listeners of all Gateways on a port are
	// served by one socket (gateway/sharedport).
	SharedAddress bool
}

// Options configure an embedded cluster.
type Options struct {
	// GatewayClassName is the GatewayClass created at Start. Empty means
	// DefaultGatewayClassName.
	GatewayClassName string
	// ControllerName is the class's spec.controllerName, owned by the
	// reference gateway. Empty means DefaultControllerName.
	ControllerName gwv1.GatewayController
	// SupportedFeatures are published in the GatewayClass status by the
	// controller.
	SupportedFeatures []gwv1.FeatureName
	// Logger receives the components' errors and progress; the zero Logger
	// discards.
	Logger logr.Logger
}

// Cluster is a running embedded cluster. Its methods are safe for concurrent
// use.
type Cluster struct {
	store *store.Store
	dp    DataPlane
	// replica is the second replica of the data plane, or nil (Gateway.Replica).
	replica DataPlane
	pods    *pods.Runner
	addrs   *gatewayaddr.Pool
	// shared: every Gateway has the address SharedGatewayAddress, and the
	// data plane serves the merged Gateways of package sharedport.
	shared bool

	api        *apiServer
	restConfig *rest.Config // never handed out: RestConfig returns copies
	clientset  kubernetes.Interface

	clientsMu   sync.Mutex
	grpcClients []*grpcClient // closed by Close

	cancel context.CancelFunc
	done   sync.WaitGroup
	errs   closeerr.Collector

	closeOnce sync.Once
	closeErr  error
}

// Start builds the store, creates the GatewayClass, starts the pod runner,
// the data plane and the controller, and returns once the controller has
// accepted the GatewayClass. ctx bounds only the start: once Start has
// returned, the cluster runs until Close. Start hosts the reference gateway
// as it ships: it is StartWith(ctx, opts, Gateway{}).
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	return StartWith(ctx, opts, Gateway{})
}

// StartWith is Start with the reference gateway's parts built as gw says
// (conformance/runner/runnertest passes one broken on purpose).
func StartWith(ctx context.Context, opts Options, gw Gateway) (*Cluster, error) {
	if opts.GatewayClassName == "" {
		opts.GatewayClassName = DefaultGatewayClassName
	}
	if opts.ControllerName == "" {
		opts.ControllerName = DefaultControllerName
	}
	if opts.Logger.GetSink() == nil {
		opts.Logger = logr.Discard()
	}
	log := opts.Logger

	s, err := store.New(store.Options{})
	if err != nil {
		return nil, fmt.Errorf("cluster: starting the store: %w", err)
	}
	class := &gwv1.GatewayClass{
		ObjectMeta: metav1.ObjectMeta{Name: opts.GatewayClassName},
		Spec:       gwv1.GatewayClassSpec{ControllerName: opts.ControllerName},
	}
	if err := s.Create(ctx, class); err != nil {
		return nil, fmt.Errorf("cluster: creating GatewayClass %q: %w", opts.GatewayClassName, err)
	}
	runner, err := pods.New(pods.Options{
		Client:           s,
		Logger:           log.WithName("pods"),
		ListenProbeProxy: gw.ListenProbeProxy,
		NoMesh:           gw.NoMesh,
	})
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	api, err := startAPI(s, runner)
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	restConfig := &rest.Config{Host: api.url()}
	cs, err := kubernetes.NewForConfig(rest.CopyConfig(restConfig))
	if err != nil {
		api.close()
		return nil, fmt.Errorf("cluster: the clientset for %s: %w", restConfig.Host, err)
	}
	dpOpts := dataplane.Options{Logger: log.WithName("dataplane")}
	dp, err := newDataPlane(gw, dpOpts)
	if err != nil {
		api.close()
		return nil, fmt.Errorf("cluster: starting the data plane: %w", err)
	}
	apply := dp.Apply
	if gw.SharedAddress {
		apply = sharedport.Apply(dp.Apply)
	}
	if gw.WrapApply != nil {
		apply = gw.WrapApply(apply, dpOpts.Logger)
	}
	c := &Cluster{store: s, dp: dp, pods: runner, addrs: newAddresses(gw.SharedAddress), shared: gw.SharedAddress, api: api, restConfig: restConfig, clientset: cs}
	if gw.Replica != nil {
		rOpts := dpOpts
		rOpts.Logger = log.WithName("dataplane-replica")
		replica, err := newDataPlane(gw, rOpts)
		if err != nil {
			dp.Close()
			api.close()
			return nil, fmt.Errorf("cluster: starting the data plane's second replica: %w", err)
		}
		c.replica = replica
		rApply := replica.Apply
		if gw.SharedAddress {
			rApply = sharedport.Apply(rApply)
		}
		apply = bothReplicas(apply, gw.Replica(rApply, rOpts.Logger), rOpts.Logger)
	}

	var ctlClient client.WithWatch = s
	if gw.WrapControllerClient != nil {
		ctlClient = gw.WrapControllerClient(s)
	}
	ctl, err := controller.New(controller.Options{
		Client:            ctlClient,
		ControllerName:    opts.ControllerName,
		Apply:             apply,
		Addresses:         c.addrs.ForGateway,
		SupportedFeatures: opts.SupportedFeatures,
		Logger:            log.WithName("controller"),
	})
	if err != nil {
		dp.Close()
		api.close()
		return nil, fmt.Errorf("cluster: %w", err)
	}

	// Watch the class before anything runs, so its acceptance is not missed.
	w, err := s.Watch(ctx, &gwv1.GatewayClassList{}, client.MatchingFields{"metadata.name": opts.GatewayClassName})
	if err != nil {
		dp.Close()
		api.close()
		return nil, fmt.Errorf("cluster: watching GatewayClass %q: %w", opts.GatewayClassName, err)
	}
	defer w.Stop()

	runCtx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	c.done.Go(func() { c.record("pod runner", runner.Run(runCtx)) })
	c.done.Go(func() { c.record("controller", ctl.Run(runCtx)) })

	if err := waitAccepted(ctx, w); err != nil {
		c.Close()
		return nil, fmt.Errorf("cluster: GatewayClass %q: %w", opts.GatewayClassName, err)
	}
	return c, nil
}

// bothReplicas hands each snapshot to the first replica, whose answer the
// controller's status follows, and to the second, whose errors go to log.
func bothReplicas(first, second func(*ir.Config) error, log logr.Logger) func(*ir.Config) error {
	return func(cfg *ir.Config) error {
		err := first(cfg)
		if err2 := second(cfg); err2 != nil {
			log.Error(err2, "the second replica refused the snapshot")
		}
		return err
	}
}

// newDataPlane builds the data plane gw names: ServeWith's, else
// NewDataPlane's, else the reference one.
func newDataPlane(gw Gateway, opts dataplane.Options) (DataPlane, error) {
	switch {
	case gw.ServeWith != nil:
		return gw.ServeWith(opts.Logger)
	case gw.NewDataPlane != nil:
		return gw.NewDataPlane(opts), nil
	default:
		return dataplane.New(opts), nil
	}
}

// waitAccepted waits for the watched GatewayClass to be Accepted=True.
func waitAccepted(ctx context.Context, w watch.Interface) error {
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("not accepted by the controller before the start was cancelled: %w", ctx.Err())
		case ev, ok := <-w.ResultChan():
			if !ok {
				return errors.New("the watch ended before the controller accepted it")
			}
			gc, ok := ev.Object.(*gwv1.GatewayClass)
			if !ok {
				continue
			}
			if ev.Type == watch.Deleted {
				return errors.New("deleted while starting")
			}
			for _, cond := range gc.Status.Conditions {
				if cond.Type == string(gwv1.GatewayClassConditionStatusAccepted) && cond.Status == metav1.ConditionTrue &&
					cond.ObservedGeneration == gc.Generation {
					return nil
				}
			}
		}
	}
}

func (c *Cluster) record(what string, err error) { c.errs.Record(what, err) }

// Client is the cluster's API: the object store as a client.WithWatch.
func (c *Cluster) Client() client.WithWatch { return c.store }

// Store is the cluster's object store.
func (c *Cluster) Store() *store.Store { return c.store }

// Pods is the cluster's pod runner; Pods().Backend gives a running pod's
// echo-backend (its ledger and controls).
func (c *Cluster) Pods() *pods.Runner { return c.pods }

// Clientset is a client-go clientset for the cluster's REST API, which
// serves pod logs only: CoreV1().Pods(ns).GetLogs(name, opts) returns the
// lines the Pod's echo-backend printed (one per echoed request, as
// echo-basic prints them), honouring container, sinceTime, sinceSeconds,
// tailLines, limitBytes and timestamps, and 404 for an unknown Pod. Every
// other call fails with a 501 Status that names the limitation; objects
// are read and written through Client.
func (c *Cluster) Clientset() kubernetes.Interface { return c.clientset }

// RestConfig returns a new copy of the configuration for the cluster's REST
// API (see Clientset), for callers that build their own clients from it.
func (c *Cluster) RestConfig() *rest.Config { return rest.CopyConfig(c.restConfig) }

// DataPlane is the data plane serving the Gateways: the reference one
// unless Gateway.ServeWith built another.
func (c *Cluster) DataPlane() DataPlane { return c.dp }

// Close closes the gRPC clients handed out, stops the REST API, the
// controller and the pod runner (and with it every backend), closes the
// data plane and waits for all of their goroutines. It returns what the components reported; later calls return
// the same.
func (c *Cluster) Close() error {
	c.closeOnce.Do(func() {
		c.clientsMu.Lock()
		for _, g := range c.grpcClients {
			g.Close()
		}
		c.clientsMu.Unlock()
		c.record("pod log API", c.api.close())
		c.cancel()
		c.done.Wait()
		c.record("data plane", c.dp.Close())
		if c.replica != nil {
			c.record("data plane replica", c.replica.Close())
		}
		c.closeErr = c.errs.Err()
	})
	return c.closeErr
}
