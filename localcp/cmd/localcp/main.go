// Command localcp starts the local control plane (package localcp) and a
// Gateway implementation against it, runs one command with KUBECONFIG
// naming the control plane, and tears everything down when the command
// exits. Without a command it runs until SIGINT or SIGTERM.
//
// The implementation is the reference gateway, in this process, serving
// -gateway-class; or, with -impl, an implementation under test started as
// a host process of its own (see localcp.ControlPlane.StartImplementation):
//
//	localcp -bin-dir DIR -echo-backend DIR/echo-backend \
//	    -gateway-class acme -controller-name example.com/acme \
//	    -impl 'acme-gateway --kubeconfig "$KUBECONFIG" --addresses "$GATEWAY_ADDRESSES"' \
//	    -- gatewitness run --kubeconfig '$KUBECONFIG' --gateway-class acme
//
// An argument of the command that is exactly $KUBECONFIG is replaced by the
// kubeconfig's path. It must run as root (Pod IPs go in a network
// namespace it creates); otherwise it exits with status 3 and says why. Flags it
// refuses (an unusable -pod-cidr, say) make it exit with status 2.
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
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/client-go/discovery"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatewitness/gatewitness/conformance/runner"
	"github.com/gatewitness/gatewitness/gateway/standalone"
	"github.com/gatewitness/gatewitness/localcp"
)

// exitNeedsRoot is the exit status when the process is not root.
const exitNeedsRoot = 3

func main() {
	// An own flag set: the upstream conformance packages that
	// conformance/runner imports register their flags on flag.CommandLine.
	fs := flag.NewFlagSet("localcp", flag.ExitOnError)
	binDir := fs.String("bin-dir", "", "directory of the control plane's binaries (make localcp-build); required")
	echo := fs.String("echo-backend", "", "path of the echo-backend binary run for each echo Pod; required")
	dir := fs.String("dir", "", "directory for data, certificates, the kubeconfig and logs (default: a temporary directory, removed at exit)")
	class := fs.String("gateway-class", "gatewitness", "the GatewayClass the reference gateway (or, with -impl, the implementation) serves; created by localcp. Empty, without -impl: no gateway at all")
	controllerName := fs.String("controller-name", "", "spec.controllerName of the GatewayClass: required with -impl; default for the reference gateway "+string(standalone.DefaultControllerName))
	podCIDR := fs.String("pod-cidr", "auto", "where Pod IPs come from (put in a network namespace localcp creates, routed from the host): IPv4, /30 or wider, not loopback, link-local or multicast, clear of the Service CIDR and of the host's networks; auto picks the first /24 of 10.244.0.0/16 no address or route of the host uses ("+localcp.DefaultPodCIDR+" when free), so several control planes share a host")
	gatewayAddrs := fs.String("gateway-addresses", "", "the prefix Gateway addresses come from, one per Gateway (default "+standalone.DefaultAddresses+" for the reference gateway; for -impl a free /24 of 10.246.0.0/16 picked at start, or "+localcp.DefaultImplementationAddresses+" with -impl-netns=false; given to it as $"+localcp.EnvGatewayAddresses+"); two control planes on one host need different ones")
	implNetns := fs.Bool("impl-netns", true, "run -impl in a network namespace of its own, as a Pod has: it may bind the wildcard (0.0.0.0:80), its Gateway addresses are routed to it from the host, and its $KUBECONFIG names a relay to the API server; false runs it in the host's, where it must bind only its Gateways' addresses")
	impl := fs.String("impl", "", "a shell command that starts the Gateway implementation under test on this host (its controller and data plane) instead of the reference gateway; it gets $KUBECONFIG, $"+localcp.EnvGatewayClass+", $"+localcp.EnvControllerName+" and $"+localcp.EnvGatewayAddresses+", and must run until SIGINT")
	implLog := fs.String("impl-log", "", "file for the -impl command's output (default: stderr)")
	implTimeout := fs.Duration("impl-timeout", 2*time.Minute, "how long -impl has to accept its GatewayClass")
	verbose := fs.Bool("v", false, "copy the components' output to stderr")
	_ = fs.Parse(os.Args[1:])
	cfg, err := parseFlags(*podCIDR, *gatewayAddrs, *class, *controllerName, *impl, *implNetns)
	if err != nil {
		fmt.Fprintf(os.Stderr, "localcp: %v\n", err)
		os.Exit(2)
	}
	cfg.opts = localcp.Options{BinDir: *binDir, EchoBackend: *echo, Dir: *dir, PodCIDR: cfg.podCIDR}
	cfg.implLog, cfg.implTimeout, cfg.verbose = *implLog, *implTimeout, *verbose
	os.Exit(run(cfg, fs.Args()))
}

