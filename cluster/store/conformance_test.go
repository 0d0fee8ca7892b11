package store_test

import (
	"context"
	"io/fs"
	"os"
	"os/exec"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/gateway-api/conformance/utils/config"
	"sigs.k8s.io/gateway-api/conformance/utils/kubernetes"
)

// conformanceDir returns the directory of the upstream conformance module
// that go.mod requires.
func conformanceDir(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/gateway-api/conformance").Output()
	if err != nil {
		t.Fatalf("locating the conformance module: %v", err)
	}
	dir := strings.TrimSpace(string(out))
	if dir == "" {
		t.Fatal("the conformance module is not in the module cache: run go mod download")
	}
	return dir
}

// TestConformanceManifestsApply applies every manifest of the upstream
// conformance suite (base/ first, then each file of tests/, each with the
// cleanup the suite registers) through the upstream Applier, as the suite
// does, and requires each to apply cleanly.
func TestConformanceManifestsApply(t *testing.T) {
	if testing.Short() {
		t.Skip("applies every upstream manifest")
	}
	fsys := os.DirFS(conformanceDir(t))
	s := newStore(t)
	applier := kubernetes.Applier{
		GatewayClass:             "gatewitness",
		ControllerName:           "gatewitness.dev/gateway-controller",
		ManifestFS:               []fs.FS{fsys},
		UsableNetworkAddresses:   []gatewayv1.GatewaySpecAddress{{Value: "192.0.2.1"}},
		UnusableNetworkAddresses: []gatewayv1.GatewaySpecAddress{{Value: "198.51.100.1"}},
	}
	timeouts := config.DefaultTimeoutConfig()

	// The mesh tests' manifests (tests/mesh/) need the mesh base.
	applier.MustApplyWithCleanup(t, s, timeouts, "base/manifests.yaml", false)
	applier.MustApplyWithCleanup(t, s, timeouts, "mesh/manifests.yaml", false)

	var files []string
	err := fs.WalkDir(fsys, "tests", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".yaml") {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 150 {
		t.Fatalf("found %d manifests under tests/, want the upstream suite's 150+", len(files))
	}
	for _, f := range files {
		t.Run(strings.TrimPrefix(f, "tests/"), func(t *testing.T) {
			applier.MustApplyWithCleanup(t, s, timeouts, f, true)
		})
	}

	// The CRD defaults were applied to what the suite created.
	t.Run("defaults", func(t *testing.T) {
		applier.MustApplyWithCleanup(t, s, timeouts, "tests/httproute-simple-same-namespace.yaml", true)
		r := &gatewayv1.HTTPRoute{}
		key := client.ObjectKey{Namespace: "gateway-conformance-infra", Name: "gateway-conformance-infra-test"}
		if err := s.Get(context.Background(), key, r); err != nil {
			t.Fatal(err)
		}
		m := r.Spec.Rules[0].Matches
		if len(m) != 1 || m[0].Path == nil || *m[0].Path.Type != gatewayv1.PathMatchPathPrefix || *m[0].Path.Value != "/" {
			t.Fatalf("matches = %+v, want the default single PathPrefix / match", m)
		}
		gw := &gatewayv1.Gateway{}
		if err := s.Get(context.Background(), client.ObjectKey{Namespace: "gateway-conformance-infra", Name: "same-namespace"}, gw); err != nil {
			t.Fatal(err)
		}
		if gw.Spec.GatewayClassName != "gatewitness" {
			t.Fatalf("gatewayClassName = %q, want the Applier's gatewitness", gw.Spec.GatewayClassName)
		}
	})

	ns := &corev1.NamespaceList{}
	if err := s.List(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	if len(ns.Items) < 4 {
		t.Fatalf("namespaces after applying base: %d", len(ns.Items))
	}
}
