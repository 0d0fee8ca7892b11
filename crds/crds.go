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
	"os"
	"path"
	"slices"
	"strings"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/gateway-api/pkg/consts"
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

// DirEnv names the environment variable that, when set, makes Load read
// the CRDs from that directory instead of the embedded ones. The directory
// is laid out as this package's: a Gateway API release's experimental CRDs
// at its root (as hack/sync-crds.sh copies them) and gatewitness's overlays
// of them in overlays/ (as hack/gen-crd-overlays writes them). It is how a
// program linked against another Gateway API release than go.mod's (make
// test-gwapi-v1.7) serves that release's CRDs in-process.
const DirEnv = "GATEWITNESS_CRD_DIR"

// Load returns the embedded CRDs (or those of DirEnv), sorted by name, with
// the embedded overlays applied. The files are decoded once per process;
// every call returns fresh deep copies that the caller may modify.
//
// The CRDs must be those of the linked Gateway API release (their
// bundle-version annotation equal to consts.BundleVersion), since the
// upstream suite refuses to run against others: Load returns an error
// naming DirEnv when they are not.
func Load() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	loadOnce.Do(func() {
		fsys := fs.FS(FS)
		if dir := os.Getenv(DirEnv); dir != "" {
			fsys = os.DirFS(dir)
		}
		loaded, loadErr = loadFS(fsys)
		if loadErr == nil {
			loadErr = checkBundleVersion(loaded, consts.BundleVersion)
		}
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

// loadFS reads the upstream CRDs at the root of fsys and applies the
// overlays under OverlayDir.
func loadFS(fsys fs.FS) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	upstream, err := ParseDir(fsys, ".")
	if err != nil {
		return nil, err
	}
	overlays, err := ParseDir(fsys, OverlayDir)
	if err != nil {
		return nil, err
	}
	return Overlay(upstream, overlays), nil
}

// BundleVersionAnnotation is the annotation of every upstream CRD that
// names its Gateway API release.
const BundleVersionAnnotation = "gateway.networking.k8s.io/bundle-version"

// checkBundleVersion checks that every upstream CRD of list (those with a
// bundle-version annotation) is of release want.
func checkBundleVersion(list []*apiextensionsv1.CustomResourceDefinition, want string) error {
	for _, c := range list {
		got, ok := c.Annotations[BundleVersionAnnotation]
		if !ok || got == want {
			continue
		}
		src := "the embedded CRDs are"
		if dir := os.Getenv(DirEnv); dir != "" {
			src = fmt.Sprintf("the CRDs in %s=%s are", DirEnv, dir)
		}
		return fmt.Errorf("crds: %s Gateway API %s (%s), but the linked sigs.k8s.io/gateway-api is %s; "+
			"set %s to a directory holding that release's experimental CRDs "+
			"($(go env GOMODCACHE)/sigs.k8s.io/gateway-api@%s/config/crd/experimental) and gatewitness's overlays of them in overlays/ "+
			"(go run ./hack/gen-crd-overlays -crds DIR), as make test-gwapi-v1.7 does",
			src, got, c.Name, want, DirEnv, want)
	}
	return nil
}

// ParseDir decodes every *.yaml file directly inside dir of fsys, in name
// order. Other files and subdirectories are ignored, and so are the files
// of a release's config/crd/experimental that are not CRDs
// (kustomization.yaml and the ValidatingAdmissionPolicy *_vap_*.yaml; see
// README.md).
func ParseDir(fsys fs.FS, dir string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("crds: reading %s: %w", dir, err)
	}
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".yaml") ||
			e.Name() == "kustomization.yaml" || strings.Contains(e.Name(), "_vap_") {
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

// ChannelAnnotation is the annotation of every upstream CRD that names its
// Gateway API release channel, standard or experimental.
const ChannelAnnotation = consts.ChannelAnnotation

// Channel returns the release channel of list's upstream CRDs (those with
// a channel annotation; gatewitness's overlays keep upstream's), as
// upstream's suite reads it for its report. It is an error when list has
// no upstream CRD or when they are of more than one channel.
func Channel(list []*apiextensionsv1.CustomResourceDefinition) (string, error) {
	channel := ""
	for _, c := range list {
		got, ok := c.Annotations[ChannelAnnotation]
		if !ok {
			continue
		}
		if channel != "" && got != channel {
			return "", fmt.Errorf("crds: %s is of the %s channel (annotation %s) and others of the %s channel; want the CRDs of one channel",
				c.Name, got, ChannelAnnotation, channel)
		}
		channel = got
	}
	if channel == "" {
		return "", fmt.Errorf("crds: no CRD has the annotation %s; want a Gateway API release's CRDs", ChannelAnnotation)
	}
	return channel, nil
}
