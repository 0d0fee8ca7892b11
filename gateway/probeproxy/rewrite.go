// Package probeproxy is gatewitness's reference probe proxy: what a service
// mesh does so that the kubelet's probes still reach an application whose
// inbound traffic a sidecar captures.
//
// A mesh's injector rewrites every httpGet, tcpSocket and grpc probe of a
// pod into an httpGet on one probe port that the sidecar serves outside
// the mesh (no client certificate needed), with a path that says what to
// check; the sidecar then runs the original check against the application
// and answers with its outcome. Rewrite does the injector's part and
// Handler the sidecar's. The path scheme:
//
//	/<port><path>   GET <path> on the app's <port>; the app's status is
//	                returned as is. HTTPS probes carry the header
//	                X-Gatewitness-Probe-Scheme: HTTPS.
//	/tcp/<port>     connect to the app's <port>: 200 if it completes, else 503
//	/grpc/<port>    grpc.health.v1.Health/Check on the app's <port> for the
//	                service in the header X-Gatewitness-Probe-Grpc-Service:
//	                200 if SERVING, else 503
//
// The in-process pod runner applies both to Deployments whose pod template
// (or the Deployment itself) is annotated gatewitness.dev/probe-proxy:
// enabled. On a cluster, the mesh under test does its own rewrite and this
// package plays no part.
package probeproxy

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Annotations and headers of the probe proxy.
const (
	// AnnotationInject turns the probe proxy on for a pod when its value is
	// "enabled"; "disabled" or no annotation leaves the pod alone.
	AnnotationInject = "gatewitness.dev/probe-proxy"
	// AnnotationPort chooses the probe proxy's port. Without it, Rewrite
	// takes the first port from DefaultPort up that the pod does not
	// use, and writes its choice here.
	AnnotationPort = "gatewitness.dev/probe-proxy-port"

	// HeaderScheme marks a rewritten HTTPS probe.
	HeaderScheme = "X-Gatewitness-Probe-Scheme"
	// HeaderGRPCService carries a rewritten gRPC probe's service.
	HeaderGRPCService = "X-Gatewitness-Probe-Grpc-Service"
)

// DefaultPort is where the search for a free probe port starts.
const DefaultPort = 9000

// Enabled reports whether annotations ask for the probe proxy, and fails
// on a value it does not know.
func Enabled(annotations map[string]string) (bool, error) {
	switch v, ok := annotations[AnnotationInject]; {
	case !ok, v == "disabled":
		return false, nil
	case v == "enabled":
		return true, nil
	default:
		return false, fmt.Errorf("annotation %s: %q: accepted: enabled or disabled", AnnotationInject, v)
	}
}

// Port returns the probe port a rewritten pod's annotation names.
func Port(pod *corev1.Pod) (int, error) {
	v := pod.Annotations[AnnotationPort]
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 65535 {
		return 0, fmt.Errorf("annotation %s: %q: accepted: a port number from 1 to 65535", AnnotationPort, v)
	}
	return n, nil
}

