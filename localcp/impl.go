package localcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatewitness/gatewitness/internal/childproc"
	"github.com/gatewitness/gatewitness/internal/tailbuf"
)

// DefaultImplementationAddresses is the loopback range a Gateway
// implementation run on the host (StartImplementation) gives its Gateways
// addresses from, unless ImplementationOptions.Addresses says otherwise.
// Every address of 127.0.0.0/8 is local on Linux, so binding one needs no
// set-up. It is clear of the ranges gatewitness itself uses: 127.1.0.0/16
// (the reference gateway's Gateways) and 127.2.0.0/16 (in-process
// backends).
const DefaultImplementationAddresses = "127.20.0.0/16"

// Environment variables StartImplementation sets for the implementation's
// command, besides KUBECONFIG.
const (
	EnvGatewayClass      = "GATEWAY_CLASS"
	EnvControllerName    = "CONTROLLER_NAME"
	EnvGatewayAddresses  = "GATEWAY_ADDRESSES"
	defaultAcceptTimeout = 2 * time.Minute
	implTailBytes        = 4 << 10
)

// progressEvery is how often a wait says what it is waiting for; tests
// shorten it.
var progressEvery = 5 * time.Second

// ImplementationOptions configure a Gateway API implementation under test
// that runs on the host as a process of its own: its controller and its
// data plane, which must listen on this host.
type ImplementationOptions struct {
	// Command starts the implementation; it is run with sh -c, so it may
	// use the shell's quoting and $VARIABLES. It must run until SIGINT or
	// SIGTERM. Its environment is the harness's, plus KUBECONFIG (the
	// control plane's admin kubeconfig), GATEWAY_CLASS, CONTROLLER_NAME and
	// GATEWAY_ADDRESSES (the fields below). Required.
	Command string

	// GatewayClass is the GatewayClass created for the implementation, with
	// spec.controllerName ControllerName. Both are required.
	GatewayClass   string
	ControllerName string

	// Addresses is the range the implementation gives its Gateways
	// addresses from, one address each, published in the Gateway's
	// status.addresses and bound by the data plane on the listeners' ports.
	// The zero Prefix means DefaultImplementationAddresses.
	Addresses netip.Prefix

	// Output receives the command's stdout and stderr; nil discards them.
	// The last few KiB are kept for the errors StartImplementation and
	// Stop return.
	Output io.Writer

	// AcceptTimeout bounds the wait for the implementation to accept the
	// GatewayClass; zero means 2 minutes.
	AcceptTimeout time.Duration

	// Progress receives a line every few seconds while the start waits;
	// nil discards.
	Progress io.Writer

	// OwnNetwork runs the command in a network namespace of its own, as a
	// Pod has (implnet.go): it may then bind any address and port, the
	// wildcard 0.0.0.0:80 included, and the host reaches its Gateways at
	// Addresses, which must then be a routable unicast range (not
	// loopback); the zero Prefix picks a free /24 of 10.246.0.0/16. The
	// command's KUBECONFIG names a relay to the API server.
	OwnNetwork bool
}

// Implementation is a running implementation under test.
type Implementation struct {
	// Addresses is the range its Gateways get addresses from.
	Addresses netip.Prefix
	// NetNS is the network namespace it runs in; empty for the host's.
	NetNS string

	net  *implNetwork
	cmd  *exec.Cmd
	done chan struct{} // closed when the command has exited
	err  error         // its exit status, set before done is closed
	tail *tailbuf.Buffer

	// SupportedFeatures are the features the implementation publishes in
	// the GatewayClass status, when it accepted the class.
	SupportedFeatures []gwv1.FeatureName

	stopOnce sync.Once
	closeNet sync.Once
	stopErr  error
}

