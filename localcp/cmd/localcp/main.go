// Command localcp starts the local control plane (package localcp) and the
// reference gateway as a controller against it, runs one command with
// KUBECONFIG naming the control plane, and tears everything down when the
// command exits. Without a command it runs until SIGINT or SIGTERM.
//
//	go run ./cmd/localcp -bin-dir ../.cache/localcp/bin -echo-backend ../.cache/localcp/bin/echo-backend \
//	    -- go run ./cmd/gatecheck run --kubeconfig '$KUBECONFIG' --gateway-class gatecheck
//
// An argument of the command that is exactly $KUBECONFIG is replaced by the
// kubeconfig's path. It must run as root (Pod IPs go on the loopback
// interface); otherwise it exits with status 3 and says why.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatecheck/gatecheck/conformance/runner"
	"github.com/gatecheck/gatecheck/gateway/standalone"
	"github.com/gatecheck/gatecheck/localcp"
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
	class := fs.String("gateway-class", "gatecheck", "the GatewayClass the reference gateway creates and serves; empty runs no gateway")
	podCIDR := fs.String("pod-cidr", localcp.DefaultPodCIDR, "where Pod IPs come from (added to lo); two control planes on one host need different ones")
	gatewayAddrs := fs.String("gateway-addresses", standalone.DefaultAddresses, "the prefix Gateway addresses come from; two control planes on one host need different ones")
	verbose := fs.Bool("v", false, "copy the components' output to stderr")
	_ = fs.Parse(os.Args[1:])
	pods, err := netip.ParsePrefix(*podCIDR)
	if err != nil {
		fmt.Fprintf(os.Stderr, "localcp: -pod-cidr %q: %v; want a prefix such as %s\n", *podCIDR, err, localcp.DefaultPodCIDR)
		os.Exit(2)
	}
	addrs, err := netip.ParsePrefix(*gatewayAddrs)
	if err != nil {
		fmt.Fprintf(os.Stderr, "localcp: -gateway-addresses %q: %v; want a prefix such as %s\n", *gatewayAddrs, err, standalone.DefaultAddresses)
		os.Exit(2)
	}
	os.Exit(run(localcp.Options{BinDir: *binDir, EchoBackend: *echo, Dir: *dir, PodCIDR: pods}, addrs, *class, *verbose, fs.Args()))
}

func run(opts localcp.Options, addrs netip.Prefix, class string, verbose bool, command []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if verbose {
		opts.Log = os.Stderr
	}
	t0 := time.Now()
	cp, err := localcp.Start(ctx, opts)
	if errors.Is(err, localcp.ErrNeedsRoot) {
		fmt.Fprintf(os.Stderr, "localcp: skipped: %v\n", err)
		return exitNeedsRoot
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "localcp: %v\n", err)
		return 1
	}
	defer func() {
		if err := cp.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "localcp: close: %v\n", err)
		}
	}()
	fmt.Fprintf(os.Stderr, "localcp: control plane up in %v; kubeconfig %s\n", time.Since(t0).Round(time.Millisecond), cp.Kubeconfig())

	if class != "" {
		c, err := standalone.NewClient(cp.RestConfig())
		if err != nil {
			fmt.Fprintf(os.Stderr, "localcp: %v\n", err)
			return 1
		}
		var supported []gwv1.FeatureName
		for _, f := range runner.ReferenceFeatures() {
			supported = append(supported, gwv1.FeatureName(f))
		}
		gw, err := standalone.Start(ctx, standalone.Options{Client: c, GatewayClassName: class, Addresses: addrs, SupportedFeatures: supported})
		if err != nil {
			fmt.Fprintf(os.Stderr, "localcp: reference gateway: %v\n", err)
			return 1
		}
		defer gw.Close()
		fmt.Fprintf(os.Stderr, "localcp: reference gateway serving GatewayClass %s\n", class)
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