// Rewrite returns a copy of pod with every httpGet, tcpSocket and grpc
// probe (readiness, liveness and startup, of every container) rewritten to
// an httpGet on the probe port, and AnnotationPort set to that port.
// Probes with an exec handler are left as they are. Named ports are
// resolved against the container's ports. It fails, naming the field and
// the accepted form, on a port it cannot resolve, a probe with a host of
// its own, or a probe port annotation that is not a free port.
func Rewrite(pod *corev1.Pod) (*corev1.Pod, error) {
	out := pod.DeepCopy()
	port, err := choosePort(out)
	if err != nil {
		return nil, err
	}
	var errs []error
	for i := range out.Spec.Containers {
		c := &out.Spec.Containers[i]
		base := fmt.Sprintf("spec.containers[%d]", i)
		for _, pr := range []struct {
			name string
			p    *corev1.Probe
		}{{"readinessProbe", c.ReadinessProbe}, {"livenessProbe", c.LivenessProbe}, {"startupProbe", c.StartupProbe}} {
			if pr.p == nil {
				continue
			}
			if err := rewriteProbe(base+"."+pr.name, pr.p, c.Ports, port); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	out.Annotations[AnnotationPort] = strconv.Itoa(port)
	return out, nil
}

// rewriteProbe turns p into an httpGet on the probe port.
func rewriteProbe(field string, p *corev1.Probe, ports []corev1.ContainerPort, probePort int) error {
	h := &corev1.HTTPGetAction{Port: intstr.FromInt32(int32(probePort)), Scheme: corev1.URISchemeHTTP}
	switch {
	case p.HTTPGet != nil:
		g := p.HTTPGet
		if g.Host != "" {
			return fmt.Errorf("%s.httpGet.host: %q: accepted: unset (the probe proxy reaches the app on the pod's address)", field, g.Host)
		}
		n, err := resolve(g.Port, ports)
		if err != nil {
			return fmt.Errorf("%s.httpGet.port: %w", field, err)
		}
		path := g.Path
		if !strings.HasPrefix(path, "/") {
			path = "/" + path
		}
		h.Path = "/" + strconv.Itoa(n) + path
		h.HTTPHeaders = slices.Clone(g.HTTPHeaders)
		if g.Scheme == corev1.URISchemeHTTPS {
			h.HTTPHeaders = append(h.HTTPHeaders, corev1.HTTPHeader{Name: HeaderScheme, Value: string(corev1.URISchemeHTTPS)})
		}
	case p.TCPSocket != nil:
		if p.TCPSocket.Host != "" {
			return fmt.Errorf("%s.tcpSocket.host: %q: accepted: unset (the probe proxy reaches the app on the pod's address)", field, p.TCPSocket.Host)
		}
		n, err := resolve(p.TCPSocket.Port, ports)
		if err != nil {
			return fmt.Errorf("%s.tcpSocket.port: %w", field, err)
		}
		h.Path = "/tcp/" + strconv.Itoa(n)
	case p.GRPC != nil:
		if p.GRPC.Port < 1 || p.GRPC.Port > 65535 {
			return fmt.Errorf("%s.grpc.port: %d: accepted: a port number from 1 to 65535", field, p.GRPC.Port)
		}
		h.Path = "/grpc/" + strconv.Itoa(int(p.GRPC.Port))
		if p.GRPC.Service != nil && *p.GRPC.Service != "" {
			h.HTTPHeaders = []corev1.HTTPHeader{{Name: HeaderGRPCService, Value: *p.GRPC.Service}}
		}
	default:
		return nil // exec: nothing a proxy can do
	}
	p.ProbeHandler = corev1.ProbeHandler{HTTPGet: h}
	return nil
}

// resolve turns a probe port into a number, looking names up in ports.
func resolve(p intstr.IntOrString, ports []corev1.ContainerPort) (int, error) {
	if p.Type == intstr.Int {
		if p.IntVal < 1 || p.IntVal > 65535 {
			return 0, fmt.Errorf("%d: accepted: a port number from 1 to 65535 or the name of a container port", p.IntVal)
		}
		return int(p.IntVal), nil
	}
	for _, cp := range ports {
		if cp.Name == p.StrVal {
			return int(cp.ContainerPort), nil
		}
	}
	return 0, fmt.Errorf("%q: accepted: a port number from 1 to 65535 or the name of a port of this container", p.StrVal)
}

// choosePort returns the port the annotation names, or the first port
// from DefaultPort up that no container port and no probe uses.
func choosePort(pod *corev1.Pod) (int, error) {
	used := map[int]bool{}
	for _, c := range pod.Spec.Containers {
		for _, cp := range c.Ports {
			used[int(cp.ContainerPort)] = true
		}
		for _, p := range []*corev1.Probe{c.ReadinessProbe, c.LivenessProbe, c.StartupProbe} {
			if n := probePort(p, c.Ports); n > 0 {
				used[n] = true
			}
		}
	}
	if v, ok := pod.Annotations[AnnotationPort]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 65535 {
			return 0, fmt.Errorf("annotation %s: %q: accepted: a port number from 1 to 65535 that the pod does not use", AnnotationPort, v)
		}
		if used[n] {
			return 0, fmt.Errorf("annotation %s: %d: the pod already uses this port: accepted: a port number from 1 to 65535 that the pod does not use", AnnotationPort, n)
		}
		return n, nil
	}
	for n := DefaultPort; n <= 65535; n++ {
		if !used[n] {
			return n, nil
		}
	}
	return 0, fmt.Errorf("no free port from %d to 65535 for the probe proxy: accepted: annotation %s naming a free port", DefaultPort, AnnotationPort)
}

// probePort is the port p checks, or 0 when it has none or it does not
// resolve.
func probePort(p *corev1.Probe, ports []corev1.ContainerPort) int {
	switch {
	case p == nil:
	case p.HTTPGet != nil:
		n, _ := resolve(p.HTTPGet.Port, ports)
		return n
	case p.TCPSocket != nil:
		n, _ := resolve(p.TCPSocket.Port, ports)
		return n
	case p.GRPC != nil:
		return int(p.GRPC.Port)
	}
	return 0
}
