package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatewitness/gatewitness/conformance/runner"
	"github.com/gatewitness/gatewitness/gateway/dataplane"
	"github.com/gatewitness/gatewitness/gateway/standalone"
	"github.com/gatewitness/gatewitness/gateway/standalone/standalonecmd"
)

const gatewayUsage = `Usage: gatewitness gateway --kubeconfig PATH [flags]

Runs the reference gateway against the API server a kubeconfig names: the
controller watches the cluster and writes status there, and the data plane
listens on this host. It creates the GatewayClass --gateway-class (unless
empty) if it does not exist, and publishes its supported features there.

Each Gateway gets an address of --listen-host, published in its status, and
every listener is served on that address and on the listener's own port, so
clients (such as gatewitness run --kubeconfig) dial the published address as
is. On Linux every address of 127.0.0.0/8 is local: the default needs no
set-up. Ports below 1024 need root, CAP_NET_BIND_SERVICE or a lower
net.ipv4.ip_unprivileged_port_start. Backends are dialled at their
EndpointSlice addresses, so Pod IPs must be routable from this host.

With --shared-address it serves as implementations with one entry point per
port do: every Gateway gets the one address --listen-host, each listener port
is one socket on the wildcard, and the listeners of all Gateways on a port
are merged onto it (a listener whose protocol differs from the port's first
is not served; the port's connection timeouts are its first Gateway's).

It runs until SIGINT or SIGTERM, then closes its sockets and exits 0;
status written to the cluster stays.

The -limit-* flags are the data plane's own bounds on what one client may
take of it (docs/semantics/request-limits.md gives each default and its
anchors in Envoy, nginx and HAProxy); a negative value turns a bound off.

Flags:
`

// gatewayOptions are the parsed flags of gatewitness gateway.
type gatewayOptions struct {
	kubeconfig string
	opts       standalone.Options
	verbose    bool
}

// parseGatewayFlags parses the flags of gatewitness gateway. It returns
// flag.ErrHelp for -help, and an error naming the flag for bad values.
func parseGatewayFlags(args []string, stdout io.Writer) (*gatewayOptions, error) {
	fs := flag.NewFlagSet("gatewitness gateway", flag.ContinueOnError)
	// The flag package prints nothing: -help's text goes to stdout (where
	// it can be paged), an error is one line on stderr (gatewayCommand).
	fs.SetOutput(io.Discard)
	var help bytes.Buffer
	fs.Usage = func() {
		fs.SetOutput(&help)
		fmt.Fprint(&help, gatewayUsage)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	var featureNames []string
	for _, f := range runner.ReferenceClassFeatures() {
		featureNames = append(featureNames, string(f))
	}
	kubeconfig := fs.String("kubeconfig", os.Getenv("KUBECONFIG"), "the kubeconfig of the cluster (default $KUBECONFIG); required")
	listenHost := fs.String("listen-host", standalone.DefaultAddresses,
		"where Gateway addresses come from: a prefix, each Gateway getting an address of its own, or one address that every Gateway shares (then two Gateways cannot use one port)")
	shared := fs.Bool("shared-address", false,
		"serve as implementations with one entry point per port do: every Gateway gets the one address --listen-host (which must be one address), each listener port is one socket bound to the wildcard (0.0.0.0), and the listeners of all Gateways on a port share it; binding the wildcard needs a network namespace of the gateway's own (or a host where nothing else uses those ports)")
	controllerName := fs.String("controller-name", string(standalone.DefaultControllerName), "the GatewayClass spec.controllerName the gateway owns")
	class := fs.String("gateway-class", "gatewitness", "the GatewayClass to create if missing and wait for; empty: serve any class of --controller-name")
	supported := fs.String("supported-features", strings.Join(featureNames, ","),
		"comma-separated features published in the GatewayClass status (default: those the reference gateway implements)")
	verbose := fs.Bool("v", false, "log per-request details and watch retries")
	var limits dataplane.Limits
	limits.AddFlags(fs) // -limit-*: the data plane's own bounds (docs/semantics/request-limits.md)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			stdout.Write(help.Bytes())
			return nil, err
		}
		return nil, fmt.Errorf("%v%s", err, flagHint(fs, err))
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q; it takes flags only (gatewitness gateway -help)", fs.Arg(0))
	}
	if *kubeconfig == "" {
		return nil, errors.New("--kubeconfig is required: the path of the cluster's kubeconfig (or set $KUBECONFIG)")
	}
	prefix, err := parseListenHost(*listenHost)
	if err != nil {
		return nil, err
	}
	if *controllerName == "" || !strings.Contains(*controllerName, "/") {
		return nil, fmt.Errorf("--controller-name %q: want a domain-prefixed path such as %q", *controllerName, standalone.DefaultControllerName)
	}
	g := &gatewayOptions{kubeconfig: *kubeconfig, verbose: *verbose}
	if *shared && !prefix.IsSingleIP() {
		return nil, fmt.Errorf("--shared-address with --listen-host %s: want the one address every Gateway shares, such as 127.0.0.1", *listenHost)
	}
	g.opts.Addresses = prefix
	g.opts.Limits = limits
	g.opts.SharedAddress = *shared
	g.opts.ControllerName = gwv1.GatewayController(*controllerName)
	g.opts.GatewayClassName = *class
	for f := range strings.SplitSeq(*supported, ",") {
		if f = strings.TrimSpace(f); f != "" {
			g.opts.SupportedFeatures = append(g.opts.SupportedFeatures, gwv1.FeatureName(f))
		}
	}
	return g, nil
}

