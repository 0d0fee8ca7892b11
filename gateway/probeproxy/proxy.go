package probeproxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gatewitness/gatewitness/gateway/probeproxy/internal/breakage"
	"github.com/gatewitness/gatewitness/internal/probe"
)

// MaxCheckTime bounds one forwarded check, whatever the prober's own
// timeout (the prober normally gives up first, which ends the check too).
const MaxCheckTime = time.Minute

// Options configure a Handler.
type Options struct {
	// AppHost is the application's address (the pod's IP) that probes are
	// forwarded to.
	AppHost string
}

// Handler forwards rewritten probes to the application. Create it with
// NewHandler.
type Handler struct {
	opts Options
	// broken breaks the proxy on purpose; it is zero unless package
	// probeproxytest started the proxy.
	broken breakage.Set
}

// NewHandler returns a Handler for opts.
func NewHandler(opts Options) *Handler { return &Handler{opts: opts} }

// ServeHTTP answers one rewritten probe with the outcome of the original
// check against the application.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, fmt.Sprintf("method %s: accepted: GET (or HEAD)", r.Method), http.StatusMethodNotAllowed)
		return
	}
	kind, port, rest, err := parsePath(r.URL.Path)
	if err != nil {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), MaxCheckTime)
	defer cancel()
	addr := net.JoinHostPort(h.opts.AppHost, strconv.Itoa(port))
	var res probe.Result
	switch kind {
	case "tcp":
		if h.broken.TCPAlwaysUp {
			res = probe.Result{Success: true}
			break
		}
		res = probe.TCP(ctx, addr, MaxCheckTime)
	case "grpc":
		if h.broken.GRPCAlwaysServing {
			res = probe.Result{Success: true}
			break
		}
		res = probe.GRPC(ctx, addr, r.Header.Get(HeaderGRPCService), MaxCheckTime)
	default:
		if h.broken.HTTPAlwaysUp {
			res = probe.Result{Success: true}
			break
		}
		h.forwardHTTP(ctx, w, r, port, rest)
		return
	}
	if !res.Success {
		http.Error(w, res.Message, http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusOK)
	io.WriteString(w, "ok\n")
}

// parsePath splits a probe path into its kind ("http", "tcp" or "grpc"),
// the app's port and, for HTTP, the app's path.
func parsePath(p string) (kind string, port int, rest string, err error) {
	const accepted = "accepted: /<port><path>, /tcp/<port> or /grpc/<port>, with a port from 1 to 65535"
	kind = "http"
	s := strings.TrimPrefix(p, "/")
	if k, after, ok := strings.Cut(s, "/"); ok && (k == "tcp" || k == "grpc") {
		kind, s = k, after
	}
	digits, rest, _ := strings.Cut(s, "/")
	rest = "/" + rest
	port, convErr := strconv.Atoi(digits)
	switch {
	case convErr != nil || port < 1 || port > 65535 || digits[0] == '+' || digits[0] == '-':
		return "", 0, "", fmt.Errorf("probe path %q: %s", p, accepted)
	case kind != "http" && rest != "/":
		return "", 0, "", fmt.Errorf("probe path %q: nothing may follow the port of a %s probe: %s", p, kind, accepted)
	}
	return kind, port, rest, nil
}

// hopHeaders are not forwarded to the application.
var hopHeaders = []string{"Connection", "Keep-Alive", "Proxy-Connection", "Te", "Trailer", "Transfer-Encoding", "Upgrade", HeaderScheme, HeaderGRPCService}

// forwardHTTP runs the original GET against the app and answers with its
// status, its Location (pointed back at the proxy when it stays on the
// app's host, so that the prober follows it through the proxy) and at most
// probe.MaxBodyBytes of its body. Redirects are left to the prober.
func (h *Handler) forwardHTTP(ctx context.Context, w http.ResponseWriter, r *http.Request, port int, path string) {
	scheme := "http"
	if strings.EqualFold(r.Header.Get(HeaderScheme), "https") {
		scheme = "https"
	}
	u := &url.URL{Scheme: scheme, Host: net.JoinHostPort(h.opts.AppHost, strconv.Itoa(port)), Path: path, RawQuery: r.URL.RawQuery}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		http.Error(w, fmt.Sprintf("probe %s: %v", u, err), http.StatusServiceUnavailable)
		return
	}
	req.Header = r.Header.Clone()
	for _, k := range hopHeaders {
		req.Header.Del(k)
	}
	// A Host the prober was told to send goes on; the proxy's own address
	// (the prober's default) is replaced by the app's.
	if local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); !ok || r.Host != local.String() {
		req.Host = r.Host
	}
	tr := probe.Transport()
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		http.Error(w, fmt.Sprintf("probe %s: %v", u, err), http.StatusServiceUnavailable)
		return
	}
	defer resp.Body.Close()
	if loc := resp.Header.Get("Location"); loc != "" {
		w.Header().Set("Location", h.proxyLocation(u, loc))
	}
	if ct := resp.Header.Get("Content-Type"); ct != "" {
		w.Header().Set("Content-Type", ct)
	}
	w.WriteHeader(resp.StatusCode)
	if _, err := io.Copy(w, io.LimitReader(resp.Body, probe.MaxBodyBytes)); err != nil && !errors.Is(err, context.Canceled) {
		return // the prober went away or the app cut the body: the status is what counts
	}
}

// proxyLocation maps a redirect of the app (relative to the request u) to
// the proxy's path scheme when it stays on the app's host, so the prober
// follows it as it would have followed it on the app; a redirect to
// another host is returned as is, and the prober does not follow it.
func (h *Handler) proxyLocation(u *url.URL, loc string) string {
	to, err := u.Parse(loc)
	if err != nil || to.Hostname() != h.opts.AppHost {
		return loc
	}
	port := to.Port()
	if port == "" {
		port = "80"
		if to.Scheme == "https" {
			port = "443"
		}
	}
	path := to.Path
	if path == "" {
		path = "/"
	}
	return (&url.URL{Path: "/" + port + path, RawQuery: to.RawQuery}).String()
}

// Server is a probe proxy listening on one address.
type Server struct {
	ln  net.Listener
	srv *http.Server
}

// Listen starts a probe proxy on addr ("ip:port") for opts and serves it in
// the background until Close.
func Listen(addr string, opts Options) (*Server, error) {
	return ListenBroken(addr, opts, breakage.Set{})
}

// ListenBroken is Listen with the hook points of b: a probe proxy broken on
// purpose. Its Set type is internal, so only package probeproxytest (whose
// Hooks it is, and whose Listen calls this) can hand one over.
func ListenBroken(addr string, opts Options, b breakage.Set) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("probe proxy on %s: %w", addr, err)
	}
	s := &Server{ln: ln, srv: &http.Server{
		Handler:           &Handler{opts: opts, broken: b},
		ReadHeaderTimeout: 10 * time.Second,
		MaxHeaderBytes:    64 << 10,
	}}
	go s.srv.Serve(ln)
	return s, nil
}

// Addr is the address the proxy listens on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops the proxy and ends the probes in flight.
func (s *Server) Close() error { return s.srv.Close() }
