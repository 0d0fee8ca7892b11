// Command lagging-gateway runs the reference gateway against a Kubernetes
// API server (as `gatewitness gateway` does) with a data plane that is
// eventually consistent on purpose, as real ones are, so that the suite's
// cluster path can be run against the eventual-consistency breakages of
// conformance/tests/breakages_test.go on a real API server (make
// test-cluster-lagging-replica, localcp/README.md). It is a test tool: the
// lag is the breakage, and no production package has a switch for it.
//
//	lagging-gateway --kubeconfig PATH --controller-name NAME --listen-host PREFIX [--lag 3s] [--replicas 2]
//	                [--late-apply 0s] [--reload-restarts-timers]
//
// With --replicas 2 (the default) the data plane is two replicas behind
// every Gateway address: each opens its own socket for each listener port,
// both bound to the same address and port with SO_REUSEPORT, so the
// kernel hands each new connection to one of the two, as it does for two
// proxy processes on one socket. The controller's status follows the
// first replica; the second applies every change --lag after it (the
// lagging-replica breakage: --lag 3s). --late-apply hands every change to
// the first replica that long after the controller made it, with status
// written at once (programmed-before-served: --replicas 1 --late-apply
// 5s); --reload-restarts-timers makes each change restart the client
// timeout of connections waiting for a request and the limits of open
// tunnels, as a reloading proxy does (late-apply-restarts-timers, with
// --replicas 1 --late-apply 500ms).
//
// What the second replica models: a proxy that reloads --lag after every
// change (HAProxy, nginx behind a slow reload) and reads the
// configuration current at its reload (dataplanetest.LaggingReplica): it
// serves at any time a configuration at least as new as that of --lag
// before. The harsher form, a stream that delivers every snapshot --lag
// late, in order, was modelled until it served the controller's
// milliseconds-long states (a new Gateway before its informer had the
// backend's endpoints) seconds later, long after the other replica had
// left them: 503s no real proxy reading its configuration would give.
// With SO_REUSEPORT the kernel spreads a port's connections over the sockets
// bound to it only: until the second replica binds a new Gateway's port,
// every connection goes to the first, so no request can see it lag, and
// when it binds it serves the snapshot of the Gateway's creation. A suite
// whose own Gateways are created before their backends are ready sees
// that replica's 503s --lag after its evidence; gatewitness's tests
// create theirs last (conformance/tests/own_gateway.go). Tests of
// upstream's, which take three answers in a row on the shared Gateways
// for served, are not covered by that: their verdicts can still change
// (docs/semantics/timing-tolerance.md, "through localcp"). Each replica
// keeps its own retry budgets, as GEP-3388's clients do.
//
// The GatewayClass is not created: the harness that starts the command
// (localcp's -impl) creates it and waits for it to be accepted. The
// command runs until SIGINT or SIGTERM.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/sys/unix"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatewitness/gatewitness/conformance/runner"
	"github.com/gatewitness/gatewitness/gateway/controller"
	"github.com/gatewitness/gatewitness/gateway/dataplane"
	"github.com/gatewitness/gatewitness/gateway/dataplane/dataplanetest"
	"github.com/gatewitness/gatewitness/gateway/gatewayaddr"
	"github.com/gatewitness/gatewitness/gateway/ir"
	"github.com/gatewitness/gatewitness/gateway/standalone"
	"github.com/gatewitness/gatewitness/gateway/standalone/standalonecmd"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// settings are the parsed flags.
type settings struct {
	kubeconfig     string
	controllerName gwv1.GatewayController
	addresses      netip.Prefix
	// shape is how the data plane lags.
	shape   shape
	verbose bool
}

// shape is how the data plane lags behind the controller.
type shape struct {
	// replicas is 1 or 2.
	replicas int
	// lag is how long after the first replica the second applies each
	// change (replicas 2 only).
	lag time.Duration
	// lateApply is how long after the controller made it the first
	// replica applies each change; status is written at once.
	lateApply time.Duration
	// reloadRestartsTimers: each change restarts the client timeout of
	// idle connections and the limits of open tunnels (dataplanetest.Hooks).
	reloadRestartsTimers bool
}

// maxDelay bounds --lag and --late-apply: longer than upstream's
// MaxTimeToConsistency default (30 s) says nothing more.
const maxDelay = time.Minute

