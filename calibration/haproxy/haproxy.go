// Package haproxy drives HAProxy (2.6, as Debian 12 ships it) as the data
// plane behind the reference controller: each routing snapshot becomes a
// haproxy.cfg (Render), checked with "haproxy -c", and the master-worker
// process (-W) reloads on SIGUSR2. docs/calibration.md maps each Gateway
// API field to the directive that expresses it, with the section of the
// HAProxy 2.6 configuration manual.
package haproxy

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatewitness/gatewitness/calibration/proxy"
	"github.com/gatewitness/gatewitness/gateway/ir"
)

// Options are the configuration variants real users run.
type Options struct {
	// Binary is the haproxy executable; empty: "haproxy" on $PATH.
	Binary string
	// NoHTTPBufferRequest leaves out "option http-buffer-request": the
	// first attempt starts when the headers are in and the body streams
	// to it, so a request whose body was still arriving cannot be
	// retried (manual 4.2, "option http-buffer-request"; "retry-on").
	NoHTTPBufferRequest bool
	// NoHTTPNoDelay leaves out "option http-no-delay": HAProxy may merge
	// a response's writes for up to 200 ms (manual 4.2, "option
	// http-no-delay").
	NoHTTPNoDelay bool
}

// Flavor is HAProxy as a proxy.Flavor.
type Flavor struct{ opts Options }

// New returns an adapter driving HAProxy configured as opts says.
func New(opts Options, log logr.Logger) (*proxy.Adapter, error) {
	if opts.Binary == "" {
		opts.Binary = "haproxy"
	}
	return proxy.New(Flavor{opts}, log)
}

// Name implements proxy.Flavor.
func (Flavor) Name() string { return "haproxy" }

// Check implements proxy.Flavor: haproxy -c.
func (f Flavor) Check(ctx context.Context, dir, conf string) error {
	return proxy.Check(ctx, f.opts.Binary, []string{"-c", "-q", "-f", conf}, dir)
}

// Start implements proxy.Flavor: the master in the foreground (-W, no -D).
func (f Flavor) Start(dir, conf string) (*proxy.Process, error) {
	return proxy.Start(f.opts.Binary, []string{"-W", "-f", conf}, dir)
}

// Reload implements proxy.Flavor: SIGUSR2 to the master, which reads the
// configuration again and starts new workers; the old ones finish their
// connections (manual 3.1, "master-worker").
func (Flavor) Reload(p *proxy.Process, dir, conf string) error { return p.Signal(syscall.SIGUSR2) }

// Stop implements proxy.Flavor: SIGTERM, the hard stop.
func (Flavor) Stop(p *proxy.Process) error { return p.Stop(syscall.SIGTERM, 5*time.Second) }

// Installed reports whether the haproxy binary is on $PATH.
func Installed() bool { _, err := exec.LookPath("haproxy"); return err == nil }

// RetryableCodes are the status codes "retry-on" accepts (manual 4.2,
// "retry-on"); a retry stanza with any other code is not expressible.
var RetryableCodes = []int{401, 403, 404, 408, 425, 500, 501, 502, 503, 504}

