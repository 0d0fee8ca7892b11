// Package nginx drives nginx (1.22, as Debian 12 ships it) as the data
// plane behind the reference controller: each routing snapshot becomes an
// nginx.conf (Render), checked with "nginx -t", and the master process
// reloads on SIGHUP. docs/calibration.md maps each Gateway API field to
// the directive that expresses it, with the nginx documentation's module
// and directive.
package nginx

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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
	// Binary is the nginx executable; empty: "nginx" on $PATH.
	Binary string
	// HTTP10Upstream leaves proxy_http_version at its default, 1.0, with
	// the default proxy_buffering on: a response without a length comes
	// back close-delimited, and nginx buffers it (ngx_http_proxy_module,
	// "proxy_http_version", "proxy_buffering").
	HTTP10Upstream bool
}

// Flavor is nginx as a proxy.Flavor; the zero Flavor is the honest
// configuration.
type Flavor struct{ opts Options }

// NewFlavor returns the Flavor of opts.
func NewFlavor(opts Options) Flavor { return Flavor{opts} }

// New returns an adapter driving nginx configured as opts says.
func New(opts Options, log logr.Logger) (*proxy.Adapter, error) {
	if opts.Binary == "" {
		opts.Binary = "nginx"
	}
	return proxy.New(Flavor{opts}, log)
}

// Installed reports whether the nginx binary is on $PATH.
func Installed() bool { _, err := exec.LookPath("nginx"); return err == nil }

// Name implements proxy.Flavor.
func (Flavor) Name() string { return "nginx" }

func (f Flavor) args(dir, conf string, more ...string) []string {
	return append([]string{"-p", dir, "-c", conf, "-e", "stderr"}, more...)
}

// Check implements proxy.Flavor: nginx -t.
func (f Flavor) Check(ctx context.Context, dir, conf string) error {
	return proxy.Check(ctx, f.opts.Binary, f.args(dir, conf, "-t", "-q"), dir)
}

// Start implements proxy.Flavor: the master in the foreground (daemon
// off in the configuration).
func (f Flavor) Start(dir, conf string) (*proxy.Process, error) {
	return proxy.Start(f.opts.Binary, f.args(dir, conf), dir)
}

// Reload implements proxy.Flavor: SIGHUP to the master, which starts new
// workers on the new configuration and shuts the old ones down
// gracefully ("Controlling nginx", "Changing Configuration").
func (Flavor) Reload(p *proxy.Process, dir, conf string) error { return p.Signal(syscall.SIGHUP) }

// Stop implements proxy.Flavor: SIGTERM, the fast shutdown.
func (Flavor) Stop(p *proxy.Process) error { return p.Stop(syscall.SIGTERM, 5*time.Second) }

// retryCodes are the statuses proxy_next_upstream can name.
var retryCodes = []int{403, 404, 429, 500, 502, 503, 504}

// Render implements proxy.Flavor.
func (f Flavor) Render(s *proxy.Snapshot, control, generation, dir string) (string, error) {
	var b strings.Builder
	var errs []string
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	for _, d := range []string{"tmp", "logs"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			return "", err
		}
	}
	w("# written by gatewitness's calibration from the reference controller's snapshot, generation %s", generation)
	w("daemon off;")
	w("master_process on;")
	w("worker_processes 2;")
	w("pid %s;", filepath.Join(dir, "nginx.pid"))
	w("error_log stderr warn;")
	w("worker_shutdown_timeout 30s;")
	w("events { worker_connections 4096; }")
	w("http {")
	w("    access_log off;")
	for _, t := range []string{"client_body", "proxy", "fastcgi", "uwsgi", "scgi"} {
		w("    %s_temp_path %s;", t, filepath.Join(dir, "tmp", t))
	}
	w("    map $http_upgrade $connection_upgrade { default upgrade; '' ''; }")
	w("    server { listen %s; location / { return 200 %q; } }", control, generation)
	for i, p := range s.Ports {
		w("")
		w("    # Gateway %s/%s port %d", p.Namespace, p.Name, p.Port)
		// The default server first: it takes the entries of any host, and
		// every host no other server names.
		for hi, h := range append([]string{""}, hostsOf(p)...) {
			listen := p.Addr
			if hi == 0 {
				listen += " default_server"
			}
			if p.TLS {
				listen += " ssl http2"
			}
			w("    server {")
			w("        listen %s;", listen)
			if h == "" {
				w("        server_name \"\";")
			} else {
				w("        server_name %s;", h)
			}
			if p.TLS {
				cert := certFor(p, h)
				file := filepath.Join(dir, fmt.Sprintf("p%d-%s.pem", i, cert.Listener))
				if err := os.WriteFile(file, cert.PEM, 0o600); err != nil {
					return "", fmt.Errorf("writing %s: %w", file, err)
				}
				w("        ssl_certificate %s;", file)
				w("        ssl_certificate_key %s;", file)
			}
			if t := p.Timeouts.Client; t > 0 {
				w("        client_header_timeout %s;", proxy.Timeout(t))
				w("        client_body_timeout %s;", proxy.Timeout(t))
				w("        keepalive_timeout %s;", proxy.Timeout(t))
			}
			errs = append(errs, f.locations(&b, s, p, i, h)...)
			w("    }")
		}
		for _, id := range p.Rules() {
			f.upstream(&b, s.Rules[id], fmt.Sprintf("%s_p%d", s.Rules[id].ID, i))
		}
	}
	w("}")
	if len(errs) > 0 {
		return b.String(), fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return b.String(), nil
}