// parseFlags parses the command's flags; flag.ErrHelp for -help.
func parseFlags(args []string, stderr io.Writer) (*settings, error) {
	fs := flag.NewFlagSet("lagging-gateway", flag.ContinueOnError)
	fs.SetOutput(stderr)
	kubeconfig := fs.String("kubeconfig", os.Getenv("KUBECONFIG"), "the kubeconfig of the cluster (default $KUBECONFIG); required")
	controllerName := fs.String("controller-name", string(standalone.DefaultControllerName), "the GatewayClass spec.controllerName the gateway owns")
	listenHost := fs.String("listen-host", standalone.DefaultAddresses, "the prefix Gateway addresses come from, one address each (localcp passes $GATEWAY_ADDRESSES)")
	replicas := fs.Int("replicas", 2, "data-plane replicas behind every Gateway address: 1, or 2 (their sockets bound with SO_REUSEPORT)")
	lag := fs.Duration("lag", 3*time.Second, "with --replicas 2: how long after the first replica the second applies every change (0: at once)")
	lateApply := fs.Duration("late-apply", 0, "how long after the controller made it the first replica applies every change; status is written at once")
	restarts := fs.Bool("reload-restarts-timers", false, "each applied change restarts the client timeout of idle connections and the limits of open tunnels")
	verbose := fs.Bool("v", false, "log per-request details")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q; it takes flags only (-help lists them)", fs.Arg(0))
	}
	if *kubeconfig == "" {
		return nil, errors.New("--kubeconfig is required: the path of the cluster's kubeconfig (or set $KUBECONFIG)")
	}
	prefix, err := netip.ParsePrefix(*listenHost)
	if err != nil {
		return nil, fmt.Errorf("--listen-host %q: %v; want a prefix such as %s", *listenHost, err, standalone.DefaultAddresses)
	}
	if *replicas != 1 && *replicas != 2 {
		return nil, fmt.Errorf("--replicas %d: want 1 or 2", *replicas)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"--lag", *lag}, {"--late-apply", *lateApply}} {
		if d.v < 0 || d.v > maxDelay {
			return nil, fmt.Errorf("%s %s: want a duration from 0 to %s", d.name, d.v, maxDelay)
		}
	}
	lagSet := false
	fs.Visit(func(f *flag.Flag) { lagSet = lagSet || f.Name == "lag" })
	if *replicas == 1 && lagSet {
		return nil, errors.New("--lag with --replicas 1: a lag is the second replica's; set --replicas 2, or --late-apply for one replica")
	}
	s := &settings{
		kubeconfig:     *kubeconfig,
		controllerName: gwv1.GatewayController(*controllerName),
		addresses:      prefix,
		shape:          shape{replicas: *replicas, lateApply: *lateApply, reloadRestartsTimers: *restarts},
		verbose:        *verbose,
	}
	if *replicas == 2 {
		s.shape.lag = *lag
	}
	return s, nil
}

