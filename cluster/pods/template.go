package pods

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/gatewitness/gatewitness/gateway/probeproxy"
	"github.com/gatewitness/gatewitness/internal/probe"
)

// acceptedImages are the image repositories (the last path element, any
// registry and tag) the runner can run in-process.
var acceptedImages = []string{"echo-basic", "echo-backend"}

// knownSidecars are image repositories of containers that mesh injectors
// add next to an application. They are not run in-process (the in-process
// data path has no mesh) and do not make a Deployment unsupported.
var knownSidecars = []string{"istio/proxyv2", "linkerd/proxy"}

// fieldRefPaths are the fieldRef paths resolved for env values, besides
// metadata.labels['k'] and metadata.annotations['k'].
var fieldRefPaths = []string{
	"metadata.name", "metadata.namespace", "metadata.uid",
	"spec.nodeName", "spec.serviceAccountName",
	"status.podIP", "status.podIPs", "status.hostIP", "status.hostIPs",
}

// repository returns the repository path of an image reference without its
// registry host, tag and digest: "registry.k8s.io/gateway-api/echo-basic:v1"
// gives "gateway-api/echo-basic".
func repository(image string) string {
	if i := strings.IndexByte(image, '@'); i >= 0 {
		image = image[:i]
	}
	if i := strings.LastIndexByte(image, ':'); i >= 0 && !strings.Contains(image[i:], "/") {
		image = image[:i]
	}
	if i := strings.IndexByte(image, '/'); i >= 0 {
		first := image[:i]
		if strings.ContainsAny(first, ".:") || first == "localhost" {
			image = image[i+1:]
		}
	}
	return image
}

// imageAccepted reports whether image is an echo-backend the runner runs.
func imageAccepted(image string) bool {
	repo := repository(image)
	last := repo[strings.LastIndexByte(repo, '/')+1:]
	for _, a := range acceptedImages {
		if last == a {
			return true
		}
	}
	return false
}

// isSidecar reports whether image is one of knownSidecars.
func isSidecar(image string) bool {
	repo := repository(image)
	for _, s := range knownSidecars {
		if repo == s || strings.HasSuffix(repo, "/"+s) {
			return true
		}
	}
	return false
}

// podTemplate is what the runner takes from a Deployment's pod template once
// it has been checked: the one echo container and the volumes it mounts.
type podTemplate struct {
	container *corev1.Container
	volumes   map[string]*corev1.Volume
	hash      string
	// proxy is whether the pods get the reference probe proxy.
	proxy bool
}