// hostsOf lists the hostnames of p's entries but "" (any host).
func hostsOf(p proxy.Port) []string {
	var hosts []string
	for _, e := range p.Entries {
		if e.Host != "" && !slices.Contains(hosts, e.Host) {
			hosts = append(hosts, e.Host)
		}
	}
	return hosts
}

// certFor picks the certificate of the listener whose hostname is h, else
// the first.
func certFor(p proxy.Port, h string) proxy.Cert {
	for _, c := range p.Certs {
		if c.Hostname == h {
			return c
		}
	}
	return p.Certs[0]
}

// locations writes the locations of host h: an Exact path as "location =",
// a prefix as "location = /p" and "location ^~ /p/" (nginx picks the
// longest prefix, as HTTPRoute precedence does). nginx cannot choose a
// location by method, header or query parameter, so such matches are
// left out.
func (f Flavor) locations(b *strings.Builder, s *proxy.Snapshot, p proxy.Port, port int, h string) []string {
	var errs []string
	seen := map[string]bool{}
	for _, e := range p.Entries {
		if e.Host != h {
			continue
		}
		r := s.Rules[e.Rule]
		if e.Match.Method != nil || len(e.Match.Headers) > 0 || len(e.Match.QueryParams) > 0 {
			errs = append(errs, fmt.Sprintf("HTTPRoute %s: matches on methods, headers or query parameters cannot be expressed", r.Route))
			continue
		}
		t, v := proxy.PathOf(e.Match)
		var locs []string
		switch t {
		case gwv1.PathMatchExact:
			locs = []string{"= " + v}
		case gwv1.PathMatchPathPrefix:
			if v == "/" {
				locs = []string{"/"}
			} else {
				v = strings.TrimSuffix(v, "/")
				locs = []string{"= " + v, "^~ " + v + "/"}
			}
		default:
			errs = append(errs, fmt.Sprintf("HTTPRoute %s: path match %s cannot be expressed", r.Route, t))
			continue
		}
		for _, loc := range locs {
			if seen[loc] {
				continue // taken by a match of higher precedence
			}
			seen[loc] = true
			fmt.Fprintf(b, "        location %s {\n", loc)
			if err := f.proxyPass(b, r, fmt.Sprintf("%s_p%d", r.ID, port), p.Timeouts); err != nil {
				errs = append(errs, fmt.Sprintf("HTTPRoute %s: %v", r.Route, err))
			}
			fmt.Fprintf(b, "        }\n")
		}
	}
	if !seen["/"] {
		fmt.Fprintf(b, "        location / { return 404; }\n")
	}
	return errs
}

// proxyPass writes the body of a rule's location: its timeouts
// (proxy_read_timeout, an inactivity timer between two reads; nginx has
// no deadline over a whole response) and its retries (proxy_next_upstream
// and proxy_next_upstream_tries; nginx has no retry backoff, and retries
// only on the next server of the upstream).
func (f Flavor) proxyPass(b *strings.Builder, r proxy.Rule, upstream string, gt ir.ConnectionTimeouts) error {
	w := func(format string, args ...any) { fmt.Fprintf(b, "            "+format+"\n", args...) }
	if !live(r) {
		w("return 500;")
		return nil
	}
	w("proxy_pass http://%s;", upstream)
	if !f.opts.HTTP10Upstream {
		w("proxy_http_version 1.1;")
		w("proxy_set_header Connection $connection_upgrade;")
		w("proxy_set_header Upgrade $http_upgrade;")
	}
	w("proxy_set_header Host $http_host;")
	w("proxy_connect_timeout 5s;")
	read, timeout, err := r.AttemptTimeout(gt.Server)
	if err != nil {
		return err
	}
	w("proxy_read_timeout %s;", proxy.Timeout(read))
	w("proxy_send_timeout %s;", proxy.Timeout(read))
	rt := r.Retry
	if rt == nil {
		w("proxy_next_upstream off;")
		return nil
	}
	on := []string{"error", "invalid_header", "non_idempotent"}
	if timeout {
		on = append(on, "timeout")
	}
	codes, err := proxy.RetryConditions(rt.Codes, retryCodes, "http_", "proxy_next_upstream names")
	on = append(on, codes...)
	w("proxy_next_upstream %s;", strings.Join(on, " "))
	w("proxy_next_upstream_tries %d;", attempts(r)+1)
	return err
}

func attempts(r proxy.Rule) int {
	if r.Retry == nil {
		return 0
	}
	if r.Retry.Attempts != nil {
		return *r.Retry.Attempts
	}
	return 1
}

func live(r proxy.Rule) bool {
	for _, be := range r.Backends {
		if !be.Invalid && be.Weight > 0 && len(be.Endpoints) > 0 {
			return true
		}
	}
	return false
}

// upstream writes a rule's endpoints. nginx retries on the next server
// only, so each endpoint is listed once per attempt a retry stanza
// allows, never marked down (max_fails=0): a backend of one endpoint is
// retried on that endpoint. nginx proxies HTTP/1.x only, so an h2c
// backend (appProtocol kubernetes.io/h2c) is not expressible.
func (f Flavor) upstream(b *strings.Builder, r proxy.Rule, name string) {
	if !live(r) {
		return
	}
	fmt.Fprintf(b, "    upstream %s {\n", name)
	for range attempts(r) + 1 {
		for _, be := range r.Backends {
			if be.Invalid || be.Weight == 0 {
				continue
			}
			for _, ep := range be.Endpoints {
				fmt.Fprintf(b, "        server %s weight=%d max_fails=0;\n", ep, be.Weight)
			}
		}
	}
	if !f.opts.HTTP10Upstream {
		fmt.Fprintf(b, "        keepalive 16;\n")
	}
	fmt.Fprintf(b, "    }\n")
}