// config is what the flags ask for.
type config struct {
	opts           localcp.Options
	podCIDR        netip.Prefix
	addresses      netip.Prefix
	class          string
	controllerName string
	impl           string
	implNetns      bool
	implLog        string
	implTimeout    time.Duration
	verbose        bool
}

// parseFlags checks the flags that need more than parsing, before anything
// starts: an unusable Pod CIDR, Gateway addresses that overlap it, and
// -impl without the class it serves.
func parseFlags(podCIDR, gatewayAddrs, class, controllerName, impl string, implNetns bool) (*config, error) {
	c := &config{class: class, controllerName: controllerName, impl: impl, implNetns: implNetns && impl != ""}
	var err error
	if podCIDR == "auto" {
		if c.podCIDR, err = localcp.FreePodCIDR(); err != nil {
			return nil, fmt.Errorf("-pod-cidr auto: %w; give one with -pod-cidr", err)
		}
	} else if c.podCIDR, err = netip.ParsePrefix(podCIDR); err != nil {
		return nil, fmt.Errorf("-pod-cidr %q: %v; want a prefix such as %s", podCIDR, err, localcp.DefaultPodCIDR)
	}
	if err := localcp.CheckPodCIDR(c.podCIDR); err != nil {
		return nil, fmt.Errorf("-pod-cidr: %w", err)
	}
	if err := localcp.CheckPodCIDROnHost(c.podCIDR); err != nil {
		return nil, fmt.Errorf("-pod-cidr: %w", err)
	}
	if gatewayAddrs == "" && c.implNetns {
		// Picked when the namespace is made (localcp.ImplementationOptions.OwnNetwork).
		gatewayAddrs = "auto"
	} else if gatewayAddrs == "" {
		gatewayAddrs = standalone.DefaultAddresses
		if impl != "" {
			gatewayAddrs = localcp.DefaultImplementationAddresses
		}
	}
	if gatewayAddrs == "auto" {
		c.addresses = netip.Prefix{}
	} else if c.addresses, err = netip.ParsePrefix(gatewayAddrs); err != nil {
		return nil, fmt.Errorf("-gateway-addresses %q: %v; want a prefix such as %s", gatewayAddrs, err, localcp.DefaultImplementationAddresses)
	}
	if c.addresses.Overlaps(c.podCIDR) {
		return nil, fmt.Errorf("-gateway-addresses %s overlaps -pod-cidr %s: a Gateway and a Pod could get one address; want a loopback range such as %s", c.addresses, c.podCIDR.Masked(), localcp.DefaultImplementationAddresses)
	}
	if impl != "" {
		if class == "" {
			return nil, errors.New("-impl needs -gateway-class: the GatewayClass localcp creates for the implementation and the suite uses")
		}
		if controllerName == "" {
			return nil, errors.New("-impl needs -controller-name: the spec.controllerName the implementation watches for, such as example.com/gateway-controller")
		}
	} else if c.controllerName == "" {
		c.controllerName = string(standalone.DefaultControllerName)
	}
	return c, nil
}

func run(cfg *config, command []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	opts := cfg.opts
	if cfg.verbose {
		opts.Log = os.Stderr
	}
	t0 := time.Now()
	cp, err := localcp.Start(ctx, opts)
	if errors.Is(err, localcp.ErrNeedsRoot) {
		fmt.Fprintf(os.Stderr, "%v; skipped\n", err)
		return exitNeedsRoot
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "%v\n", err)
		return 1
	}
	defer func() {
		if err := cp.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "%v\n", err)
		}
	}()
	version := "unknown version"
	if dc, err := discovery.NewDiscoveryClientForConfig(cp.RestConfig()); err == nil {
		if v, err := dc.ServerVersion(); err == nil {
			version = v.GitVersion
		}
	}
	fmt.Fprintf(os.Stderr, "localcp: control plane (Kubernetes %s) up in %v; kubeconfig %s\n", version, time.Since(t0).Round(time.Millisecond), cp.Kubeconfig())

	switch {
	case cfg.impl != "":
		impl, closeOutput, err := startImplementation(ctx, cp, cfg, command)
		defer closeOutput()
		if err != nil {
			fmt.Fprintf(os.Stderr, "%v\n", err)
			return 1
		}
		defer func() {
			if err := impl.Stop(); err != nil {
				fmt.Fprintf(os.Stderr, "%v\n", err)
			}
		}()
		done := make(chan struct{})
		defer close(done)
		go func() {
			select {
			case <-impl.Exited():
				fmt.Fprintf(os.Stderr, "localcp: the implementation exited while it was still needed (%v); the rest of the run has no gateway\n", impl.Err())
			case <-done:
			}
		}()
	case cfg.class != "":
		c, err := standalone.NewClient(cp.RestConfig())
		if err != nil {
			fmt.Fprintf(os.Stderr, "localcp: %v\n", err)
			return 1
		}
		gw, err := standalone.Start(ctx, standalone.Options{Client: c, GatewayClassName: cfg.class, ControllerName: gwv1.GatewayController(cfg.controllerName),
			Addresses: cfg.addresses, SupportedFeatures: runner.ReferenceClassFeatures()})
		if err != nil {
			fmt.Fprintf(os.Stderr, "localcp: reference gateway: %v\n", err)
			return 1
		}
		defer gw.Close()
		fmt.Fprintf(os.Stderr, "localcp: reference gateway serving GatewayClass %s; Gateway addresses from %s\n", cfg.class, cfg.addresses)
	}

	if len(command) == 0 {
		<-ctx.Done()
		return 0
	}
	args := make([]string, len(command))
	for i, a := range command {
		if a == "$KUBECONFIG" {
			a = cp.Kubeconfig()
		}
		args[i] = a
	}
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), "KUBECONFIG="+cp.Kubeconfig())
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	t1 := time.Now()
	err = cmd.Run()
	fmt.Fprintf(os.Stderr, "localcp: command finished in %v: %v\n", time.Since(t1).Round(time.Millisecond), err)
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode()
	}
	if err != nil {
		return 1
	}
	return 0
}