// StartImplementation creates the GatewayClass opts names, starts the
// implementation's command and waits, bounded by opts.AcceptTimeout, until
// the implementation has accepted the class (Accepted=True at the class's
// generation). It fails at once when the command exits during the wait,
// with the end of its output.
func (cp *ControlPlane) StartImplementation(ctx context.Context, opts ImplementationOptions) (*Implementation, error) {
	if strings.TrimSpace(opts.Command) == "" {
		return nil, errors.New("localcp: ImplementationOptions.Command is empty; want the shell command that starts the implementation's controller and data plane")
	}
	if opts.GatewayClass == "" || opts.ControllerName == "" {
		return nil, errors.New("localcp: ImplementationOptions.GatewayClass and ControllerName are required: the class the suite uses, and the spec.controllerName the implementation watches for")
	}
	if !opts.Addresses.IsValid() && !opts.OwnNetwork {
		opts.Addresses = netip.MustParsePrefix(DefaultImplementationAddresses)
	}
	if opts.AcceptTimeout == 0 {
		opts.AcceptTimeout = defaultAcceptTimeout
	}
	progress := opts.Progress
	if progress == nil {
		progress = io.Discard
	}
	c, err := cp.gatewayClient()
	if err != nil {
		return nil, err
	}
	if err := createGatewayClass(ctx, c, opts.GatewayClass, opts.ControllerName); err != nil {
		return nil, err
	}

	tail := tailbuf.New(implTailBytes)
	out := io.Writer(tail)
	if opts.Output != nil {
		out = io.MultiWriter(opts.Output, tail)
	}
	cmd := exec.Command("sh", "-c", opts.Command)
	kubeconfig := cp.kubeconfig
	var inet *implNetwork
	if opts.OwnNetwork {
		u, err := url.Parse(cp.cfg.Host)
		if err != nil {
			return nil, fmt.Errorf("localcp: the API server's address %q: %w", cp.cfg.Host, err)
		}
		if inet, err = createImplNetwork(opts.Addresses, cp.podNet, u.Host, cp.kubeconfig, cp.dir); err != nil {
			return nil, err
		}
		opts.Addresses, kubeconfig, cmd = inet.addresses, inet.kubeconfig, inet.command(opts.Command)
		fmt.Fprintf(progress, "localcp: the implementation runs in network namespace %s; its Gateway addresses %s are routed to it through %s\n", inet.netns, inet.addresses, inet.hostIf)
	}
	cmd.Env = append(os.Environ(),
		"KUBECONFIG="+kubeconfig,
		EnvGatewayClass+"="+opts.GatewayClass,
		EnvControllerName+"="+opts.ControllerName,
		EnvGatewayAddresses+"="+opts.Addresses.Masked().String(),
	)
	cmd.Stdout, cmd.Stderr = out, out
	// A group of its own, so that Stop's signal reaches whatever the
	// shell started, not only the shell.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// A process that left the group and kept the output open must not
	// keep Wait, and so Stop, from returning.
	cmd.WaitDelay = stopGrace
	if err := cmd.Start(); err != nil {
		if inet != nil {
			err = errors.Join(err, inet.close())
		}
		return nil, fmt.Errorf("localcp: starting the implementation (sh -c %q): %w", opts.Command, err)
	}
	impl := &Implementation{Addresses: opts.Addresses.Masked(), net: inet, cmd: cmd, done: make(chan struct{}), tail: tail}
	if inet != nil {
		impl.NetNS = inet.netns
	}
	go func() { impl.err = cmd.Wait(); close(impl.done) }()
	fmt.Fprintf(progress, "localcp: started the implementation (pid %d): %s\n", cmd.Process.Pid, opts.Command)

	waitCtx, cancel := context.WithTimeout(ctx, opts.AcceptTimeout)
	defer cancel()
	gc, err := waitClassAccepted(waitCtx, c, opts.GatewayClass, impl.done, progress)
	if err != nil {
		select {
		case <-impl.done:
			err = fmt.Errorf("%w; the implementation exited (%v)", err, impl.err)
		default:
			_ = impl.Stop()
		}
		return nil, fmt.Errorf("localcp: %w%s", err, impl.outputTail())
	}
	for _, f := range gc.Status.SupportedFeatures {
		impl.SupportedFeatures = append(impl.SupportedFeatures, f.Name)
	}
	return impl, nil
}

// Exited returns a channel closed when the implementation's command has
// exited, and Err its exit status once it has.
func (i *Implementation) Exited() <-chan struct{} { return i.done }

// Err is the command's exit status once Exited is closed.
func (i *Implementation) Err() error {
	select {
	case <-i.done:
		return i.err
	default:
		return nil
	}
}

// Stop sends SIGINT to the implementation's process group, waits up to
// 10 seconds for the command to exit, then kills the group. It returns an
// error when the command had to be killed, or when it exited with a
// failure (before Stop or because of it), with the end of its output.
func (i *Implementation) Stop() error {
	i.stopOnce.Do(func() {
		select {
		case <-i.done:
			if i.err != nil {
				i.stopErr = fmt.Errorf("localcp: the implementation exited before it was stopped: %v%s", i.err, i.outputTail())
			}
			return
		default:
		}
		if childproc.Stop(i.cmd.Process, true, i.done, syscall.SIGINT, stopGrace) {
			i.stopErr = fmt.Errorf("localcp: the implementation did not exit within %v of SIGINT; killed%s", stopGrace, i.outputTail())
		} else if i.err != nil && !interrupted(i.err) {
			i.stopErr = fmt.Errorf("localcp: the implementation exited with %v after SIGINT%s", i.err, i.outputTail())
		}
	})
	i.closeNet.Do(func() {
		if i.net != nil {
			i.stopErr = errors.Join(i.stopErr, i.net.close())
		}
	})
	return i.stopErr
}

// interrupted says whether err is the exit of a process that SIGINT
// ended: killed by the signal, or a shell's status 130 for a child it
// killed.
func interrupted(err error) bool {
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		return false
	}
	if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGINT {
		return true
	}
	return exit.ExitCode() == 128+int(syscall.SIGINT)
}

func (i *Implementation) outputTail() string {
	t := i.tail.String()
	if t == "" {
		return " (it wrote nothing)"
	}
	return "\nthe end of its output:\n" + t
}

