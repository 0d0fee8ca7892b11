// Package probe runs Kubernetes container probes the way the kubelet does,
// for the in-process pod runner and the reference probe proxy.
//
// One check (Check, HTTP, TCP, GRPC) succeeds as the kubelet decides:
//
//   - httpGet: a GET whose response status is from 200 to 399. Redirects
//     are followed (at most 10) only while they stay on the same host; a
//     redirect to another host is not followed and its 3xx counts as a
//     success, as the kubelet counts it. At most MaxBodyBytes of the body
//     are read. Every check uses a new connection, without keep-alive and
//     without any proxy from the environment; HTTPS is not verified.
//   - tcpSocket: the TCP connect completes; the connection is closed at once.
//   - grpc: grpc.health.v1.Health/Check for the probe's service answers
//     SERVING. Any other status, and any RPC error, is a failure.
//
// Every check is bounded by the probe's timeoutSeconds.
//
// A Worker repeats a readiness probe on the kubelet's schedule: the first
// check initialDelaySeconds after it starts, then one every periodSeconds.
// The container starts not ready; it becomes ready after successThreshold
// successes in a row and unready after failureThreshold failures in a row.
package probe

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Limits and names of the checks, as the kubelet has them.
const (
	// MaxBodyBytes is how much of an HTTP probe's response body is read.
	MaxBodyBytes = 10 << 10
	// MaxRedirects is how many same-host redirects an HTTP probe follows.
	MaxRedirects = 10
	// UserAgent is the User-Agent of HTTP and gRPC probes, unless the
	// probe's httpHeaders set one.
	UserAgent = "kube-probe/1.36"
)

// Result is the outcome of one check.
type Result struct {
	// Success is whether the check passed.
	Success bool
	// Message says why the check failed, or, for a success, what was
	// worth noting (a redirect that was not followed). It may be empty.
	Message string
}

func success(format string, args ...any) Result {
	return Result{Success: true, Message: fmt.Sprintf(format, args...)}
}

func failure(format string, args ...any) Result {
	return Result{Message: fmt.Sprintf(format, args...)}
}

// Target is the pod a probe is run against.
type Target struct {
	// Host is the pod's IP address, which probes without a host of their
	// own address.
	Host string
	// Ports are the container's ports, which named probe ports resolve
	// against.
	Ports []corev1.ContainerPort
}

// Port resolves a probe's port (a number or the name of one of t's
// container ports) to a number.
func (t Target) Port(p intstr.IntOrString) (int, error) {
	if p.Type == intstr.String {
		for _, cp := range t.Ports {
			if cp.Name == p.StrVal && (cp.Protocol == "" || cp.Protocol == corev1.ProtocolTCP) {
				return int(cp.ContainerPort), nil
			}
		}
		if n, err := strconv.Atoi(p.StrVal); err == nil && n > 0 && n < 65536 {
			return n, nil
		}
		return 0, fmt.Errorf("port %q: accepted: a port number from 1 to 65535 or the name of a TCP port of the container", p.StrVal)
	}
	if p.IntVal < 1 || p.IntVal > 65535 {
		return 0, fmt.Errorf("port %d: accepted: a port number from 1 to 65535 or the name of a TCP port of the container", p.IntVal)
	}
	return int(p.IntVal), nil
}

// Validate checks that p can be run here: exactly one of httpGet,
// tcpSocket and grpc, no exec, non-negative seconds and thresholds. field
// is p's path in the pod, such as
// "spec.containers[0].readinessProbe", and starts every error.
func Validate(field string, p *corev1.Probe) error {
	if p == nil {
		return nil
	}
	var errs []error
	n := 0
	if p.HTTPGet != nil {
		n++
		if s := p.HTTPGet.Scheme; s != "" && s != corev1.URISchemeHTTP && s != corev1.URISchemeHTTPS {
			errs = append(errs, fmt.Errorf("%s.httpGet.scheme: %q: accepted: HTTP or HTTPS", field, s))
		}
	}
	if p.TCPSocket != nil {
		n++
	}
	if p.GRPC != nil {
		n++
		if p.GRPC.Port < 1 || p.GRPC.Port > 65535 {
			errs = append(errs, fmt.Errorf("%s.grpc.port: %d: accepted: a port number from 1 to 65535", field, p.GRPC.Port))
		}
	}
	if p.Exec != nil {
		errs = append(errs, fmt.Errorf("%s.exec: accepted in-process: httpGet, tcpSocket or grpc (no command runs in-process)", field))
	} else if n != 1 {
		errs = append(errs, fmt.Errorf("%s: %d handlers: accepted: exactly one of httpGet, tcpSocket or grpc", field, n))
	}
	for _, f := range []struct {
		name string
		v    int32
	}{
		{"initialDelaySeconds", p.InitialDelaySeconds}, {"timeoutSeconds", p.TimeoutSeconds},
		{"periodSeconds", p.PeriodSeconds}, {"successThreshold", p.SuccessThreshold},
		{"failureThreshold", p.FailureThreshold},
	} {
		if f.v < 0 {
			errs = append(errs, fmt.Errorf("%s.%s: %d: accepted: 0 (the default) or a positive number", field, f.name, f.v))
		}
	}
	return errors.Join(errs...)
}

