package pods

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// waiting is why a replica's backend cannot start yet, in the words of a
// container status: a referenced Secret or ConfigMap is missing. It clears
// itself when the object appears (the runner watches them).
type waiting struct {
	reason, message string
}

func (w *waiting) Error() string { return w.reason + ": " + w.message }

// Container waiting reasons, as the kubelet reports them.
const (
	reasonCreating     = "ContainerCreating"
	reasonConfigError  = "CreateContainerConfigError"
	reasonCrashBackOff = "CrashLoopBackOff"
)

// mount is a volume mount translated to the local file system.
type mount struct {
	path  string // mountPath in the container
	local string // directory holding the volume's files
}

// podEnv resolves the echo container's environment for pod (whose name,
// namespace, labels and status.podIP are set) and writes the volumes it
// mounts under dir. Values naming a file under a mountPath are rewritten to
// the file's local path. A missing Secret, ConfigMap or key that is not
// optional yields a *waiting error.
func podEnv(ctx context.Context, c client.Client, t *podTemplate, pod *corev1.Pod, dir string) (map[string]string, error) {
	mounts, err := writeVolumes(ctx, c, t, pod.Namespace, dir)
	if err != nil {
		return nil, err
	}
	env := map[string]string{}
	ct := t.container
	for i, from := range ct.EnvFrom {
		var data map[string]string
		var kind, name string
		var optional bool
		switch {
		case from.ConfigMapRef != nil:
			kind, name, optional = "configmap", from.ConfigMapRef.Name, deref(from.ConfigMapRef.Optional)
			data, err = configMapData(ctx, c, pod.Namespace, name)
		case from.SecretRef != nil:
			kind, name, optional = "secret", from.SecretRef.Name, deref(from.SecretRef.Optional)
			data, err = secretData(ctx, c, pod.Namespace, name)
		default:
			return nil, fmt.Errorf("envFrom[%d]: accepted: configMapRef or secretRef", i)
		}
		if apierrors.IsNotFound(err) {
			if optional {
				continue
			}
			return nil, &waiting{reasonConfigError, fmt.Sprintf("%s %q not found", kind, name)}
		}
		if err != nil {
			return nil, err
		}
		for k, v := range data {
			env[from.Prefix+k] = v
		}
	}
	for _, e := range ct.Env {
		if e.ValueFrom == nil {
			env[e.Name] = expand(e.Value, env)
			continue
		}
		v, ok, err := envSource(ctx, c, e.ValueFrom, pod)
		if err != nil {
			return nil, err
		}
		if ok {
			env[e.Name] = v
		}
	}
	for k, v := range env {
		env[k] = localPath(v, mounts)
	}
	return env, nil
}

// envSource resolves one valueFrom. ok is false for an optional reference
// that does not resolve: the variable is then left unset.
func envSource(ctx context.Context, c client.Client, src *corev1.EnvVarSource, pod *corev1.Pod) (string, bool, error) {
	switch {
	case src.FieldRef != nil:
		v, err := fieldValue(pod, src.FieldRef.FieldPath)
		return v, err == nil, err
	case src.SecretKeyRef != nil:
		ref := src.SecretKeyRef
		data, err := secretData(ctx, c, pod.Namespace, ref.Name)
		return keyValue(data, err, "secret", ref.Name, ref.Key, deref(ref.Optional))
	case src.ConfigMapKeyRef != nil:
		ref := src.ConfigMapKeyRef
		data, err := configMapData(ctx, c, pod.Namespace, ref.Name)
		return keyValue(data, err, "configmap", ref.Name, ref.Key, deref(ref.Optional))
	}
	return "", false, checkEnvSource(src)
}

func keyValue(data map[string]string, err error, kind, name, key string, optional bool) (string, bool, error) {
	if apierrors.IsNotFound(err) {
		if optional {
			return "", false, nil
		}
		return "", false, &waiting{reasonConfigError, fmt.Sprintf("%s %q not found", kind, name)}
	}
	if err != nil {
		return "", false, err
	}
	v, ok := data[key]
	if !ok && !optional {
		return "", false, &waiting{reasonConfigError, fmt.Sprintf("couldn't find key %s in %s %q", key, kind, name)}
	}
	return v, ok, nil
}

// fieldValue resolves a fieldRef path against pod.
func fieldValue(pod *corev1.Pod, path string) (string, error) {
	if k, ok := mapKey(path); ok {
		m, key, _ := strings.Cut(k, "/")
		if m == "labels" {
			return pod.Labels[key], nil
		}
		return pod.Annotations[key], nil
	}
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		if pod.Spec.ServiceAccountName == "" {
			return "default", nil
		}
		return pod.Spec.ServiceAccountName, nil
	case "status.podIP", "status.podIPs":
		return pod.Status.PodIP, nil
	case "status.hostIP", "status.hostIPs":
		return pod.Status.HostIP, nil
	}
	return "", checkEnvSource(&corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}})
}

