package pods

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gatewitness/gatewitness/cluster/store"
)

func TestImageAccepted(t *testing.T) {
	for image, want := range map[string]bool{
		"registry.k8s.io/gateway-api/echo-basic:v1.5.1":            true,
		"registry.k8s.io/gateway-api/echo-basic":                   true,
		"echo-basic":                                               true,
		"ghcr.io/gatewitness/echo-backend@sha256:0123456789abcdef": true,
		"localhost:5000/echo-backend:dev":                          true,
		"localhost:5000/echo-backend":                              true,
		"registry.k8s.io/gateway-api/echo-basic-v2:v1":             false,
		"registry.k8s.io/echo-basic/nginx:1":                       false,
		"nginx:1.27":                                               false,
		"registry.k8s.io/coredns/coredns:v1.12.2":                  false,
		"docker.io/istio/proxyv2:1.22.0":                           false,
		"example.com:5000/team/echo-backend:v1@sha256:0123456789":  true,
	} {
		if got := imageAccepted(image); got != want {
			t.Errorf("imageAccepted(%q) = %v, want %v (repository %q)", image, got, want, repository(image))
		}
	}
	if !isSidecar("docker.io/istio/proxyv2:1.22.0") || !isSidecar("cr.l5d.io/linkerd/proxy:stable") || isSidecar("example.com/proxy:1") {
		t.Error("isSidecar does not match the known mesh proxies exactly")
	}
}