// parseListenHost parses --listen-host: a CIDR prefix, or one address.
func parseListenHost(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("--listen-host %q: %v; want a prefix such as %s or an address such as 127.0.0.1", s, err, standalone.DefaultAddresses)
		}
		return p, nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("--listen-host %q: not an IP address or prefix; want a prefix such as %s or an address such as 127.0.0.1", s, standalone.DefaultAddresses)
	}
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// gatewayCommand is `gatewitness gateway`.
func gatewayCommand(args []string, stdout, stderr io.Writer) int {
	g, err := parseGatewayFlags(args, stdout)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "gatewitness gateway: %v\n", err)
		return 2
	}
	c, code, err := standalonecmd.Client(g.kubeconfig)
	if err != nil {
		fmt.Fprintf(stderr, "gatewitness gateway: %v\n", err)
		return code
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return serveGateway(ctx, c, g, stdout, stderr)
}

// startTimeout bounds the start: creating the class and seeing it
// accepted take a few round trips to the API server.
const startTimeout = 2 * time.Minute

// serveGateway runs the gateway on c until ctx is done, and returns the
// exit status.
func serveGateway(ctx context.Context, c client.WithWatch, g *gatewayOptions, stdout, stderr io.Writer) int {
	log := standalonecmd.Logger(stderr, g.verbose)
	g.opts.Client = c
	g.opts.Logger = log

	startCtx, cancel := context.WithTimeout(ctx, startTimeout)
	gw, err := standalone.Start(startCtx, g.opts)
	cancel()
	if err != nil {
		fmt.Fprintf(stderr, "gatewitness gateway: %v\n", err)
		return 1
	}
	class := g.opts.GatewayClassName
	if class == "" {
		class = "(any)"
	}
	fmt.Fprintf(stdout, "gatewitness gateway: serving GatewayClass %s (controller %s); Gateway addresses from %s; stop with Ctrl-C\n",
		class, g.opts.ControllerName, g.opts.Addresses)
	<-ctx.Done()
	if err := gw.Close(); err != nil {
		fmt.Fprintf(stderr, "gatewitness gateway: stopping: %v\n", err)
		return 1
	}
	fmt.Fprintln(stdout, "gatewitness gateway: stopped")
	return 0
}
