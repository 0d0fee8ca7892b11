package crds

import (
	"strings"
	"testing"
	"testing/fstest"
)

const testCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
  annotations:
    gateway.networking.k8s.io/bundle-version: v9.9.9
spec:
  group: example.com
  names: {kind: Widget, plural: widgets}
  scope: Namespaced
  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}]
`

// TestLoadReleaseDir reads a directory laid out as crds/, with a release's
// config/crd/experimental files at its root: the CRDs are read,
// kustomization.yaml and the ValidatingAdmissionPolicy file are not (they
// are not CRDs). A directory without overlays/ is an error, so that
// gatewitness's GRPCRoute fields are not lost unnoticed.
func TestLoadReleaseDir(t *testing.T) {
	dir := fstest.MapFS{
		"widgets.yaml":       {Data: []byte(testCRD)},
		"overlays/README.md": {Data: []byte("no overlays\n")},
		"kustomization.yaml": {Data: []byte("resources: [widgets.yaml]\n")},
		"gateway.networking.k8s.io_vap_safeupgrades.yaml": {Data: []byte("apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\nmetadata: {name: x}\n")},
	}
	list, err := loadFS(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].Name != "widgets.example.com" {
		t.Fatalf("loaded %d CRDs (%v), want widgets.example.com only", len(list), list)
	}
	if err := checkBundleVersion(list, "v9.9.9"); err != nil {
		t.Errorf("same release: %v", err)
	}
	if _, err := loadFS(fstest.MapFS{"widgets.yaml": {Data: []byte(testCRD)}}); err == nil || !strings.Contains(err.Error(), OverlayDir) {
		t.Errorf("no overlays/: error %v, want one naming %s", err, OverlayDir)
	}
	err = checkBundleVersion(list, "v1.7.0")
	if err == nil || !strings.Contains(err.Error(), DirEnv) || !strings.Contains(err.Error(), "v9.9.9") || !strings.Contains(err.Error(), "gateway-api@v1.7.0/config/crd/experimental") {
		t.Errorf("other release: error %v; want one naming both releases and %s with the directory to use", err, DirEnv)
	}
}
