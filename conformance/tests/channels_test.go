package tests_test

import (
	"bytes"
	"context"
	"errors"
	"go/ast"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/gateway-api/conformance/utils/suite"

	"github.com/gatewitness/gatewitness/cluster/crdneeds"
	"github.com/gatewitness/gatewitness/conformance/tests"
	"github.com/gatewitness/gatewitness/crds"
	"github.com/gatewitness/gatewitness/features"
)

// standardCRDDirs are where each supported Gateway API release's
// standard-channel CRDs are read from: go.mod's release from its module,
// v1.7.0 from this package's test data (a copy of the release's
// config/crd/standard, less what is not a CRD).
func standardCRDDir(t *testing.T, r features.Release) string {
	t.Helper()
	switch r {
	case features.ReleaseV17:
		return filepath.Join("testdata", "gwapi-v1.7.0-standard")
	case features.ReleaseV16:
		out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/gateway-api").Output()
		if err != nil {
			t.Fatalf("go list -m sigs.k8s.io/gateway-api: %v", err)
		}
		return filepath.Join(strings.TrimSpace(string(out)), "config", "crd", "standard")
	}
	t.Fatalf("no standard CRDs of release %s: add them to standardCRDDir", r)
	return ""
}

// manifestNeeds returns, for every gatewitness test, what its manifests
// need that the standard CRDs of release r lack.
func manifestNeeds(t *testing.T, r features.Release) map[string][]crdneeds.Need {
	t.Helper()
	dir := standardCRDDir(t, r)
	list, err := crds.ParseDir(os.DirFS(dir), ".")
	if err != nil {
		t.Fatal(err)
	}
	if ch, err := crds.Channel(list); err != nil || ch != string(features.ChannelStandard) {
		t.Fatalf("the CRDs of %s in %s: channel %q (%v); want standard", r, dir, ch, err)
	}
	checker, err := crdneeds.NewChecker(list)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]crdneeds.Need{}
	for _, ct := range tests.ConformanceTests {
		var docs [][]byte
		for _, m := range testManifests(t, ct) {
			data, err := fs.ReadFile(tests.Manifests, m)
			if err != nil {
				t.Fatalf("%s: manifest %s: %v", ct.ShortName, m, err)
			}
			docs = append(docs, data)
		}
		needs, err := checker.Check(context.Background(), docs...)
		if err != nil {
			t.Fatalf("%s: %v", ct.ShortName, err)
		}
		out[ct.ShortName] = needs
	}
	return out
}

// TestFeatureChannelsFollowTheManifests checks every gatewitness
// feature's declared channel, in every supported Gateway API release,
// against what the manifests of the tests that list it need: each test's
// manifests are applied to an in-memory store serving the release's
// standard-channel CRDs (their OpenAPI schemas and CEL rules), and a field
// it prunes, or a kind it does not serve, is one only the experimental
// channel (or gatewitness's overlays) has. A feature declared standard
// must have no test that needs one; a feature declared experimental must
// have at least one.
func TestFeatureChannelsFollowTheManifests(t *testing.T) {
	for _, r := range features.Releases {
		t.Run(string(r), func(t *testing.T) {
			needs := manifestNeeds(t, r)
			gated := gatedFeatures(t)
			for _, d := range features.Declarations() {
				checkDeclaredChannel(t, r, d, needs, gated)
			}
			for _, ct := range tests.ConformanceTests {
				if n := needs[ct.ShortName]; len(n) > 0 {
					t.Logf("%s: %s needs %s", r, ct.ShortName, crdneeds.Fields(n))
				}
			}
		})
	}
}

// checkDeclaredChannel checks feature d's channel on release r against
// the needs of the tests that check it (list it, or gate an assertion on
// it). Declared standard, every such test that needs a field the standard
// CRDs lack must list an experimental feature that explains it (the test
// does not run on the standard channel, and d is tested by the others),
// and at least one must need none. Declared experimental, at least one
// must need one.
func checkDeclaredChannel(t *testing.T, r features.Release, d features.Feature, needs map[string][]crdneeds.Need, gated map[string]map[features.FeatureName]bool) {
	t.Helper()
	ch := d.Channels[r]
	var checking, needing []string
	for _, ct := range tests.ConformanceTests {
		if !slices.Contains(ct.Features, d.Name) && !gated[ct.ShortName][d.Name] {
			continue
		}
		checking = append(checking, ct.ShortName)
		n := needs[ct.ShortName]
		if len(n) == 0 {
			continue
		}
		needing = append(needing, ct.ShortName)
		if ch == features.ChannelStandard && experimentalFeatureOf(ct, r) == "" {
			t.Errorf("%s: test %s needs %s, which %s's standard CRDs lack, and lists no feature of the experimental channel, but feature %s, which it checks, is declared standard on %s: declare it experimental there (or list the experimental feature the field belongs to)",
				r, ct.ShortName, crdneeds.Fields(n), r, d.Name, r)
		}
	}
	switch {
	case len(checking) == 0:
		t.Errorf("%s: no gatewitness test lists feature %s or gates an assertion on it, so nothing shows which channel it needs", r, d.Name)
	case ch == features.ChannelStandard && len(needing) == len(checking):
		t.Errorf("%s: feature %s is declared standard on %s, but every test that checks it (%s) needs a field or kind %s's standard CRDs lack (%s): declare it experimental there",
			r, d.Name, r, strings.Join(checking, ", "), r, crdneeds.Fields(needs[needing[0]]))
	case ch == features.ChannelExperimental && len(needing) == 0:
		t.Errorf("%s: feature %s is declared experimental on %s, but no test that checks it (%s) needs a field or kind %s's standard CRDs lack: declare it standard there",
			r, d.Name, r, strings.Join(checking, ", "), r)
	}
}