// Render implements proxy.Flavor.
func (f Flavor) Render(s *proxy.Snapshot, control, generation, dir string) (string, error) {
	var b strings.Builder
	var errs []string
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	w("# written by gatewitness's calibration from the reference controller's snapshot, generation %s", generation)
	w("global")
	w("    maxconn 4096")
	w("    hard-stop-after 30s")
	// The master hands the listening sockets to the new workers through
	// this socket at a reload (-x, added by the master itself): without
	// it, the new workers bind sockets of their own beside the old ones,
	// and connections queued on an old one when it closes are lost
	// (management guide 4, "Stopping and restarting HAProxy").
	w("    stats socket %s mode 600 level admin expose-fd listeners", filepath.Join(dir, "admin.sock"))
	w("defaults")
	w("    mode http")
	w("    timeout connect 5s")
	w("    timeout client %s", proxy.Forever)
	w("    timeout server %s", proxy.Forever)
	w("    timeout tunnel %s", proxy.Forever)
	w("    timeout http-request %s", proxy.Forever)
	w("    timeout http-keep-alive %s", proxy.Forever)
	w("")
	w("backend no_route")
	w("    http-request return status 404 content-type text/plain string \"no route\"")
	w("")
	w("frontend control")
	w("    bind %s", control)
	w("    http-request return status 200 content-type text/plain string %q", generation)
	for i, p := range s.Ports {
		w("")
		w("# Gateway %s/%s port %d", p.Namespace, p.Name, p.Port)
		w("frontend p%d", i)
		bind := "    bind " + p.Addr
		if p.TLS {
			for _, c := range p.Certs {
				file := filepath.Join(dir, fmt.Sprintf("p%d-%s.pem", i, c.Listener))
				if err := os.WriteFile(file, c.PEM, 0o600); err != nil {
					return "", fmt.Errorf("writing %s: %w", file, err)
				}
				bind += " crt " + file
			}
			bind = strings.Replace(bind, " crt ", " ssl crt ", 1) + " alpn h2,http/1.1"
		}
		w("%s", bind)
		if !f.opts.NoHTTPBufferRequest {
			w("    option http-buffer-request")
		}
		if !f.opts.NoHTTPNoDelay {
			w("    option http-no-delay")
		}
		t := p.Timeouts
		if t.Client > 0 {
			w("    timeout client %s", proxy.Timeout(t.Client))
			w("    timeout http-request %s", proxy.Timeout(t.Client))
			w("    timeout http-keep-alive %s", proxy.Timeout(t.Client))
		}
		if t.ClientFin > 0 {
			w("    timeout client-fin %s", proxy.Timeout(t.ClientFin))
		}
		w("    http-request set-var(txn.host) req.hdr(host),field(1,:),lower")
		for _, e := range p.Entries {
			conds, err := conditions(e)
			if err != nil {
				errs = append(errs, fmt.Sprintf("%s: %v", s.Rules[e.Rule].Route, err))
				continue
			}
			w("    use_backend %s_p%d%s", s.Rules[e.Rule].ID, i, conds)
		}
		// http-request rules run before use_backend (manual 4.1): the 404 of
		// a request no match takes is a backend's.
		w("    default_backend no_route")
		for _, id := range p.Rules() {
			r := s.Rules[id]
			if err := f.backend(&b, fmt.Sprintf("%s_p%d", r.ID, i), r, p.Timeouts); err != nil {
				errs = append(errs, fmt.Sprintf("HTTPRoute %s: %v", r.Route, err))
			}
		}
	}
	if len(errs) > 0 {
		return b.String(), fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return b.String(), nil
}

// backend writes the backend of one rule: its endpoints, its timeouts
// (manual 4.2 "timeout server": an inactivity timer) and its retries
// ("retries", "retry-on", "option redispatch"; HAProxy has no retry
// backoff).
func (f Flavor) backend(b *strings.Builder, name string, r proxy.Rule, gt ir.ConnectionTimeouts) error {
	w := func(format string, args ...any) { fmt.Fprintf(b, format+"\n", args...) }
	w("")
	w("# HTTPRoute %s rule %q", r.Route, r.Name)
	w("backend %s", name)
	w("    balance roundrobin")
	server, backendTimeout, err := r.AttemptTimeout(gt.Server)
	if err != nil {
		return err
	}
	w("    timeout server %s", proxy.Timeout(server))
	if gt.Tunnel > 0 {
		w("    timeout tunnel %s", proxy.Timeout(gt.Tunnel))
	}
	if gt.ServerFin > 0 {
		w("    timeout server-fin %s", proxy.Timeout(gt.ServerFin))
	}
	if rt := r.Retry; rt != nil {
		attempts := 1
		if rt.Attempts != nil {
			attempts = *rt.Attempts
		}
		on := []string{"conn-failure", "empty-response", "junk-response"}
		if backendTimeout {
			on = append(on, "response-timeout")
		}
		var codes []string
		codes, err = proxy.RetryConditions(rt.Codes, RetryableCodes, "", "retry-on accepts")
		on = append(on, codes...)
		w("    retries %d", attempts)
		w("    retry-on %s", strings.Join(on, " "))
		w("    option redispatch 1")
	} else {
		w("    retries 0")
	}
	n := 0
	for _, be := range r.Backends {
		if be.Invalid || be.Weight == 0 {
			continue
		}
		for _, ep := range be.Endpoints {
			proto := ""
			if be.AppProtocol == "kubernetes.io/h2c" {
				proto = " proto h2"
			}
			w("    server s%d %s weight %d%s", n, ep, min(be.Weight, 256), proto)
			n++
		}
	}
	if n == 0 {
		w("    http-request return status 500 content-type text/plain string \"no backend\"")
	}
	return err
}

// conditions writes e's match as the anonymous ACLs of a use_backend
// line (manual 7, "Using ACLs and fetching samples"): all must hold.
func conditions(e proxy.Entry) (string, error) {
	var c []string
	switch {
	case e.Host == "":
	case strings.HasPrefix(e.Host, "*."):
		c = append(c, "{ var(txn.host) -m end "+quote(strings.ToLower(e.Host[1:]))+" }")
	default:
		c = append(c, "{ var(txn.host) -m str "+quote(strings.ToLower(e.Host))+" }")
	}
	t, v := proxy.PathOf(e.Match)
	switch t {
	case gwv1.PathMatchExact:
		c = append(c, "{ path -m str "+quote(v)+" }")
	case gwv1.PathMatchPathPrefix:
		if v != "/" {
			// Element-wise: /a matches /a and /a/..., not /ab.
			v = strings.TrimSuffix(v, "/")
			c = append(c, "{ path -m str "+quote(v)+" } || { path -m beg "+quote(v+"/")+" }")
		}
	case gwv1.PathMatchRegularExpression:
		c = append(c, "{ path -m reg "+quote(v)+" }")
	default:
		return "", fmt.Errorf("path match type %s cannot be expressed", t)
	}
	if m := e.Match.Method; m != nil {
		c = append(c, "{ method "+string(*m)+" }")
	}
	for _, h := range e.Match.Headers {
		op := "str"
		if h.Type != nil && *h.Type == gwv1.HeaderMatchRegularExpression {
			op = "reg"
		}
		c = append(c, fmt.Sprintf("{ req.hdr(%s) -m %s %s }", h.Name, op, quote(h.Value)))
	}
	for _, q := range e.Match.QueryParams {
		op := "str"
		if q.Type != nil && *q.Type == gwv1.QueryParamMatchRegularExpression {
			op = "reg"
		}
		c = append(c, fmt.Sprintf("{ url_param(%s) -m %s %s }", q.Name, op, quote(q.Value)))
	}
	if len(c) == 0 {
		return "", nil
	}
	if strings.Contains(strings.Join(c, " "), "||") {
		// An "or" binds looser than the implicit "and": spell out both
		// alternatives of the prefix.
		return orPrefix(c), nil
	}
	return " if " + strings.Join(c, " "), nil
}

// orPrefix expands the one condition holding "||" (a path prefix) into
// two alternatives, each with every other condition.
func orPrefix(c []string) string {
	var alt [2][]string
	for _, x := range c {
		if a, b, ok := strings.Cut(x, " || "); ok {
			alt[0] = append(alt[0], a)
			alt[1] = append(alt[1], b)
			continue
		}
		alt[0] = append(alt[0], x)
		alt[1] = append(alt[1], x)
	}
	return " if " + strings.Join(alt[0], " ") + " || " + strings.Join(alt[1], " ")
}

// quote quotes a string for haproxy.cfg (manual 2.2, "Quoting and
// escaping").
func quote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, `$`, `\$`)
	return `"` + r.Replace(s) + `"`
}