func TestParseTemplateErrors(t *testing.T) {
	five := int32(5)
	tests := []struct {
		name   string
		mutate func(*appsv1.Deployment)
		want   []string // each must appear in the error
	}{
		{"ok", func(*appsv1.Deployment) {}, nil},
		{"two echo containers", func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.Containers = append(d.Spec.Template.Spec.Containers, corev1.Container{Name: "b", Image: "echo-basic"})
		}, []string{"spec.template.spec.containers[1] (b): a second echo-backend container"}},
		{"args", func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.Containers[0].Args = []string{"-mode=grpc"}
		}, []string{"spec.template.spec.containers[0] (a): command/args: accepted: none in-process"}},
		{"host port", func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 3000, HostPort: 80}}
		}, []string{"spec.template.spec.containers[0].ports[0].hostPort: 80"}},
		{"replicas", func(d *appsv1.Deployment) { d.Spec.Replicas = &five }, []string{"spec.replicas: 5: accepted: at most 4 in-process"}},
		{"volume type", func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}}
		}, []string{"spec.template.spec.volumes[0] (data): accepted in-process: secret, configMap or emptyDir"}},
		{"unknown mount", func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "nope", MountPath: "/x"}}
		}, []string{`spec.template.spec.containers[0].volumeMounts[0].name: "nope"`}},
		{"field path", func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "X", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.restartPolicy"}}}}
		}, []string{`spec.template.spec.containers[0].env[0] (X).valueFrom: fieldRef.fieldPath: "spec.restartPolicy": accepted: metadata.name`}},
		{"init container and bad image together", func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "busybox"}}
			d.Spec.Template.Spec.Containers[0].Image = "nginx"
		}, []string{"initContainers[0] (init)", `containers[0].image: "nginx"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "a", Image: "registry.k8s.io/gateway-api/echo-basic:v1.5.1"}},
			}}}}
			tc.mutate(d)
			pt, err := parseTemplate(d, 4)
			if tc.want == nil {
				if err != nil || pt.container == nil || pt.hash == "" {
					t.Fatalf("parseTemplate = %+v, %v; want the container and a hash", pt, err)
				}
				return
			}
			if err == nil {
				t.Fatal("parseTemplate accepted it")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestTemplateHashChangesWithTemplate(t *testing.T) {
	a := &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Image: "echo-basic"}}}}
	b := a.DeepCopy()
	b.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "X", Value: "1"}}
	if templateHash(a) != templateHash(a.DeepCopy()) {
		t.Error("hash of equal templates differs")
	}
	if templateHash(a) == templateHash(b) {
		t.Error("hash did not change with the env")
	}
}

func TestExpand(t *testing.T) {
	vars := map[string]string{"A": "x", "B": "y"}
	for in, want := range map[string]string{
		"plain":         "plain",
		"$(A)":          "x",
		"$(A)-$(B)":     "x-y",
		"$(C)":          "$(C)",
		"$$(A)":         "$(A)",
		"cost $5":       "cost $5",
		"$(A":           "$(A",
		"end$":          "end$",
		"$(A)$(A)$$$$x": "xx$$x",
	} {
		if got := expand(in, vars); got != want {
			t.Errorf("expand(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestLocalPath(t *testing.T) {
	mounts := []mount{{path: "/etc/secret-volume/deeper", local: "/tmp/b"}, {path: "/etc/secret-volume", local: "/tmp/a"}}
	for in, want := range map[string]string{
		"/etc/secret-volume/crt":        "/tmp/a/crt",
		"/etc/secret-volume/deeper/key": "/tmp/b/key",
		"/etc/secret-volume":            "/tmp/a",
		"/etc/secret-volumes/crt":       "/etc/secret-volumes/crt",
		"3000":                          "3000",
	} {
		if got := localPath(in, mounts); got != want {
			t.Errorf("localPath(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestPodEnv resolves every kind of env source and a ConfigMap volume
// against a store.
func TestPodEnv(t *testing.T) {
	s, err := store.New(store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	yes := true
	if err := s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "sec"}, Data: map[string][]byte{"port": []byte("4000")}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "cm"}, Data: map[string]string{"MODE": "1", "file.txt": "hello"}}); err != nil {
		t.Fatal(err)
	}
	pt := &podTemplate{
		container: &corev1.Container{
			EnvFrom: []corev1.EnvFromSource{{Prefix: "CM_", ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}}},
			Env: []corev1.EnvVar{
				{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
				{Name: "IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
				{Name: "APP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['app']"}}},
				{Name: "HTTP_PORT", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "sec"}, Key: "port"}}},
				{Name: "MISSING", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "nope"}, Key: "k", Optional: &yes}}},
				{Name: "URL", Value: "http://$(IP):$(HTTP_PORT)/"},
				{Name: "FILE", Value: "/config/file.txt"},
			},
			VolumeMounts: []corev1.VolumeMount{{Name: "cfg", MountPath: "/config"}},
		},
		volumes: map[string]*corev1.Volume{"cfg": {Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}}}},
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "p-1", Labels: map[string]string{"app": "web"}}, Status: corev1.PodStatus{PodIP: "127.2.0.9"}}
	dir := t.TempDir()
	env, err := podEnv(ctx, s, pt, pod, dir)
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{
		"POD_NAME": "p-1", "IP": "127.2.0.9", "APP": "web", "HTTP_PORT": "4000", "CM_MODE": "1",
		"URL": "http://127.2.0.9:4000/",
	} {
		if env[k] != want {
			t.Errorf("%s = %q, want %q", k, env[k], want)
		}
	}
	if _, ok := env["MISSING"]; ok {
		t.Error("an optional reference to a missing Secret set its variable")
	}
	b, err := os.ReadFile(env["FILE"])
	if err != nil || string(b) != "hello" || !strings.HasPrefix(env["FILE"], dir) {
		t.Errorf("FILE = %q (read %q, %v), want a file under %s holding the ConfigMap's value", env["FILE"], b, err, dir)
	}

	// A required Secret that is missing makes the pod wait, naming it.
	pt.container.Env = append(pt.container.Env, corev1.EnvVar{Name: "TOKEN", ValueFrom: &corev1.EnvVarSource{
		SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "token"}, Key: "t"}}})
	_, err = podEnv(ctx, s, pt, pod, filepath.Join(dir, "2"))
	var w *waiting
	if !errors.As(err, &w) || w.reason != reasonConfigError || !strings.Contains(w.message, `secret "token" not found`) {
		t.Errorf("missing secret: %v, want %s naming it", err, reasonConfigError)
	}
}
