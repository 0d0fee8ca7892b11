// Package crds embeds the Gateway API experimental-channel
// CustomResourceDefinitions that the in-process store serves, and decodes
// them.
//
// The YAML files are copied from the sigs.k8s.io/gateway-api module by
// hack/sync-crds.sh; see README.md in this directory for their origin and how
// to refresh them. CRDs in overlays/ replace upstream CRDs of the same name.
package crds

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// FS holds the upstream CRD files at its root and the overlays under
// overlays/.
//
//go:embed *.yaml overlays
var FS embed.FS

// OverlayDir is the directory of FS whose CRDs replace upstream CRDs of the
// same name.
const OverlayDir = "overlays"

var (
	loadOnce sync.Once
	loaded   []*apiextensionsv1.CustomResourceDefinition
	loadErr  error
)

// Load returns the embedded CRDs, sorted by name, with the embedded overlays
// applied. The files are decoded once per process; every call returns fresh
// deep copies that the caller may modify.
func Load() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	loadOnce.Do(func() {
		loaded, loadErr = loadFS(FS)
	})
	if loadErr != nil {
		return nil, loadErr
	}
	out := make([]*apiextensionsv1.CustomResourceDefinition, len(loaded))
	for i, c := range loaded {
		out[i] = c.DeepCopy()
	}
	return out, nil
}

func loadFS(fsys fs.FS) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	base, err := ParseDir(fsys, ".")
	if err != nil {
		return nil, err
	}
	overlays, err := ParseDir(fsys, OverlayDir)
	if err != nil {
		return nil, err
	}
	return Overlay(base, overlays), nil
}

// ParseDir decodes every *.yaml file directly inside dir of fsys, in name
// order. Other files and subdirectories are ignored.
func ParseDir(fsys fs.FS, dir string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("crds: reading %s: %w", dir, err)
	}
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".yaml") {
			continue
		}
		name := path.Join(dir, e.Name())
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, fmt.Errorf("crds: reading %s: %w", name, err)
		}
		parsed, err := Parse(data)
		if err != nil {
			return nil, fmt.Errorf("crds: %s: %w", name, err)
		}
		out = append(out, parsed...)
	}
	return out, nil
}

// Parse decodes a YAML or JSON stream of one or more
// apiextensions.k8s.io/v1 CustomResourceDefinition documents. Empty documents
// are skipped; a document of any other kind is an error.
func Parse(data []byte) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*apiextensionsv1.CustomResourceDefinition
	for i := 0; ; i++ {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := dec.Decode(crd); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if crd.APIVersion == "" && crd.Kind == "" && crd.Name == "" {
			continue // empty document
		}
		if crd.APIVersion != apiextensionsv1.SchemeGroupVersion.String() || crd.Kind != "CustomResourceDefinition" {
			return nil, fmt.Errorf("document %d: apiVersion %q kind %q: want apiVersion %q kind \"CustomResourceDefinition\"",
				i, crd.APIVersion, crd.Kind, apiextensionsv1.SchemeGroupVersion.String())
		}
		if crd.Name == "" {
			return nil, fmt.Errorf("document %d: metadata.name is empty: want <plural>.<group>", i)
		}
		out = append(out, crd)
	}
}

// Overlay returns base with every CRD whose name matches an overlay replaced
// by that overlay; overlays with new names are added. The result is sorted by
// name. When several overlays share a name, the last one wins. The CRDs are
// not copied.
func Overlay(base, overlays []*apiextensionsv1.CustomResourceDefinition) []*apiextensionsv1.CustomResourceDefinition {
	byName := make(map[string]*apiextensionsv1.CustomResourceDefinition, len(base)+len(overlays))
	for _, c := range base {
		byName[c.Name] = c
	}
	for _, c := range overlays {
		byName[c.Name] = c
	}
	out := make([]*apiextensionsv1.CustomResourceDefinition, 0, len(byName))
	for _, c := range byName {
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b *apiextensionsv1.CustomResourceDefinition) int { return strings.Compare(a.Name, b.Name) })
	return out
}