// gatewayClient is a client of the control plane that knows the Gateway
// API v1 kinds.
func (cp *ControlPlane) gatewayClient() (client.WithWatch, error) {
	s := runtime.NewScheme()
	if err := gwv1.Install(s); err != nil {
		return nil, fmt.Errorf("localcp: scheme: %w", err)
	}
	c, err := client.NewWithWatch(cp.RestConfig(), client.Options{Scheme: s})
	if err != nil {
		return nil, fmt.Errorf("localcp: client: %w", err)
	}
	return c, nil
}

// createGatewayClass creates the class for controllerName, or checks that
// an existing one names it.
func createGatewayClass(ctx context.Context, c client.Client, name, controllerName string) error {
	gc := &gwv1.GatewayClass{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       gwv1.GatewayClassSpec{ControllerName: gwv1.GatewayController(controllerName)},
	}
	err := c.Create(ctx, gc)
	if err == nil || !apierrors.IsAlreadyExists(err) {
		if err != nil {
			return fmt.Errorf("localcp: creating GatewayClass %q with controllerName %q: %w", name, controllerName, err)
		}
		return nil
	}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, gc); err != nil {
		return fmt.Errorf("localcp: reading GatewayClass %q: %w", name, err)
	}
	if string(gc.Spec.ControllerName) != controllerName {
		return fmt.Errorf("localcp: GatewayClass %q exists with controllerName %q, not %q", name, gc.Spec.ControllerName, controllerName)
	}
	return nil
}

// classPollInterval is how often waitClassAccepted reads the class, and
// classReadTimeout bounds one read.
const (
	classPollInterval = 200 * time.Millisecond
	classReadTimeout  = 10 * time.Second
)

// waitClassAccepted polls the GatewayClass name until it is Accepted=True
// at its generation, exited is closed, or ctx ends (a read in flight may
// take up to classReadTimeout longer), writing a line to progress every
// few seconds. It returns the accepted class.
func waitClassAccepted(ctx context.Context, c client.Client, name string, exited <-chan struct{}, progress io.Writer) (*gwv1.GatewayClass, error) {
	if progress == nil {
		progress = io.Discard
	}
	start := time.Now()
	deadline, _ := ctx.Deadline()
	tick := time.NewTicker(classPollInterval)
	defer tick.Stop()
	nextProgress := start.Add(progressEvery)
	var state, controller string
	for {
		var gc gwv1.GatewayClass
		// A read of its own, bounded by classReadTimeout: one bounded by
		// ctx fails as ctx's deadline nears (client-go's rate limiter
		// refuses to wait past it), which would hide what the class said.
		readCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), classReadTimeout)
		err := c.Get(readCtx, client.ObjectKey{Name: name}, &gc)
		cancel()
		switch {
		case err != nil:
			state = "reading it failed: " + err.Error()
		case classAccepted(&gc):
			return &gc, nil
		default:
			state, controller = classState(&gc), string(gc.Spec.ControllerName)
		}
		select {
		case <-exited:
			return nil, fmt.Errorf("GatewayClass %q not accepted (%s)", name, state)
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.Canceled) {
				return nil, fmt.Errorf("the wait for GatewayClass %q to be accepted was cancelled after %v (%s)", name, time.Since(start).Round(time.Second), state)
			}
			return nil, fmt.Errorf("GatewayClass %q not accepted within %v (%s): is the implementation watching for controllerName %q?",
				name, deadline.Sub(start).Round(time.Second), state, controller)
		case now := <-tick.C:
			if now.After(nextProgress) {
				fmt.Fprintf(progress, "localcp: waiting for the implementation to accept GatewayClass %s (%s): %v of %v\n",
					name, state, now.Sub(start).Round(time.Second), deadline.Sub(start).Round(time.Second))
				nextProgress = now.Add(progressEvery)
			}
		}
	}
}

func classAccepted(gc *gwv1.GatewayClass) bool {
	for _, cond := range gc.Status.Conditions {
		if cond.Type == string(gwv1.GatewayClassConditionStatusAccepted) {
			return cond.Status == metav1.ConditionTrue && cond.ObservedGeneration == gc.Generation
		}
	}
	return false
}

// classState describes the class's Accepted condition for a progress line.
// The API server defaults it to Unknown (reason Pending, "Waiting for
// controller") with no observed generation.
func classState(gc *gwv1.GatewayClass) string {
	for _, cond := range gc.Status.Conditions {
		if cond.Type != string(gwv1.GatewayClassConditionStatusAccepted) {
			continue
		}
		s := fmt.Sprintf("Accepted=%s, reason %s: %s", cond.Status, cond.Reason, cond.Message)
		if cond.ObservedGeneration != 0 && cond.ObservedGeneration != gc.Generation {
			s += fmt.Sprintf("; written for generation %d, the class is at %d", cond.ObservedGeneration, gc.Generation)
		}
		return s
	}
	return "no Accepted condition yet"
}
