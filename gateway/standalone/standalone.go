// Package standalone runs the reference gateway as a process of its own
// against a Kubernetes API server: the controller watches the cluster
// through a client and writes status there, and the data plane serves the
// Gateways' listeners on local sockets.
//
// Each Gateway of the GatewayClasses the controller owns gets an address
// of its own from Options.Addresses (by default 127.1.0.0/16, which on
// Linux is local without any set-up), published in its status. Every
// listener port of the Gateway is served on that address and on the
// listener's own port, so a client, such as the upstream conformance
// suite, reaches the Gateway at its published address and listener port
// with no mapping. Ports below 1024 need root, CAP_NET_BIND_SERVICE, or
// net.ipv4.ip_unprivileged_port_start lowered; a port that cannot be
// opened leaves its Gateway Programmed=False with the reason in the
// message.
//
// The data plane reaches backends at the addresses in their
// EndpointSlices: the process must run where Pod IPs are routable (on a
// kind node's network, or on a host with a route to the Pod CIDR).
package standalone

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"sync"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"
	gwxv1a1 "sigs.k8s.io/gateway-api/apisx/v1alpha1"

	"github.com/gatewitness/gatewitness/gateway/controller"
	"github.com/gatewitness/gatewitness/gateway/dataplane"
	"github.com/gatewitness/gatewitness/gateway/gatewayaddr"
	"github.com/gatewitness/gatewitness/gateway/sharedport"
	"github.com/gatewitness/gatewitness/internal/closeerr"
)

// Defaults for Options fields left empty.
const (
	DefaultControllerName gwv1.GatewayController = "gatewitness.dev/reference-gateway"
	DefaultAddresses                             = "127.1.0.0/16"
)

// Client QPS and burst that NewClient sets when the configuration has
// none: one recompute lists a dozen kinds and may write many statuses,
// which client-go's own default (5 per second) would stretch to seconds.
const (
	clientQPS   = 100
	clientBurst = 200
)

// Options configure a Gateway.
type Options struct {
	// Client reads and watches the cluster and writes status. NewClient
	// builds one from a rest.Config; tests may pass any client.WithWatch
	// whose scheme knows the types NewClient's does.
	Client client.WithWatch

	// ControllerName is the GatewayClass spec.controllerName this gateway
	// owns. Empty means DefaultControllerName.
	ControllerName gwv1.GatewayController

	// GatewayClassName, when set, names a GatewayClass that Start creates
	// with ControllerName if it does not exist, and waits to see accepted.
	// A class of that name owned by another controller is an error. When
	// empty, the gateway serves whatever classes name ControllerName.
	GatewayClassName string

	// Addresses is where Gateways get their addresses: each Gateway gets
	// the next unused address of the prefix (the prefix's own first address
	// and its last are never used), kept for the life of the process. A
	// single address (a /32 or /128) is shared by every Gateway; two
	// Gateways cannot then listen on one port. The zero Prefix means
	// DefaultAddresses.
	Addresses netip.Prefix

	// SharedAddress serves as implementations with one entry point per
	// port do: every Gateway gets the single address of Addresses (which
	// must be one address), each listener port is one socket bound to
	// the wildcard (BindHost) whatever the Gateways' addresses, and the
	// listeners of all Gateways on a port are merged onto it (package
	// sharedport).
	SharedAddress bool
	// BindHost is where a SharedAddress gateway's sockets listen. Empty
	// means the wildcard of the address's family ("0.0.0.0" or "::").
	BindHost string

	// SupportedFeatures is published in the status of the GatewayClasses
	// the gateway accepts.
	SupportedFeatures []gwv1.FeatureName

	// Limits are the data plane's own bounds on a request
	// (dataplane.Limits; zero fields take the defaults). Limits.AddFlags
	// defines a flag for each.
	Limits dataplane.Limits

	// DataPlane, when set, changes the data plane's options before it
	// starts (after Limits are set). ListenAddr is set by Start and must
	// be left alone.
	DataPlane func(*dataplane.Options)

	// Logger receives the components' errors and progress; the zero Logger
	// discards.
	Logger logr.Logger
}