// parseTemplate checks that the runner can run d's pods and returns what it
// needs from the template. Every problem is reported with the field path
// and the accepted form, joined into one error.
func parseTemplate(d *appsv1.Deployment, maxReplicas int) (*podTemplate, error) {
	const base = "spec.template.spec"
	spec := &d.Spec.Template.Spec
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	if d.Spec.Replicas != nil && int(*d.Spec.Replicas) > maxReplicas {
		bad("spec.replicas: %d: accepted: at most %d in-process", *d.Spec.Replicas, maxReplicas)
	}
	if spec.HostNetwork {
		bad("%s.hostNetwork: true: accepted: false or unset (each in-process replica gets its own loopback address)", base)
	}
	for i, c := range spec.InitContainers {
		if !isSidecar(c.Image) {
			bad("%s.initContainers[%d] (%s): image %q: accepted: no init containers in-process", base, i, c.Name, c.Image)
		}
	}
	t := &podTemplate{volumes: map[string]*corev1.Volume{}}
	for i := range spec.Containers {
		c := &spec.Containers[i]
		field := fmt.Sprintf("%s.containers[%d]", base, i)
		switch {
		case isSidecar(c.Image):
			continue
		case !imageAccepted(c.Image):
			bad("%s.image: %q: accepted: an image whose repository ends in /echo-basic or /echo-backend (any registry and tag), or a known mesh sidecar", field, c.Image)
			continue
		case t.container != nil:
			bad("%s (%s): a second echo-backend container: accepted: one echo-backend container per pod in-process", field, c.Name)
			continue
		}
		t.container = c
		if len(c.Command) > 0 || len(c.Args) > 0 {
			bad("%s (%s): command/args: accepted: none in-process; configure the backend through env as echo-basic reads it", field, c.Name)
		}
		for j, p := range c.Ports {
			if p.HostPort != 0 {
				bad("%s.ports[%d].hostPort: %d: accepted: unset in-process", field, j, p.HostPort)
			}
		}
		for j, e := range c.Env {
			if err := checkEnvSource(e.ValueFrom); err != nil {
				bad("%s.env[%d] (%s).valueFrom: %w", field, j, e.Name, err)
			}
		}
		for _, pr := range []struct {
			name string
			p    *corev1.Probe
		}{{"readinessProbe", c.ReadinessProbe}, {"livenessProbe", c.LivenessProbe}, {"startupProbe", c.StartupProbe}} {
			if err := checkProbe(fmt.Sprintf("%s (%s).%s", field, c.Name, pr.name), pr.p, pr.name == "readinessProbe"); err != nil {
				errs = append(errs, err)
			}
		}
		for j, m := range c.VolumeMounts {
			if m.SubPath != "" || m.SubPathExpr != "" {
				bad("%s.volumeMounts[%d] (%s).subPath: accepted: unset in-process; mount the whole volume", field, j, m.Name)
			}
			if !strings.HasPrefix(m.MountPath, "/") {
				bad("%s.volumeMounts[%d] (%s).mountPath: %q: accepted: an absolute path", field, j, m.Name, m.MountPath)
			}
		}
	}
	if t.container == nil && len(spec.Containers) > 0 && len(errs) == 0 {
		bad("%s.containers: only known sidecars: accepted: one container of an echo-basic or echo-backend image", base)
	}
	if len(spec.Containers) == 0 {
		bad("%s.containers: empty: accepted: one container of an echo-basic or echo-backend image", base)
	}
	for i := range spec.Volumes {
		v := &spec.Volumes[i]
		if v.Secret == nil && v.ConfigMap == nil && v.EmptyDir == nil {
			bad("%s.volumes[%d] (%s): accepted in-process: secret, configMap or emptyDir", base, i, v.Name)
			continue
		}
		t.volumes[v.Name] = v
	}
	if t.container != nil {
		for j, m := range t.container.VolumeMounts {
			if t.volumes[m.Name] == nil {
				bad("%s.containers[%d].volumeMounts[%d].name: %q: accepted: the name of a secret, configMap or emptyDir volume of the pod", base, indexOf(spec.Containers, t.container), j, m.Name)
			}
		}
	}
	proxy, err := probeProxyEnabled(d)
	if err != nil {
		bad("%w", err)
	}
	if proxy && len(errs) == 0 {
		// The injector's rewrite must succeed on the template's pod.
		pod := &corev1.Pod{ObjectMeta: *d.Spec.Template.ObjectMeta.DeepCopy(), Spec: *spec.DeepCopy()}
		if _, err := probeproxy.Rewrite(pod); err != nil {
			bad("%s: the probe proxy's rewrite (annotation %s): %w", base, probeproxy.AnnotationInject, err)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	t.proxy = proxy
	t.hash = templateHash(&d.Spec.Template)
	return t, nil
}

// checkProbe checks a probe of the echo container. Only readiness probes
// are run, so only they must have a handler the runner can run.
func checkProbe(field string, p *corev1.Probe, run bool) error {
	if p == nil {
		return nil
	}
	if !run {
		if p.Exec != nil {
			return nil // kept in the Pod, never run
		}
		return probe.Validate(field, p)
	}
	var errs []error
	errs = append(errs, probe.Validate(field, p))
	if p.HTTPGet != nil && p.HTTPGet.Host != "" {
		errs = append(errs, fmt.Errorf("%s.httpGet.host: %q: accepted: unset in-process (the pod's address is probed)", field, p.HTTPGet.Host))
	}
	if p.TCPSocket != nil && p.TCPSocket.Host != "" {
		errs = append(errs, fmt.Errorf("%s.tcpSocket.host: %q: accepted: unset in-process (the pod's address is probed)", field, p.TCPSocket.Host))
	}
	return errors.Join(errs...)
}

// probeProxyEnabled reads the probe proxy annotation of d's pod template,
// or else of d.
func probeProxyEnabled(d *appsv1.Deployment) (bool, error) {
	for _, m := range []struct {
		field string
		ann   map[string]string
	}{{"spec.template.metadata.annotations", d.Spec.Template.Annotations}, {"metadata.annotations", d.Annotations}} {
		if _, ok := m.ann[probeproxy.AnnotationInject]; !ok {
			continue
		}
		on, err := probeproxy.Enabled(m.ann)
		if err != nil {
			return false, fmt.Errorf("%s: %w", m.field, err)
		}
		return on, nil
	}
	return false, nil
}

func indexOf(cs []corev1.Container, c *corev1.Container) int {
	for i := range cs {
		if &cs[i] == c {
			return i
		}
	}
	return -1
}

// checkEnvSource rejects the env sources the runner cannot resolve.
func checkEnvSource(src *corev1.EnvVarSource) error {
	switch {
	case src == nil, src.SecretKeyRef != nil, src.ConfigMapKeyRef != nil:
		return nil
	case src.FieldRef != nil:
		p := src.FieldRef.FieldPath
		if _, ok := mapKey(p); ok {
			return nil
		}
		for _, f := range fieldRefPaths {
			if p == f {
				return nil
			}
		}
		return fmt.Errorf("fieldRef.fieldPath: %q: accepted: %s, metadata.labels['<key>'] or metadata.annotations['<key>']", p, strings.Join(fieldRefPaths, ", "))
	case src.ResourceFieldRef != nil:
		return errors.New("resourceFieldRef: accepted in-process: value, fieldRef, secretKeyRef or configMapKeyRef")
	}
	return errors.New("accepted: value, fieldRef, secretKeyRef or configMapKeyRef")
}

// mapKey parses metadata.labels['k'] and metadata.annotations['k'] and
// returns "labels/k" or "annotations/k".
func mapKey(path string) (string, bool) {
	for _, m := range []string{"labels", "annotations"} {
		prefix := "metadata." + m + "['"
		if strings.HasPrefix(path, prefix) && strings.HasSuffix(path, "']") && len(path) > len(prefix)+2 {
			return m + "/" + path[len(prefix):len(path)-2], true
		}
	}
	return "", false
}

// templateHash is the pod-template-hash of a template: it changes when
// anything in the template changes, so an update rolls out new pods.
func templateHash(t *corev1.PodTemplateSpec) string {
	b, err := json.Marshal(t)
	if err != nil {
		// A PodTemplateSpec always marshals; keep the zero hash otherwise.
		return "0"
	}
	h := fnv.New32a()
	h.Write(b)
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	n := h.Sum32()
	out := make([]byte, 0, 8)
	for range 8 {
		out = append(out, alphabet[n%uint32(len(alphabet))])
		n /= uint32(len(alphabet))
	}
	return string(out)
}