// Check runs one check of p's handler against t, bounded by p's
// timeoutSeconds (seconds of length second; zero means time.Second).
func Check(ctx context.Context, p *corev1.Probe, t Target, second time.Duration) Result {
	if second <= 0 {
		second = time.Second
	}
	timeout := time.Duration(cmpOr(p.TimeoutSeconds, 1)) * second
	switch {
	case p.HTTPGet != nil:
		g := p.HTTPGet
		port, err := t.Port(g.Port)
		if err != nil {
			return failure("httpGet: %v", err)
		}
		host := g.Host
		if host == "" {
			host = t.Host
		}
		scheme := "http"
		if g.Scheme == corev1.URISchemeHTTPS {
			scheme = "https"
		}
		hdr := http.Header{}
		for _, h := range g.HTTPHeaders {
			hdr.Add(h.Name, h.Value)
		}
		return HTTP(ctx, URL(scheme, host, port, g.Path), hdr, timeout)
	case p.TCPSocket != nil:
		port, err := t.Port(p.TCPSocket.Port)
		if err != nil {
			return failure("tcpSocket: %v", err)
		}
		host := p.TCPSocket.Host
		if host == "" {
			host = t.Host
		}
		return TCP(ctx, net.JoinHostPort(host, strconv.Itoa(port)), timeout)
	case p.GRPC != nil:
		service := ""
		if p.GRPC.Service != nil {
			service = *p.GRPC.Service
		}
		return GRPC(ctx, net.JoinHostPort(t.Host, strconv.Itoa(int(p.GRPC.Port))), service, timeout)
	}
	return failure("the probe has no httpGet, tcpSocket or grpc handler")
}

func cmpOr(v, def int32) int32 {
	if v <= 0 {
		return def
	}
	return v
}

// URL builds an HTTP probe's URL as the kubelet does: path may carry a
// query, and gets a leading slash if it has none.
func URL(scheme, host string, port int, path string) *url.URL {
	u, err := url.Parse(path)
	if err != nil {
		u = &url.URL{Path: path}
	}
	u.Scheme, u.Host = scheme, net.JoinHostPort(host, strconv.Itoa(port))
	if u.Opaque != "" || !strings.HasPrefix(u.Path, "/") {
		u.Path, u.Opaque = "/"+strings.TrimPrefix(u.Opaque+u.Path, "/"), ""
	}
	return u
}

// HTTP runs one HTTP check: GET u with the headers hdr (a Host header sets
// the request's host), bounded by timeout.
func HTTP(ctx context.Context, u *url.URL, hdr http.Header, timeout time.Duration) Result {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return failure("httpGet %s: %v", u.Redacted(), err)
	}
	for k, vs := range hdr {
		if http.CanonicalHeaderKey(k) == "Host" {
			req.Host = vs[0]
			continue
		}
		req.Header[http.CanonicalHeaderKey(k)] = append([]string(nil), vs...)
	}
	if req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", UserAgent)
	}
	if req.Header.Get("Accept") == "" {
		req.Header.Set("Accept", "*/*")
	}
	tr := Transport()
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, CheckRedirect: sameHostRedirects}
	resp, err := client.Do(req)
	if err != nil {
		return failure("httpGet %s: %v", u.Redacted(), err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxBodyBytes))
	if err != nil {
		return failure("httpGet %s: status %d, reading the body: %v", u.Redacted(), resp.StatusCode, err)
	}
	switch code := resp.StatusCode; {
	case code >= 300 && code < 400:
		return success("httpGet %s: status %d; redirect to %q not followed (another host)", u.Redacted(), code, resp.Header.Get("Location"))
	case code >= 200 && code < 300:
		return success("")
	default:
		return failure("httpGet %s: status %d: %s", u.Redacted(), code, strings.TrimSpace(string(body)))
	}
}

// Transport is the transport of one HTTP check, as the kubelet's: a new
// connection without keep-alive, no proxy from the environment, and TLS
// not verified. Close its idle connections when the check is over.
func Transport() *http.Transport {
	return &http.Transport{
		Proxy:             nil,
		DisableKeepAlives: true,
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, // as the kubelet: probes do not verify
	}
}

// sameHostRedirects follows redirects while they stay on the first
// request's host, at most MaxRedirects of them.
func sameHostRedirects(req *http.Request, via []*http.Request) error {
	if req.URL.Hostname() != via[0].URL.Hostname() {
		return http.ErrUseLastResponse
	}
	if len(via) >= MaxRedirects {
		return fmt.Errorf("stopped after %d redirects", MaxRedirects)
	}
	return nil
}

// TCP runs one TCP check: connect to addr within timeout.
func TCP(ctx context.Context, addr string, timeout time.Duration) Result {
	d := net.Dialer{Timeout: timeout}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return failure("tcpSocket %s: %v", addr, err)
	}
	c.Close()
	return success("")
}

// GRPC runs one gRPC check: grpc.health.v1.Health/Check for service on
// addr, in plaintext, within timeout.
func GRPC(ctx context.Context, addr, service string, timeout time.Duration) Result {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cc, err := grpc.NewClient("passthrough:///"+addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithUserAgent(UserAgent))
	if err != nil {
		return failure("grpc %s: %v", addr, err)
	}
	defer cc.Close()
	resp, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{Service: service})
	switch status.Code(err) {
	case codes.OK:
	case codes.Unimplemented:
		return failure("grpc %s: the server does not implement grpc.health.v1.Health: %v", addr, err)
	case codes.DeadlineExceeded:
		return failure("grpc %s: no answer within %v", addr, timeout)
	default:
		return failure("grpc %s service %q: %v", addr, service, err)
	}
	if s := resp.GetStatus(); s != healthpb.HealthCheckResponse_SERVING {
		return failure("grpc %s service %q: status %s", addr, service, s)
	}
	return success("")
}