// startImplementation starts -impl and waits for it to accept its class,
// then says where the suite (command) will take its features from.
// closeOutput, to be called once the implementation has stopped, flushes
// or closes where its output goes; it is never nil.
func startImplementation(ctx context.Context, cp *localcp.ControlPlane, cfg *config, command []string) (_ *localcp.Implementation, closeOutput func(), _ error) {
	p := &prefixed{w: os.Stderr, prefix: "impl: "}
	var out io.Writer = p
	closeOutput = p.Flush
	if cfg.implLog != "" {
		if err := os.MkdirAll(filepath.Dir(cfg.implLog), 0o755); err != nil {
			return nil, func() {}, fmt.Errorf("localcp: -impl-log: %w", err)
		}
		f, err := os.Create(cfg.implLog)
		if err != nil {
			return nil, func() {}, fmt.Errorf("localcp: -impl-log: %w", err)
		}
		out, closeOutput = f, func() { f.Close() }
		fmt.Fprintf(os.Stderr, "localcp: the implementation's output goes to %s\n", cfg.implLog)
	}
	impl, err := cp.StartImplementation(ctx, localcp.ImplementationOptions{
		Command:        cfg.impl,
		GatewayClass:   cfg.class,
		ControllerName: cfg.controllerName,
		Addresses:      cfg.addresses,
		Output:         out,
		AcceptTimeout:  cfg.implTimeout,
		Progress:       os.Stderr,
		OwnNetwork:     cfg.implNetns,
	})
	if err != nil {
		return nil, closeOutput, err
	}
	fmt.Fprintf(os.Stderr, "localcp: %s; its Gateways get addresses from %s\n",
		featuresMessage(cfg.class, len(impl.SupportedFeatures), featureFlag(command)), impl.Addresses)
	return impl, closeOutput, nil
}

// featureFlag returns the flag of the suite's command line that claims
// features (--supported-features or --all-features, in either of the
// flag package's forms), or "" if it has none.
func featureFlag(command []string) string {
	for _, a := range command {
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if strings.HasPrefix(a, "-") && (name == "supported-features" || name == "all-features") {
			return "--" + name
		}
	}
	return ""
}

// featuresMessage says what the implementation accepted and where the
// suite takes its features from: the flag given on its command line, else
// the n features the class publishes; with neither, what to give it.
func featuresMessage(class string, n int, flag string) string {
	switch {
	case flag != "":
		return fmt.Sprintf("the implementation accepted GatewayClass %s (it publishes %d supported features); the suite takes its features from %s", class, n, flag)
	case n > 0:
		return fmt.Sprintf("the implementation accepted GatewayClass %s and publishes %d supported features, which the suite reads", class, n)
	}
	return fmt.Sprintf("the implementation accepted GatewayClass %s but publishes no status.supportedFeatures, and the suite is given no --supported-features: set SUPPORTED_FEATURES=...", class)
}

// prefixed writes the lines written to it to w, each behind prefix. A
// line is written once it is complete; Flush writes a last partial one.
type prefixed struct {
	w      io.Writer
	prefix string

	mu   sync.Mutex
	part []byte
}

func (p *prefixed) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.part = append(p.part, b...)
	for {
		i := bytes.IndexByte(p.part, '\n')
		if i < 0 {
			return len(b), nil
		}
		if _, err := fmt.Fprintf(p.w, "%s%s", p.prefix, p.part[:i+1]); err != nil {
			return 0, err
		}
		p.part = p.part[i+1:]
	}
}

// Flush writes a partial last line, if any.
func (p *prefixed) Flush() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.part) > 0 {
		fmt.Fprintf(p.w, "%s%s\n", p.prefix, p.part)
		p.part = nil
	}
}
