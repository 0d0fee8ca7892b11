// Package proxy drives a real proxy (HAProxy, nginx) from the reference
// controller's routing snapshots: it flattens each ir.Config (Flatten),
// has a Flavor write the proxy's configuration, checks it with the
// proxy's own checker, starts or reloads the proxy, and returns from Apply
// only once the proxy's workers serve the new configuration, so that the
// controller writes Programmed after the data plane serves, as it does
// for the reference data plane. Every configuration carries a generation
// that a control listener answers; Apply waits until a fresh connection
// reads the new one.
package proxy

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"github.com/gatewitness/gatewitness/gateway/ir"
)

// Flavor is one proxy: how its configuration is written, checked, started
// and reloaded.
type Flavor interface {
	// Name names the proxy in messages ("haproxy").
	Name() string
	// Render writes the configuration serving s, with a control listener
	// on control that answers generation to any request, and files for
	// it (certificates) under dir. What it cannot express it leaves out
	// and names in the error (Apply logs it); an empty configuration
	// means it wrote none.
	Render(s *Snapshot, control, generation, dir string) (string, error)
	// Check checks the configuration in the file conf.
	Check(ctx context.Context, dir, conf string) error
	// Start starts the proxy on conf, in the foreground.
	Start(dir, conf string) (*Process, error)
	// Reload makes the running proxy read conf again.
	Reload(p *Process, dir, conf string) error
	// Stop stops it.
	Stop(p *Process) error
}

// Adapter serves routing snapshots with a real proxy. It implements the
// embedded cluster's DataPlane.
type Adapter struct {
	flavor  Flavor
	log     logr.Logger
	dir     string
	conf    string
	sockets *Sockets
	control string

	mu      sync.Mutex
	proc    *Process
	gen     int
	last    string // the last configuration served, generationMark in place of its generation
	serving map[portKey]string
	closed  bool
}

// generationMark stands for the generation in a configuration as rendered.
const generationMark = "@@generation@@"

// ReloadDeadline bounds how long Apply waits for the proxy to serve a
// new configuration.
const ReloadDeadline = 20 * time.Second

// New returns an Adapter for flavor that keeps its files in a new
// temporary directory. The proxy starts at the first Apply.
func New(flavor Flavor, log logr.Logger) (*Adapter, error) {
	dir, err := os.MkdirTemp("", "gatewitness-"+flavor.Name()+"-")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flavor.Name(), err)
	}
	sockets := NewSockets()
	control, err := sockets.For("", "control", 0)
	if err != nil {
		return nil, fmt.Errorf("%s: the control listener: %w", flavor.Name(), err)
	}
	return &Adapter{flavor: flavor, log: log, dir: dir, conf: filepath.Join(dir, flavor.Name()+".conf"),
		sockets: sockets, control: control, serving: map[portKey]string{}}, nil
}

// Dir is where the adapter writes the proxy's configuration.
func (a *Adapter) Dir() string { return a.dir }

// Apply writes cfg as the proxy's configuration, checks it, starts or
// reloads the proxy, and waits until its workers serve it. What the
// configuration cannot express is left out and named in the error.
func (a *Adapter) Apply(cfg *ir.Config) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return fmt.Errorf("%s: Apply called after Close", a.flavor.Name())
	}
	snap, flatErr := Flatten(cfg, a.sockets)
	template, renderErr := a.flavor.Render(snap, a.control, generationMark, a.dir)
	if template == "" {
		return fmt.Errorf("%s: writing the configuration: %w", a.flavor.Name(), renderErr)
	}
	if renderErr != nil {
		snap.Omitted = append(snap.Omitted, renderErr.Error())
	}
	if a.proc != nil && template == a.last {
		// Nothing the proxy serves changed (an endpoint's readiness was
		// written again, say): no reload, which would restart the idle
		// timers of open connections.
		return flatErr
	}
	a.gen++
	gen := strconv.Itoa(a.gen)
	text := strings.ReplaceAll(template, generationMark, gen)
	if err := os.WriteFile(a.conf, []byte(text), 0o600); err != nil {
		return fmt.Errorf("%s: %w", a.flavor.Name(), err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), ReloadDeadline)
	defer cancel()
	if err := a.flavor.Check(ctx, a.dir, a.conf); err != nil {
		return fmt.Errorf("%s: the configuration does not check (generation %s, %s): %w", a.flavor.Name(), gen, a.conf, err)
	}
	if a.proc == nil {
		proc, err := a.flavor.Start(a.dir, a.conf)
		if err != nil {
			return fmt.Errorf("%s: %w", a.flavor.Name(), err)
		}
		a.proc = proc
	} else if err := a.flavor.Reload(a.proc, a.dir, a.conf); err != nil {
		return fmt.Errorf("%s: reloading: %w", a.flavor.Name(), err)
	}
	start := time.Now()
	if err := WaitServing(ctx, a.proc, a.control, gen); err != nil {
		return fmt.Errorf("%s: %w", a.flavor.Name(), err)
	}
	a.log.V(1).Info("serving", "generation", gen, "took", time.Since(start), "ports", len(snap.Ports))
	serving := map[portKey]string{}
	for _, p := range snap.Ports {
		serving[portKey{p.Namespace, p.Name, p.Port}] = p.Addr
	}
	a.serving = serving
	a.last = template
	if len(snap.Omitted) > 0 {
		a.log.Info("not served: the configuration cannot express it", "generation", gen, "omitted", snap.Omitted)
	}
	if flatErr != nil {
		return fmt.Errorf("%s: served without the listeners it cannot serve: %w", a.flavor.Name(), flatErr)
	}
	return nil
}

// Generation is the number of configurations the proxy has been given:
// it grows by one at each start or reload.
func (a *Adapter) Generation() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.gen
}

// Addr returns the socket serving the Gateway's port, once the proxy
// serves it.
func (a *Adapter) Addr(namespace, name string, port int32) (string, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	addr, ok := a.serving[portKey{namespace, name, port}]
	return addr, ok
}

// Close stops the proxy and removes its files.
func (a *Adapter) Close() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return nil
	}
	a.closed = true
	var err error
	if a.proc != nil {
		err = a.flavor.Stop(a.proc)
	}
	if os.Getenv("GATEWITNESS_KEEP_PROXY_DIR") == "" {
		_ = os.RemoveAll(a.dir)
	}
	return err
}

type portKey struct {
	namespace, name string
	port            int32
}

// Sockets gives each (Gateway, listener port) a socket of its own, kept
// for the Adapter's life: a port of a loopback address chosen at random
// from 127.64.0.0/10, which nothing else in gatewitness binds.
type Sockets struct {
	mu    sync.Mutex
	ip    string
	addrs map[portKey]string
	used  map[int]bool
}

// NewSockets picks the address.
func NewSockets() *Sockets {
	ip := net.IPv4(127, byte(64+rand.IntN(64)), byte(rand.IntN(256)), byte(1+rand.IntN(254)))
	return &Sockets{ip: ip.String(), addrs: map[portKey]string{}, used: map[int]bool{}}
}

// For returns the socket of the Gateway namespace/name's port.
func (s *Sockets) For(namespace, name string, port int32) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := portKey{namespace, name, port}
	if a, ok := s.addrs[k]; ok {
		return a, nil
	}
	var p int
	for p == 0 || s.used[p] { // the kernel may pick a port it handed out before
		var err error
		if p, err = FreePort(s.ip); err != nil {
			return "", err
		}
	}
	s.used[p] = true
	a := net.JoinHostPort(s.ip, strconv.Itoa(p))
	s.addrs[k] = a
	return a, nil
}