// NewScheme returns a scheme with the types the reference gateway reads
// and writes: the built-in kinds (client-go's scheme) and the Gateway API
// v1 and v1beta1 kinds.
func NewScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, gwv1.Install, gwv1beta1.Install, gwxv1a1.Install} {
		if err := add(s); err != nil {
			return nil, fmt.Errorf("standalone: building the scheme: %w", err)
		}
	}
	return s, nil
}

// NewClient returns a client of the API server cfg names, with NewScheme's
// types. When cfg sets no QPS and burst, the client gets 100 and 200; cfg
// itself is not modified.
func NewClient(cfg *rest.Config) (client.WithWatch, error) {
	cfg = rest.CopyConfig(cfg)
	if cfg.QPS == 0 && cfg.Burst == 0 && cfg.RateLimiter == nil {
		cfg.QPS, cfg.Burst = clientQPS, clientBurst
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = "gatewitness-reference-gateway"
	}
	s, err := NewScheme()
	if err != nil {
		return nil, err
	}
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: s})
	if err != nil {
		return nil, fmt.Errorf("standalone: client for %s: %w", cfg.Host, err)
	}
	return c, nil
}

// Gateway is a running reference gateway. Its methods are safe for
// concurrent use.
type Gateway struct {
	dp     *dataplane.Server
	addrs  *gatewayaddr.Pool
	shared bool // Options.SharedAddress

	cancel context.CancelFunc
	done   sync.WaitGroup
	errs   closeerr.Collector

	closeOnce sync.Once
	closeErr  error
}

// Start checks opts, creates the GatewayClass if Options.GatewayClassName
// asks for it, and starts the data plane and the controller. With a
// GatewayClassName it returns once the controller has accepted the class.
// ctx bounds only the start: once Start has returned, the gateway runs
// until Close.
func Start(ctx context.Context, opts Options) (*Gateway, error) {
	if opts.Client == nil {
		return nil, errors.New("standalone: Options.Client is nil; build one with NewClient")
	}
	if opts.ControllerName == "" {
		opts.ControllerName = DefaultControllerName
	}
	if !opts.Addresses.IsValid() {
		opts.Addresses = netip.MustParsePrefix(DefaultAddresses)
	}
	addrs, err := gatewayaddr.New(opts.Addresses)
	if err != nil {
		return nil, fmt.Errorf("standalone: Options.Addresses: %w", err)
	}
	if opts.SharedAddress && !opts.Addresses.IsSingleIP() {
		return nil, fmt.Errorf("standalone: Options.SharedAddress with Options.Addresses %s; want the one address every Gateway shares, such as 127.0.0.1/32", opts.Addresses)
	}
	if opts.Logger.GetSink() == nil {
		opts.Logger = logr.Discard()
	}
	log := opts.Logger

	if opts.GatewayClassName != "" {
		if err := ensureClass(ctx, opts.Client, opts.GatewayClassName, opts.ControllerName); err != nil {
			return nil, fmt.Errorf("standalone: %w", err)
		}
	}

	dpOpts := dataplane.Options{Logger: log.WithName("dataplane"), Limits: opts.Limits}
	if opts.DataPlane != nil {
		opts.DataPlane(&dpOpts)
	}
	dpOpts.ListenAddr = addrs.ListenAddr
	if opts.SharedAddress {
		dpOpts.ListenAddr = wildcardListenAddr(opts.BindHost, opts.Addresses.Addr())
	}
	dp := dataplane.New(dpOpts)
	g := &Gateway{dp: dp, addrs: addrs, shared: opts.SharedAddress}
	apply := dp.Apply
	if opts.SharedAddress {
		apply = sharedport.Apply(dp.Apply)
	}

	ctl, err := controller.New(controller.Options{
		Client:            opts.Client,
		ControllerName:    opts.ControllerName,
		Apply:             apply,
		Addresses:         addrs.ForGateway,
		SupportedFeatures: opts.SupportedFeatures,
		Logger:            log.WithName("controller"),
	})
	if err != nil {
		dp.Close()
		return nil, fmt.Errorf("standalone: %w", err)
	}
	runCtx, cancel := context.WithCancel(context.Background())
	g.cancel = cancel
	g.done.Go(func() { g.record("controller", ctl.Run(runCtx)) })

	if opts.GatewayClassName != "" {
		if err := waitAccepted(ctx, opts.Client, opts.GatewayClassName); err != nil {
			g.Close()
			return nil, fmt.Errorf("standalone: GatewayClass %q: %w", opts.GatewayClassName, err)
		}
	}
	log.Info("reference gateway running", "controllerName", opts.ControllerName, "addresses", opts.Addresses.String(), "sharedAddress", opts.SharedAddress)
	return g, nil
}

