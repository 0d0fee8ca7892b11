package plugin_test

import (
	"io/fs"
	"slices"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/gateway-api/conformance"
	upstream "sigs.k8s.io/gateway-api/conformance/tests"
	"sigs.k8s.io/gateway-api/conformance/utils/suite"

	"github.com/gatewitness/gatewitness/conformance/plugin"
	gctests "github.com/gatewitness/gatewitness/conformance/tests"
	"github.com/gatewitness/gatewitness/features"
)

// TestTestsAreGatewitnesss checks that the plug-in exports every one of
// gatewitness's tests, in order, as a copy, and that none shares a
// ShortName with an upstream test (the suite keys results by it).
func TestTestsAreGatewitnesss(t *testing.T) {
	if len(plugin.ConformanceTests) == 0 {
		t.Fatal("plugin.ConformanceTests is empty")
	}
	names := func(ts []suite.ConformanceTest) []string {
		var out []string
		for _, ct := range ts {
			out = append(out, ct.ShortName)
		}
		return out
	}
	if got, want := names(plugin.ConformanceTests), names(gctests.ConformanceTests); !slices.Equal(got, want) {
		t.Errorf("plugin.ConformanceTests are %q; want gatewitness's %q", got, want)
	}
	if &plugin.ConformanceTests[0] == &gctests.ConformanceTests[0] {
		t.Error("plugin.ConformanceTests shares its array with conformance/tests; want a copy")
	}
	theirs := map[string]bool{}
	for _, ct := range upstream.ConformanceTests {
		theirs[ct.ShortName] = true
	}
	for _, ct := range plugin.ConformanceTests {
		if theirs[ct.ShortName] {
			t.Errorf("test %s has the ShortName of an upstream test", ct.ShortName)
		}
	}
}

// TestManifestsUnderOwnPrefix checks that every manifest a test names is
// in Manifests under ManifestPrefix, and that no file of Manifests would
// shadow or be shadowed by an upstream manifest of the same path.
func TestManifestsUnderOwnPrefix(t *testing.T) {
	for _, ct := range plugin.ConformanceTests {
		for _, m := range ct.Manifests {
			if !strings.HasPrefix(m, plugin.ManifestPrefix) {
				t.Errorf("test %s names manifest %s, outside %s", ct.ShortName, m, plugin.ManifestPrefix)
			}
			if _, err := fs.Stat(plugin.Manifests, m); err != nil {
				t.Errorf("test %s: manifest %s: %v", ct.ShortName, m, err)
			}
		}
	}
	n := 0
	err := fs.WalkDir(plugin.Manifests, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		n++
		if !strings.HasPrefix(path, plugin.ManifestPrefix) {
			t.Errorf("Manifests holds %s, outside %s", path, plugin.ManifestPrefix)
		}
		if _, err := fs.Stat(&conformance.Manifests, path); err == nil {
			t.Errorf("Manifests and upstream's both hold %s", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Error("Manifests holds no files")
	}
}

// newSuite builds an upstream suite as an implementer's test would, on a
// client that serves no objects (the suite only lists CRDs when built).
func newSuite(t *testing.T, opts suite.ConformanceOptions) (*suite.ConformanceTestSuite, error) {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	opts.Client = fake.NewClientBuilder().WithScheme(scheme).Build()
	opts.AllowCRDsMismatch = true // no CRDs on the fake client
	opts.ManifestFS = append(opts.ManifestFS, &conformance.Manifests, plugin.Manifests)
	return suite.NewConformanceTestSuite(opts)
}

// TestProfilesKnownUpstream checks that every exported profile is
// gatewitness's, is registered with the upstream suite (which refuses a
// profile it does not know) and enables its core features there.
func TestProfilesKnownUpstream(t *testing.T) {
	if len(plugin.Profiles) == 0 {
		t.Fatal("plugin.Profiles is empty")
	}
	for _, name := range plugin.Profiles {
		p, ok := features.LookupProfile(string(name))
		if !ok || p.Upstream {
			t.Errorf("profile %s: found %v, upstream %v; want one of gatewitness's", name, ok, p.Upstream)
			continue
		}
		s, err := newSuite(t, suite.ConformanceOptions{ConfigurableOptions: suite.ConfigurableOptions{
			GatewayClassName:    "any",
			ConformanceProfiles: []suite.ConformanceProfileName{name},
			SupportedFeatures:   p.Extended,
		}})
		if err != nil {
			t.Errorf("the upstream suite refuses profile %s: %v", name, err)
			continue
		}
		for _, f := range p.Core {
			if !s.SupportedFeatures.Has(f) {
				t.Errorf("profile %s: the upstream suite does not enable its core feature %s", name, f)
			}
		}
	}
	// The check above can fail: the suite refuses a profile it does not know.
	if _, err := newSuite(t, suite.ConformanceOptions{ConfigurableOptions: suite.ConfigurableOptions{
		GatewayClassName:    "any",
		ConformanceProfiles: []suite.ConformanceProfileName{"GATEWITNESS-NO-SUCH-PROFILE"},
		SupportedFeatures:   []features.FeatureName{"Gateway"},
	}}); err == nil {
		t.Error("the upstream suite accepted an unknown profile; the check above proves nothing")
	}
}

// TestSetTimingTolerance checks that the plug-in sets the tolerance the
// tests read, and refuses a non-positive one with a message saying what
// it wants.
func TestSetTimingTolerance(t *testing.T) {
	defer gctests.SetTimingTolerance(gctests.DefaultTimingTolerance)
	if err := plugin.SetTimingTolerance(1500 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if got := gctests.TimingTolerance(); got != 1500*time.Millisecond {
		t.Errorf("TimingTolerance() = %v after SetTimingTolerance(1.5s)", got)
	}
	if err := plugin.SetTimingTolerance(0); err == nil || !strings.Contains(err.Error(), "accepted: a duration from 500ms to 2s") {
		t.Errorf("SetTimingTolerance(0) = %v; want an error saying what it wants", err)
	}
}

// TestSetRetryBudgetLoad checks that the plug-in sets the load the
// retry-budget load tests read, and that a bad value is refused, named,
// and changes nothing.
func TestSetRetryBudgetLoad(t *testing.T) {
	defer gctests.SetRetryBudgetLoad(gctests.DefaultRetryBudgetLoad())
	want := plugin.RetryBudgetLoad{QPS: 20, Requests: 120, ShareSlack: 0.08}
	if err := plugin.SetRetryBudgetLoad(want); err != nil {
		t.Fatal(err)
	}
	if got := gctests.RetryBudgetLoadOptions(); got != want {
		t.Errorf("RetryBudgetLoadOptions() = %+v after SetRetryBudgetLoad(%+v)", got, want)
	}
	bad := plugin.DefaultRetryBudgetLoad()
	bad.QPS = 5
	err := plugin.SetRetryBudgetLoad(bad)
	if err == nil || !strings.Contains(err.Error(), "qps 5 is out of range; accepted: requests a second from 20 to 400") {
		t.Errorf("SetRetryBudgetLoad(qps 5) = %v; want an error naming qps and its range", err)
	}
	if got := gctests.RetryBudgetLoadOptions(); got != want {
		t.Errorf("a refused load changed the options to %+v", got)
	}
}
