package localcp

import (
	"crypto/x509"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := pem.Decode(data)
	if b == nil || b.Type != "CERTIFICATE" {
		t.Fatalf("%s: no CERTIFICATE block", path)
	}
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return c
}

func TestWritePKI(t *testing.T) {
	dir := t.TempDir()
	p, err := writePKI(dir, net.ParseIP("10.96.0.1"))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(readCert(t, p.CACert))

	serving := readCert(t, p.ServingCert)
	for _, name := range []string{"127.0.0.1", "10.96.0.1", "localhost", "kubernetes.default.svc"} {
		if _, err := serving.Verify(x509.VerifyOptions{Roots: roots, DNSName: name, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			t.Errorf("serving certificate for %s: %v", name, err)
		}
	}
	if _, err := serving.Verify(x509.VerifyOptions{Roots: roots, DNSName: "example.com"}); err == nil {
		t.Error("serving certificate verified for example.com; want an error")
	}

	admin := readCert(t, p.AdminCert)
	if _, err := admin.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("admin certificate: %v", err)
	}
	if !slices.Contains(admin.Subject.Organization, "system:masters") {
		t.Errorf("admin organizations %v; want system:masters", admin.Subject.Organization)
	}

	for _, key := range []string{p.CAKey, p.ServingKey, p.AdminKey, p.SAKey} {
		fi, err := os.Stat(key)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s mode %v; want 0600", filepath.Base(key), fi.Mode().Perm())
		}
	}
}

func TestMissingBinaries(t *testing.T) {
	dir := t.TempDir()
	if got := MissingBinaries(dir); !slices.Equal(got, Binaries) {
		t.Fatalf("empty dir: missing %v; want %v", got, Binaries)
	}
	for _, b := range Binaries[:2] {
		if err := os.WriteFile(filepath.Join(dir, b), nil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if got := MissingBinaries(dir); !slices.Equal(got, Binaries[2:]) {
		t.Fatalf("missing %v; want %v", got, Binaries[2:])
	}
}

func TestEchoContainer(t *testing.T) {
	for image, want := range map[string]bool{
		"gcr.io/k8s-staging-gateway-api/echo-basic:v20240412-v1.0.0-394-g40c666fd": true,
		"gatewitness/echo-backend:dev":                                             true,
		"echo-backend@sha256:0123":                                                 true,
		"registry.k8s.io/e2e-test-images/agnhost:2.39":                             false,
		"example.com/echo-basic-fork:v1":                                           false,
		"localhost:5000/echo-basic":                                                true,
	} {
		pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "sidecar", Image: "istio/proxyv2"}, {Name: "echo", Image: image}}}}
		ct := echoContainer(pod)
		if got := ct != nil; got != want {
			t.Errorf("%s: echo container found %v; want %v", image, got, want)
		}
		if ct != nil && ct.Name != "echo" {
			t.Errorf("%s: container %s; want echo", image, ct.Name)
		}
	}
}

func TestContainerEnv(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "ns"},
		Spec:       corev1.PodSpec{NodeName: "node"},
		Status:     corev1.PodStatus{PodIP: "10.244.0.7"},
	}
	field := func(p string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: p}}
	}
	ct := &corev1.Container{Env: []corev1.EnvVar{
		{Name: "POD_NAME", ValueFrom: field("metadata.name")},
		{Name: "NAMESPACE", ValueFrom: field("metadata.namespace")},
		{Name: "IP", ValueFrom: field("status.podIP")},
		{Name: "WHO", Value: "$(POD_NAME).$(NAMESPACE)@$(IP)"},
	}}
	got, err := containerEnv(pod, ct)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"POD_NAME=web-1", "NAMESPACE=ns", "IP=10.244.0.7", "WHO=web-1.ns@10.244.0.7"}
	if !slices.Equal(got, want) {
		t.Errorf("env %q; want %q", got, want)
	}

	ct.Env = append(ct.Env, corev1.EnvVar{Name: "LIMIT", ValueFrom: field("metadata.labels['x']")})
	if _, err := containerEnv(pod, ct); err == nil || !strings.Contains(err.Error(), "env LIMIT") || !strings.Contains(err.Error(), "accepted:") {
		t.Errorf("unsupported fieldRef: error %v; want one naming env LIMIT and the accepted paths", err)
	}
	ct.Env = []corev1.EnvVar{{Name: "KEY", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{Key: "k"}}}}
	if _, err := containerEnv(pod, ct); err == nil || !strings.Contains(err.Error(), "env KEY") {
		t.Errorf("secretKeyRef: error %v; want one naming env KEY", err)
	}
}

func TestRewriteMountPath(t *testing.T) {
	mounts := []volumeMount{{"/etc/secret-volume", "/tmp/a"}, {"/etc/secret-volume/inner", "/tmp/b"}}
	for in, want := range map[string]string{
		"TLS_SERVER_CERT=/etc/secret-volume/crt": "TLS_SERVER_CERT=/tmp/a/crt",
		"X=/etc/secret-volume/inner/key":         "X=/tmp/b/key",
		"X=/etc/secret-volume":                   "X=/tmp/a",
		"X=/etc/secret-volumex/crt":              "X=/etc/secret-volumex/crt",
		"HTTP_PORT=3000":                         "HTTP_PORT=3000",
	} {
		if got := rewriteMountPath(in, mounts); got != want {
			t.Errorf("rewriteMountPath(%q) = %q; want %q", in, got, want)
		}
	}
}