// wildcardListenAddr is the data plane's ListenAddr of a SharedAddress
// gateway: every (merged) Gateway's port on bindHost, by default the
// wildcard of shared's family.
func wildcardListenAddr(bindHost string, shared netip.Addr) func(namespace, name string, port int32) (string, error) {
	if bindHost == "" {
		bindHost = "0.0.0.0"
		if shared.Is6() && !shared.Is4In6() {
			bindHost = "::"
		}
	}
	return func(_, _ string, port int32) (string, error) {
		return net.JoinHostPort(bindHost, strconv.Itoa(int(port))), nil
	}
}

// Addr returns the socket ("ip:port") serving the listener port of the
// Gateway namespace/name: its published address and the listener's port
// (with SharedAddress, the socket of that port, which every Gateway
// shares).
func (g *Gateway) Addr(namespace, name string, port int32) (string, bool) {
	if g.shared {
		return g.dp.Addr(sharedport.Namespace, sharedport.Name(port), port)
	}
	return g.dp.Addr(namespace, name, port)
}

// Close stops the controller, closes the data plane's sockets and
// connections, and waits for their goroutines. It returns what the
// components reported; later calls return the same. Status written to
// the cluster is left as it is.
func (g *Gateway) Close() error {
	g.closeOnce.Do(func() {
		g.cancel()
		g.done.Wait()
		g.record("data plane", g.dp.Close())
		g.closeErr = g.errs.Err()
	})
	return g.closeErr
}

func (g *Gateway) record(what string, err error) { g.errs.Record(what, err) }

// ensureClass creates the GatewayClass name for controllerName, or checks
// that an existing one names it.
func ensureClass(ctx context.Context, c client.Client, name string, controllerName gwv1.GatewayController) error {
	gc := &gwv1.GatewayClass{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       gwv1.GatewayClassSpec{ControllerName: controllerName},
	}
	err := c.Create(ctx, gc)
	if err == nil {
		return nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating GatewayClass %q: %w", name, err)
	}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, gc); err != nil {
		return fmt.Errorf("reading GatewayClass %q: %w", name, err)
	}
	if gc.Spec.ControllerName != controllerName {
		return fmt.Errorf("GatewayClass %q exists with spec.controllerName %q, not %q: choose another class name, or run with the controller name %q",
			name, gc.Spec.ControllerName, controllerName, gc.Spec.ControllerName)
	}
	return nil
}

// waitAccepted waits for the GatewayClass name to be Accepted=True at its
// current generation, by watching it. A watch that ends (an API server
// closes them now and then) is opened again.
func waitAccepted(ctx context.Context, c client.WithWatch, name string) error {
	for {
		w, err := c.Watch(ctx, &gwv1.GatewayClassList{}, client.MatchingFields{"metadata.name": name})
		if err != nil {
			return fmt.Errorf("watching: %w", err)
		}
		done, err := watchAccepted(ctx, w)
		w.Stop()
		if done || err != nil {
			return err
		}
	}
}

// watchAccepted reads w until the class is accepted (true), ctx is done
// (an error) or w ends (false).
func watchAccepted(ctx context.Context, w watch.Interface) (bool, error) {
	for {
		select {
		case <-ctx.Done():
			return false, fmt.Errorf("not accepted by the controller before the start was cancelled: %w", ctx.Err())
		case ev, ok := <-w.ResultChan():
			if !ok {
				return false, nil
			}
			if gc, ok := ev.Object.(*gwv1.GatewayClass); ok && accepted(gc) {
				return true, nil
			}
		}
	}
}

func accepted(gc *gwv1.GatewayClass) bool {
	for _, cond := range gc.Status.Conditions {
		if cond.Type == string(gwv1.GatewayClassConditionStatusAccepted) && cond.Status == metav1.ConditionTrue &&
			cond.ObservedGeneration == gc.Generation {
			return true
		}
	}
	return false
}