// expand replaces $(NAME) with the value of a variable defined earlier, as
// the kubelet does: $$ escapes a dollar, and references to undefined
// variables are left as written.
func expand(s string, vars map[string]string) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
			continue
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				break
			}
			name := s[i+2 : i+2+end]
			if v, ok := vars[name]; ok {
				b.WriteString(v)
			} else {
				b.WriteString(s[i : i+3+end])
			}
			i += 2 + end
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// localPath rewrites a value naming a file under a volume's mountPath to the
// same file in the local copy of the volume.
func localPath(v string, mounts []mount) string {
	for _, m := range mounts { // longest mountPath first
		if v == m.path {
			return m.local
		}
		if rest, ok := strings.CutPrefix(v, strings.TrimSuffix(m.path, "/")+"/"); ok {
			return filepath.Join(m.local, filepath.FromSlash(rest))
		}
	}
	return v
}

// writeVolumes writes the files of every volume the echo container mounts
// under dir and returns the mounts, longest mountPath first.
func writeVolumes(ctx context.Context, c client.Client, t *podTemplate, ns, dir string) ([]mount, error) {
	var mounts []mount
	for i, vm := range t.container.VolumeMounts {
		v := t.volumes[vm.Name]
		local := filepath.Join(dir, fmt.Sprintf("volume-%d", i))
		if err := os.MkdirAll(local, 0o700); err != nil {
			return nil, fmt.Errorf("volume %q: %w", vm.Name, err)
		}
		mounts = append(mounts, mount{path: vm.MountPath, local: local})
		var data map[string]string
		var items []corev1.KeyToPath
		var kind, name string
		var optional bool
		var err error
		switch {
		case v.EmptyDir != nil:
			continue
		case v.Secret != nil:
			kind, name, items, optional = "secret", v.Secret.SecretName, v.Secret.Items, deref(v.Secret.Optional)
			data, err = secretData(ctx, c, ns, name)
		case v.ConfigMap != nil:
			kind, name, items, optional = "configmap", v.ConfigMap.Name, v.ConfigMap.Items, deref(v.ConfigMap.Optional)
			data, err = configMapData(ctx, c, ns, name)
		}
		if apierrors.IsNotFound(err) {
			if optional {
				continue
			}
			return nil, &waiting{reasonCreating, fmt.Sprintf("MountVolume.SetUp failed for volume %q: %s %q not found", vm.Name, kind, name)}
		}
		if err != nil {
			return nil, err
		}
		files := map[string]string{}
		if len(items) == 0 {
			for k, val := range data {
				files[k] = val
			}
		}
		for _, it := range items {
			val, ok := data[it.Key]
			if !ok {
				if optional {
					continue
				}
				return nil, &waiting{reasonCreating, fmt.Sprintf("MountVolume.SetUp failed for volume %q: key %q not found in %s %q", vm.Name, it.Key, kind, name)}
			}
			files[it.Path] = val
		}
		for p, val := range files {
			clean := filepath.Clean(filepath.FromSlash(p))
			if filepath.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, ".."+string(filepath.Separator)) {
				return nil, fmt.Errorf("volume %q item path %q: accepted: a relative path without '..'", vm.Name, p)
			}
			f := filepath.Join(local, clean)
			if err := os.MkdirAll(filepath.Dir(f), 0o700); err != nil {
				return nil, fmt.Errorf("volume %q: %w", vm.Name, err)
			}
			if err := os.WriteFile(f, []byte(val), 0o600); err != nil {
				return nil, fmt.Errorf("volume %q: %w", vm.Name, err)
			}
		}
	}
	slices.SortStableFunc(mounts, func(a, b mount) int { return len(b.path) - len(a.path) })
	return mounts, nil
}

func secretData(ctx context.Context, c client.Client, ns, name string) (map[string]string, error) {
	var s corev1.Secret
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &s); err != nil {
		return nil, err
	}
	data := make(map[string]string, len(s.Data)+len(s.StringData))
	for k, v := range s.Data {
		data[k] = string(v)
	}
	for k, v := range s.StringData {
		data[k] = v
	}
	return data, nil
}

func configMapData(ctx context.Context, c client.Client, ns, name string) (map[string]string, error) {
	var cm corev1.ConfigMap
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &cm); err != nil {
		return nil, err
	}
	data := make(map[string]string, len(cm.Data)+len(cm.BinaryData))
	for k, v := range cm.Data {
		data[k] = v
	}
	for k, v := range cm.BinaryData {
		data[k] = string(v)
	}
	return data, nil
}

func deref(b *bool) bool { return b != nil && *b }