// experimentalFeatureOf returns a feature ct lists that is of the
// experimental channel on release r, or "": gatewitness's by their
// declarations, upstream's by the linked release's registry when r is it.
func experimentalFeatureOf(ct suite.ConformanceTest, r features.Release) features.FeatureName {
	linked, _ := features.LinkedRelease()
	for _, name := range ct.Features {
		if i := slices.IndexFunc(features.Declarations(), func(f features.Feature) bool { return f.Name == name }); i >= 0 {
			if features.Declarations()[i].Channels[r] == features.ChannelExperimental {
				return name
			}
			continue
		}
		if f, ok := features.Lookup(name); ok && r == linked && f.Channel == features.ChannelExperimental {
			return name
		}
	}
	return ""
}

// gatedFeatures returns, by test name, the gatewitness features the file
// declaring the test names as features.SupportX: the finer features a
// test checks when s.SupportedFeatures has them, without listing them.
func gatedFeatures(t *testing.T) map[string]map[features.FeatureName]bool {
	t.Helper()
	_, files := parsePackage(t)
	out := map[string]map[features.FeatureName]bool{}
	for _, f := range files {
		named := map[features.FeatureName]bool{}
		ast.Inspect(f.ast, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == "features" && strings.HasPrefix(sel.Sel.Name, "Support") {
				name := features.FeatureName(strings.TrimPrefix(sel.Sel.Name, "Support"))
				if features.IsGatewitness(name) || isDeclared(name) {
					named[name] = true
				}
			}
			return true
		})
		eachTestVariable(f.ast, func(name string, _ *ast.CompositeLit) { out[name] = named })
	}
	return out
}

// isDeclared reports whether name is an entry of gatewitness's feature
// data (of any release).
func isDeclared(name features.FeatureName) bool {
	return slices.ContainsFunc(features.Declarations(), func(f features.Feature) bool { return f.Name == name })
}

// testManifests returns the manifests ct applies: its Manifests, and the
// connection timeouts manifest when its file makes a connection timeouts
// Gateway (newConnGateway applies a renamed copy of it).
func testManifests(t *testing.T, ct suite.ConformanceTest) []string {
	t.Helper()
	out := slices.Clone(ct.Manifests)
	if connFixtureTests(t)[ct.ShortName] {
		out = append(out, tests.ConnManifest)
	}
	return out
}

// connFixtureTests returns the names of the tests declared in files that
// call newConnGateway.
func connFixtureTests(t *testing.T) map[string]bool {
	t.Helper()
	_, files := parsePackage(t)
	out := map[string]bool{}
	for _, f := range files {
		calls := false
		ast.Inspect(f.ast, func(n ast.Node) bool {
			if c, ok := n.(*ast.CallExpr); ok {
				if id, ok := c.Fun.(*ast.Ident); ok && id.Name == "newConnGateway" {
					calls = true
				}
			}
			return true
		})
		if calls {
			eachTestVariable(f.ast, func(name string, _ *ast.CompositeLit) { out[name] = true })
		}
	}
	return out
}

// TestEveryTestHasItsOwnHostnames checks that every route of a gatewitness
// test's manifests names hostnames, and that no two tests share one: on an
// implementation that serves the listeners of all Gateways on a port from
// one socket (a shared address), a route without hostnames, or with
// another test's, would take that test's requests. The connection
// timeout tests' copies get a hostname of their own (connFixture,
// TestRenamedConnObjects).
func TestEveryTestHasItsOwnHostnames(t *testing.T) {
	owner := map[string]string{} // hostname -> test
	for _, ct := range tests.ConformanceTests {
		for _, m := range ct.Manifests {
			data, err := fs.ReadFile(tests.Manifests, m)
			if err != nil {
				t.Fatal(err)
			}
			dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
			for {
				var u unstructured.Unstructured
				if err := dec.Decode(&u.Object); err != nil {
					if errors.Is(err, io.EOF) {
						break
					}
					t.Fatalf("%s: %v", m, err)
				}
				if !strings.HasSuffix(u.GetKind(), "Route") {
					continue
				}
				hosts, _, _ := unstructured.NestedStringSlice(u.Object, "spec", "hostnames")
				if len(hosts) == 0 {
					t.Errorf("%s: %s %s (test %s) names no hostnames: on a shared address it would answer other tests' requests; give it a hostname of the test's own", m, u.GetKind(), u.GetName(), ct.ShortName)
				}
				for _, h := range hosts {
					if o, ok := owner[h]; ok && o != ct.ShortName {
						t.Errorf("%s: %s %s (test %s) has the hostname %s of test %s: on a shared address one test would reach the other's backend; give each test its own", m, u.GetKind(), u.GetName(), ct.ShortName, h, o)
					}
					owner[h] = ct.ShortName
				}
			}
		}
	}
}