// run is the command; it returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	s, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "lagging-gateway: %v\n", err)
		return 2
	}
	log := standalonecmd.Logger(stderr, s.verbose)
	c, code, err := standalonecmd.Client(s.kubeconfig)
	if err != nil {
		fmt.Fprintf(stderr, "lagging-gateway: %v\n", err)
		return code
	}
	addrs, err := gatewayaddr.New(s.addresses)
	if err != nil {
		fmt.Fprintf(stderr, "lagging-gateway: --listen-host %s: %v\n", s.addresses, err)
		return 2
	}
	dp := newDataPlane(s.shape, addrs.ListenAddr, log)
	defer func() {
		if err := dp.close(); err != nil {
			fmt.Fprintf(stderr, "lagging-gateway: closing the data plane: %v\n", err)
		}
	}()
	ctl, err := controller.New(controller.Options{
		Client:            c,
		ControllerName:    s.controllerName,
		Apply:             dp.apply,
		Addresses:         addrs.ForGateway,
		SupportedFeatures: runner.ReferenceClassFeatures(),
		Logger:            log.WithName("controller"),
	})
	if err != nil {
		fmt.Fprintf(stderr, "lagging-gateway: %v\n", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fmt.Fprintf(stdout, "lagging-gateway: controller %s; Gateway addresses from %s; %s; stop with Ctrl-C\n",
		s.controllerName, s.addresses, s.shape)
	if err := ctl.Run(ctx); err != nil && ctx.Err() == nil {
		fmt.Fprintf(stderr, "lagging-gateway: the controller stopped: %v\n", err)
		return 1
	}
	return 0
}

// String says what the data plane does, for the start line.
func (sh shape) String() string {
	s := "one data-plane replica"
	if sh.replicas == 2 {
		s = fmt.Sprintf("two data-plane replicas on SO_REUSEPORT sockets, the second %s behind the first", sh.lag)
	}
	if sh.lateApply > 0 {
		s += fmt.Sprintf(", changes applied %s after status is written", sh.lateApply)
	}
	if sh.reloadRestartsTimers {
		s += ", each change restarting idle and tunnel timers"
	}
	return s
}

// replicatedDataPlane is the data plane's replicas and what the controller
// hands each snapshot to.
type replicatedDataPlane struct {
	replicas []*dataplane.Server
	// apply hands a snapshot to every replica as the shape says and
	// returns the first replica's answer (nil at once with a late apply).
	apply func(*ir.Config) error
}

// newDataPlane builds the replicas sh asks for, each listening where
// listenAddr says, on sockets bound with SO_REUSEPORT.
func newDataPlane(sh shape, listenAddr func(namespace, name string, port int32) (string, error), log logr.Logger) *replicatedDataPlane {
	var hooks dataplanetest.Hooks
	hooks.ReloadRestartsTimers = sh.reloadRestartsTimers
	d := &replicatedDataPlane{}
	for i := range sh.replicas {
		d.replicas = append(d.replicas, dataplanetest.NewServer(dataplane.Options{
			ListenAddr: listenAddr,
			Listen:     listenReusePort,
			Logger:     log.WithName(fmt.Sprintf("dataplane-%d", i+1)),
		}, hooks))
	}
	first := logged(d.replicas[0].Apply, log.WithName("dataplane-1"))
	if sh.lateApply > 0 {
		first = dataplanetest.LateApply(first, sh.lateApply, log.WithName("dataplane-1"))
	}
	d.apply = first
	if sh.replicas == 2 {
		second := logged(d.replicas[1].Apply, log.WithName("dataplane-2"))
		switch delay := sh.lateApply + sh.lag; {
		case sh.lag > 0:
			second = dataplanetest.LaggingReplica(second, delay, log.WithName("dataplane-2"))
		case delay > 0:
			second = dataplanetest.LateApply(second, delay, log.WithName("dataplane-2"))
		}
		d.apply = bothReplicas(first, second, log.WithName("dataplane-2"))
	}
	return d
}

// logged is apply with a line in log for every snapshot it takes, so
// that a run's implementation log says when each replica served what.
func logged(apply func(*ir.Config) error, log logr.Logger) func(*ir.Config) error {
	return func(cfg *ir.Config) error {
		err := apply(cfg)
		routes := 0
		for _, g := range cfg.Gateways {
			for _, l := range g.Listeners {
				routes += len(l.HTTPRoutes) + len(l.GRPCRoutes) + len(l.TLSRoutes)
			}
		}
		log.Info("applied a snapshot", "gateways", len(cfg.Gateways), "routesOnListeners", routes, "refused", err != nil)
		return err
	}
}

// bothReplicas hands each snapshot to the first replica, whose answer the
// controller's status follows, and to the second, whose errors go to log.
func bothReplicas(first, second func(*ir.Config) error, log logr.Logger) func(*ir.Config) error {
	var mu sync.Mutex // one snapshot at a time, in the controller's order
	return func(cfg *ir.Config) error {
		mu.Lock()
		defer mu.Unlock()
		err := first(cfg)
		if err2 := second(cfg); err2 != nil {
			log.Error(err2, "the second replica refused the snapshot")
		}
		return err
	}
}

// close closes every replica.
func (d *replicatedDataPlane) close() error {
	var errs []error
	for i, r := range d.replicas {
		if err := r.Close(); err != nil {
			errs = append(errs, fmt.Errorf("replica %d: %w", i+1, err))
		}
	}
	return errors.Join(errs...)
}

// reusePort is the ListenConfig of every replica's sockets: SO_REUSEPORT
// set before bind, so the replicas' sockets share each address and port
// and the kernel spreads new connections over them.
var reusePort = net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
	var sockErr error
	if err := c.Control(func(fd uintptr) {
		sockErr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
	}); err != nil {
		return err
	}
	if sockErr != nil {
		return fmt.Errorf("setting SO_REUSEPORT: %w", sockErr)
	}
	return nil
}}

// listenReusePort is dataplane.Options.Listen with reusePort.
func listenReusePort(network, address string) (net.Listener, error) {
	return reusePort.Listen(context.Background(), network, address)
}
