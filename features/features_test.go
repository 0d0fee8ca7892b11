package features

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	confv1 "sigs.k8s.io/gateway-api/conformance/apis/v1"
	"sigs.k8s.io/gateway-api/conformance/utils/suite"
	"sigs.k8s.io/gateway-api/pkg/consts"
	gwfeatures "sigs.k8s.io/gateway-api/pkg/features"
)

func TestEveryUpstreamFeatureIsRegistered(t *testing.T) {
	for _, uf := range gwfeatures.AllFeatures.UnsortedList() {
		f, ok := Lookup(uf.Name)
		if !ok {
			t.Errorf("upstream feature %s is not registered", uf.Name)
			continue
		}
		if !f.Upstream {
			t.Errorf("%s: Upstream = false, want true", uf.Name)
		}
		if string(f.Channel) != string(uf.Channel) {
			t.Errorf("%s: Channel = %q, want upstream's %q", uf.Name, f.Channel, uf.Channel)
		}
	}
	ownList, err := ownFeatures()
	if err != nil {
		t.Fatal(err)
	}
	own := len(ownList)
	if got, want := len(All()), gwfeatures.AllFeatures.Len()+own; got != want {
		t.Errorf("len(All()) = %d, want %d (upstream features plus gatewitness's %d)", got, want, own)
	}
}

func TestUpstreamLevelsAndDependencies(t *testing.T) {
	tests := []struct {
		name  FeatureName
		level Level
		deps  []FeatureName
		gep   int
	}{
		{gwfeatures.SupportHTTPRoute, LevelCore, nil, 0},
		{gwfeatures.SupportGateway, LevelCore, nil, 0},
		{gwfeatures.SupportBackendTLSPolicy, LevelCore, nil, 1897},
		{gwfeatures.SupportTCPRoute, LevelExtended, nil, 2644},
		{gwfeatures.SupportUDPRoute, LevelExtended, nil, 2645},
		{gwfeatures.SupportHTTPRouteRequestTimeout, LevelExtended, []FeatureName{gwfeatures.SupportHTTPRoute}, 1742},
		{SupportHTTPRouteRetryBackendTimeout, LevelExtended,
			[]FeatureName{gwfeatures.SupportHTTPRoute, SupportHTTPRouteRetry, gwfeatures.SupportHTTPRouteBackendTimeout}, 1731},
		{gwfeatures.SupportGatewayPort8080, LevelExtended, []FeatureName{gwfeatures.SupportGateway}, 0},
		{gwfeatures.SupportMeshConsumerRoute, LevelExtended, []FeatureName{gwfeatures.SupportMesh}, 0},
	}
	for _, tt := range tests {
		f, ok := Lookup(tt.name)
		if !ok {
			t.Fatalf("Lookup(%s) found nothing", tt.name)
		}
		if f.Level != tt.level {
			t.Errorf("%s: Level = %q, want %q", tt.name, f.Level, tt.level)
		}
		if !slices.Equal(f.DependsOn, tt.deps) {
			t.Errorf("%s: DependsOn = %v, want %v", tt.name, f.DependsOn, tt.deps)
		}
		if f.GEP != tt.gep {
			t.Errorf("%s: GEP = %d, want %d", tt.name, f.GEP, tt.gep)
		}
	}
}

func TestGatewitnessFeatures(t *testing.T) {
	var names []FeatureName
	own, err := ownFeatures()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range own {
		names = append(names, f.Name)
	}
	for _, name := range names {
		f, ok := Lookup(name)
		if !ok {
			t.Errorf("Lookup(%s) found nothing", name)
			continue
		}
		if f.Upstream {
			t.Errorf("%s: Upstream = true, want false", name)
		}
		if gwfeatures.GetFeature(name).Name != "" {
			t.Errorf("%s is also an upstream feature; gatewitness must reuse upstream's name instead", name)
		}
		if f.Description == "" {
			t.Errorf("%s: no Description", name)
		}
		if len(f.Profiles) != 1 {
			t.Errorf("%s: Profiles = %v, want exactly one gatewitness profile", name, f.Profiles)
		}
	}
	// Upstream features that gatewitness's profile adds list it too.
	f, _ := Lookup(SupportHTTPRouteRetry)
	if want := []string{"GATEWAY-HTTP", ProfileHTTPResilience, ProfileRetryBudgets}; !slices.Equal(f.Profiles, want) {
		t.Errorf("HTTPRouteRetry: Profiles = %v, want %v", f.Profiles, want)
	}
}

func TestValidateDefaultRegistry(t *testing.T) {
	if err := Validate(); err != nil {
		t.Fatalf("Validate() = %v", err)
	}
}

func TestValidateReportsMissingDependenciesAndCycles(t *testing.T) {
	r := newRegistry()
	mustRegister(t, r, Feature{Name: "A", Channel: ChannelStandard, Level: LevelCore, DependsOn: []FeatureName{"Missing"}})
	mustRegister(t, r, Feature{Name: "B", Channel: ChannelStandard, Level: LevelExtended, DependsOn: []FeatureName{"C"}})
	mustRegister(t, r, Feature{Name: "C", Channel: ChannelStandard, Level: LevelExtended, DependsOn: []FeatureName{"B"}})
	if _, err := r.addProfile("P", []FeatureName{"A", "Ghost"}, nil, false); err != nil {
		t.Fatal(err)
	}
	err := r.validate()
	if err == nil {
		t.Fatal("validate() = nil, want errors")
	}
	for _, want := range []string{
		"feature A: DependsOn: Missing is not a registered feature",
		"profile P: Ghost is not a registered feature",
		"dependency cycle B -> C -> B",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("validate() = %q, want it to contain %q", err, want)
		}
	}

	ok := newRegistry()
	mustRegister(t, ok, Feature{Name: "B", Channel: ChannelStandard, Level: LevelExtended, DependsOn: []FeatureName{"A"}})
	mustRegister(t, ok, Feature{Name: "A", Channel: ChannelStandard, Level: LevelCore})
	if err := ok.validate(); err != nil {
		t.Errorf("validate() with a dependency registered later = %v, want nil", err)
	}
}

func TestRegisterRejectsBadFeatures(t *testing.T) {
	r := newRegistry()
	if _, err := r.addProfile("UP", nil, nil, true); err != nil {
		t.Fatal(err)
	}
	good := Feature{Name: "Good", Channel: ChannelStandard, Level: LevelCore}
	mustRegister(t, r, good)
	tests := []struct {
		name string
		f    Feature
		want string
	}{
		{"empty name", Feature{Channel: ChannelStandard, Level: LevelCore}, "feature: name is empty"},
		{"lower-case name", Feature{Name: "retry", Channel: ChannelStandard, Level: LevelCore}, `name "retry" has 'r' at byte 0`},
		{"space in name", Feature{Name: "Re try", Channel: ChannelStandard, Level: LevelCore}, `has ' ' at byte 2`},
		{"bad channel", Feature{Name: "X", Channel: "beta", Level: LevelCore}, `Channel is "beta"; want "standard" or "experimental"`},
		{"bad level", Feature{Name: "X", Channel: ChannelStandard, Level: "gold"}, `Level is "gold"; want "core", "extended" or "implementation-specific"`},
		{"negative GEP", Feature{Name: "X", Channel: ChannelStandard, Level: LevelCore, GEP: -1}, "GEP is -1"},
		{"bad dependency", Feature{Name: "X", Channel: ChannelStandard, Level: LevelCore, DependsOn: []FeatureName{""}}, "feature X: DependsOn: feature: name is empty"},
		{"unknown profile", Feature{Name: "X", Channel: ChannelStandard, Level: LevelCore, Profiles: []string{"NOPE"}}, `Profiles: no profile "NOPE"`},
		{"upstream profile", Feature{Name: "X", Channel: ChannelStandard, Level: LevelCore, Profiles: []string{"UP"}}, `"UP" is an upstream profile`},
		{"duplicate", good, "feature Good: already registered"},
	}
	for _, tt := range tests {
		err := r.register(tt.f)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: register() = %v, want an error containing %q", tt.name, err, tt.want)
		}
	}
	if _, ok := r.lookup("X"); ok {
		t.Error("a rejected feature was registered")
	}
}

// TestRegisterGatewitnessOnce checks that gatewitness's data registers cleanly
// once on top of upstream's, and that registering it again is refused
// (profiles and features are unique).
func TestRegisterGatewitnessOnce(t *testing.T) {
	r := newRegistry()
	if err := registerUpstream(r); err != nil {
		t.Fatal(err)
	}
	if err := registerGatewitness(r); err != nil {
		t.Fatalf("registerGatewitness: %v", err)
	}
	if err := r.validate(); err != nil {
		t.Fatalf("validate: %v", err)
	}
	if err := registerGatewitness(r); err == nil || !strings.Contains(err.Error(), "already registered") {
		t.Errorf("registerGatewitness a second time = %v, want an already-registered error", err)
	}
}

// TestGatewitnessProfilesHoldWhatTheirFeaturesNeed checks that every
// gatewitness profile holds the dependencies of its features (so a test that
// lists a feature and what it depends on is counted in the profile), and
// that gatewitness's features join no upstream profile.
func TestGatewitnessProfilesHoldWhatTheirFeaturesNeed(t *testing.T) {
	for _, p := range GatewitnessProfiles() {
		have := map[FeatureName]bool{}
		for _, n := range append(slices.Clone(p.Core), p.Extended...) {
			have[n] = true
		}
		for _, n := range p.Extended {
			f, _ := Lookup(n)
			if f.Upstream {
				continue
			}
			for _, d := range f.DependsOn {
				df, _ := Lookup(d)
				// A gatewitness feature's dependency on another gatewitness
				// feature, or on a feature of the profile, is held;
				// upstream refinements of a held feature (for example
				// HTTPRouteRetryConnectionError of HTTPRouteRetry) must be
				// in the profile themselves.
				if !have[d] && df.Upstream && d != gwfeatures.SupportTLSRoute {
					t.Errorf("profile %s: feature %s depends on %s, which the profile does not hold", p.Name, n, d)
				}
			}
		}
	}
	for _, f := range All() {
		if f.Upstream {
			continue
		}
		for _, p := range f.Profiles {
			if pp, _ := LookupProfile(p); pp.Upstream {
				t.Errorf("gatewitness feature %s is in the upstream profile %s", f.Name, p)
			}
		}
		if !IsGatewitness(f.Name) {
			t.Errorf("IsGatewitness(%s) = false", f.Name)
		}
	}
	if IsGatewitness(SupportHTTPRouteRetry) || IsGatewitness("NoSuchFeature") {
		t.Error("IsGatewitness is true for an upstream or unknown feature")
	}
}

func TestProfilesAndByProfile(t *testing.T) {
	r := newRegistry()
	mustRegister(t, r, Feature{Name: "Base", Channel: ChannelStandard, Level: LevelCore})
	if _, err := r.addProfile("MINE", []FeatureName{"Base"}, nil, false); err != nil {
		t.Fatal(err)
	}
	if _, err := r.addProfile("MINE", nil, nil, false); err == nil {
		t.Error("addProfile of a duplicate name succeeded")
	}
	if _, err := r.addProfile("lower", nil, nil, false); err == nil {
		t.Error("addProfile of a lower-case name succeeded")
	}
	mustRegister(t, r, Feature{Name: "Zeta", Channel: ChannelExperimental, Level: LevelExtended, Profiles: []string{"MINE"}})
	mustRegister(t, r, Feature{Name: "Alpha", Channel: ChannelExperimental, Level: LevelExtended, Profiles: []string{"MINE"}})
	mustRegister(t, r, Feature{Name: "Other", Channel: ChannelExperimental, Level: LevelExtended})

	p, ok := r.lookupProfile("MINE")
	if !ok {
		t.Fatal("lookupProfile(MINE) found nothing")
	}
	if want := []FeatureName{"Base"}; !slices.Equal(p.Core, want) {
		t.Errorf("Core = %v, want %v", p.Core, want)
	}
	if want := []FeatureName{"Alpha", "Zeta"}; !slices.Equal(p.Extended, want) {
		t.Errorf("Extended = %v, want %v", p.Extended, want)
	}
	fs, ok := r.byProfile("MINE")
	if !ok {
		t.Fatal("byProfile(MINE) found nothing")
	}
	var names []FeatureName
	for _, f := range fs {
		names = append(names, f.Name)
		if !slices.Equal(f.Profiles, []string{"MINE"}) {
			t.Errorf("%s: Profiles = %v, want [MINE]", f.Name, f.Profiles)
		}
	}
	if want := []FeatureName{"Alpha", "Base", "Zeta"}; !slices.Equal(names, want) {
		t.Errorf("byProfile = %v, want %v", names, want)
	}
	if _, ok := r.byProfile("NONE"); ok {
		t.Error("byProfile(NONE) reported a profile")
	}
	all := r.all()
	if !slices.IsSortedFunc(all, func(a, b Feature) int { return strings.Compare(string(a.Name), string(b.Name)) }) || len(all) != 4 {
		t.Errorf("all() = %v, want the 4 features sorted by name", all)
	}
	// Returned slices are copies.
	all[0].DependsOn = append(all[0].DependsOn, "Mutated")
	if f, _ := r.lookup(all[0].Name); len(f.DependsOn) != 0 {
		t.Error("mutating a returned Feature changed the registry")
	}
}

func TestTable(t *testing.T) {
	r := newRegistry()
	mustRegister(t, r, Feature{Name: "HTTPRoute", Channel: ChannelStandard, Level: LevelCore})
	if _, err := r.addProfile("GATEWITNESS-X", []FeatureName{"HTTPRoute"}, nil, false); err != nil {
		t.Fatal(err)
	}
	mustRegister(t, r, Feature{Name: "HTTPRouteRetryCodes", Channel: ChannelExperimental, Level: LevelExtended, GEP: 1731,
		DependsOn: []FeatureName{"HTTPRoute", "HTTPRouteRetry"}, Profiles: []string{"GATEWITNESS-X"}})
	var buf bytes.Buffer
	if err := writeTable(&buf, r.all(), true); err != nil {
		t.Fatal(err)
	}
	want := "" +
		"NAME                 FROM         CHANNEL       LEVEL     GEP   PROFILES       DEPENDS ON\n" +
		"HTTPRoute            gatewitness  standard      core      -     GATEWITNESS-X  -\n" +
		"HTTPRouteRetryCodes  gatewitness  experimental  extended  1731  GATEWITNESS-X  HTTPRoute,HTTPRouteRetry\n"
	if got := buf.String(); got != want {
		t.Errorf("wide table:\n%s\nwant:\n%s", got, want)
	}
	buf.Reset()
	if err := writeTable(&buf, r.all(), false); err != nil {
		t.Fatal(err)
	}
	want = "" +
		"NAME                 FROM         CHANNEL       LEVEL     GEP\n" +
		"HTTPRoute            gatewitness  standard      core      -\n" +
		"HTTPRouteRetryCodes  gatewitness  experimental  extended  1731\n"
	if got := buf.String(); got != want {
		t.Errorf("table:\n%s\nwant:\n%s", got, want)
	}

	buf.Reset()
	if err := Table(&buf, nil); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != len(All())+1 {
		t.Errorf("Table printed %d lines, want a header and %d features", len(lines), len(All()))
	}
	if !strings.Contains(buf.String(), "HTTPRouteRetryCodes ") {
		t.Error("Table does not list HTTPRouteRetryCodes")
	}
	// The default table fits a terminal of 120 columns (the wide one had 345).
	for _, l := range lines {
		if len(l) > 120 {
			t.Errorf("a line of %d columns: %q", len(l), l)
			break
		}
	}
	buf.Reset()
	if err := JSON(&buf, r.all()); err != nil {
		t.Fatal(err)
	}
	var back []map[string]any
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil || len(back) != 2 || back[1]["gep"] != 1731.0 || len(back[1]["dependsOn"].([]any)) != 2 {
		t.Errorf("JSON: %v %s", err, buf.String())
	}
}

// TestUpstreamSuiteCountsGatewitnessProfile runs the upstream suite (with a
// fake API server and tests that need no cluster) and checks that its
// report counts gatewitness's features in gatewitness's profile.
func TestUpstreamSuiteCountsGatewitnessProfile(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{
		Name: "httproutes.gateway.networking.k8s.io",
		Annotations: map[string]string{
			consts.BundleVersionAnnotation: consts.BundleVersion,
			consts.ChannelAnnotation:       "experimental",
		},
	}}
	s, err := suite.NewConformanceTestSuite(suite.ConformanceOptions{
		Client:     fake.NewClientBuilder().WithScheme(scheme).WithObjects(crd).Build(),
		RestConfig: &rest.Config{Host: "http://127.0.0.1:1"},
		ConfigurableOptions: suite.ConfigurableOptions{
			ConformanceProfiles: []suite.ConformanceProfileName{ProfileHTTPResilience},
			SupportedFeatures:   []FeatureName{SupportHTTPRouteRetryCodes},
		},
	})
	if err != nil {
		t.Fatalf("NewConformanceTestSuite: %v", err)
	}
	for _, f := range []FeatureName{gwfeatures.SupportGateway, gwfeatures.SupportHTTPRoute} {
		if !s.SupportedFeatures.Has(f) {
			t.Errorf("the profile's core feature %s is not enabled by the suite", f)
		}
	}
	pass := func(*testing.T, *suite.ConformanceTestSuite) {}
	tests := []suite.ConformanceTest{
		{ShortName: "CoreOnly", Features: []FeatureName{gwfeatures.SupportGateway, gwfeatures.SupportHTTPRoute}, Test: pass},
		{ShortName: "RetryCodes", Features: []FeatureName{gwfeatures.SupportGateway, gwfeatures.SupportHTTPRoute, SupportHTTPRouteRetryCodes}, Test: pass},
		{ShortName: "Backoff", Features: []FeatureName{gwfeatures.SupportGateway, gwfeatures.SupportHTTPRoute, SupportHTTPRouteRetryBackoff}, Test: pass},
	}
	t.Run("suite", func(t *testing.T) {
		if err := s.Run(t, tests); err != nil {
			t.Fatal(err)
		}
	})
	report, err := s.Report()
	if err != nil {
		t.Fatal(err)
	}
	if len(report.ProfileReports) != 1 {
		t.Fatalf("ProfileReports = %+v, want one, for %s", report.ProfileReports, ProfileHTTPResilience)
	}
	pr := report.ProfileReports[0]
	if pr.Name != ProfileHTTPResilience || pr.Core.Passed != 1 || pr.Core.Result != confv1.Success {
		t.Errorf("profile %s core = %+v, want 1 passed", pr.Name, pr.Core)
	}
	if pr.Extended == nil {
		t.Fatal("no extended status: gatewitness's features were not counted as extended")
	}
	// Backoff is not supported, so it is not run: upstream records it as
	// not supported and leaves it out of the statistics.
	if pr.Extended.Passed != 1 || pr.Extended.Skipped != 0 || pr.Extended.Failed != 0 {
		t.Errorf("extended statistics = %+v, want 1 passed", pr.Extended.Statistics)
	}
	if !slices.Contains(pr.Extended.SupportedFeatures, string(SupportHTTPRouteRetryCodes)) {
		t.Errorf("SupportedFeatures = %v, want it to list %s", pr.Extended.SupportedFeatures, SupportHTTPRouteRetryCodes)
	}
	if !slices.Contains(pr.Extended.UnsupportedFeatures, string(SupportHTTPRouteRetryBackoff)) {
		t.Errorf("UnsupportedFeatures = %v, want it to list %s", pr.Extended.UnsupportedFeatures, SupportHTTPRouteRetryBackoff)
	}
}

func TestProfileCounts(t *testing.T) {
	p := Profile{Name: "P", Core: []FeatureName{"A", "B"}, Extended: []FeatureName{"X"}}
	for _, tc := range []struct {
		fs   []FeatureName
		want bool
	}{
		{nil, true},
		{[]FeatureName{"A", "B"}, true},
		{[]FeatureName{"A", "X"}, true},
		{[]FeatureName{"A", "Y"}, false},
		{[]FeatureName{"Y"}, false},
	} {
		if got := p.Counts(tc.fs); got != tc.want {
			t.Errorf("Counts(%v) = %v, want %v", tc.fs, got, tc.want)
		}
	}
	retryCodes := []FeatureName{gwfeatures.SupportGateway, gwfeatures.SupportHTTPRoute, SupportHTTPRouteRetryCodes}
	if !CountedIn([]string{"GATEWAY-HTTP", ProfileHTTPResilience}, retryCodes) {
		t.Errorf("CountedIn(GATEWAY-HTTP, %s) = false for %v; want true", ProfileHTTPResilience, retryCodes)
	}
	if CountedIn([]string{"GATEWAY-HTTP"}, retryCodes) {
		t.Errorf("CountedIn(GATEWAY-HTTP) = true for %v; want false: the profile lacks %s", retryCodes, SupportHTTPRouteRetryCodes)
	}
	if CountedIn([]string{"NO-SUCH-PROFILE"}, nil) {
		t.Error("CountedIn of an unknown profile = true; want false")
	}
}

func mustRegister(t *testing.T, r *registry, f Feature) {
	t.Helper()
	if err := r.register(f); err != nil {
		t.Fatalf("register(%s): %v", f.Name, err)
	}
}

func TestDefaultProfiles(t *testing.T) {
	var names []string
	for _, p := range Profiles() {
		names = append(names, p.Name)
	}
	want := []string{
		"GATEWAY-GRPC", "GATEWAY-HTTP", "GATEWAY-TCP", "GATEWAY-TLS", "GATEWAY-UDP",
		ProfileConnectionTimeouts, ProfileFaultFidelity, ProfileGRPCDeadlines, ProfileHTTPResilience, ProfileMeshProbes, ProfileRetryBudgets,
		"MESH-GRPC", "MESH-HTTP",
	}
	if !slices.Equal(names, want) {
		t.Errorf("Profiles() = %v, want %v", names, want)
	}
	up, _ := LookupProfile("GATEWAY-HTTP")
	if !up.Upstream || !slices.Contains(up.Extended, SupportHTTPRouteRetry) || slices.Contains(up.Extended, SupportHTTPRouteRetryCodes) {
		t.Errorf("GATEWAY-HTTP = %+v, want upstream's profile, without gatewitness's features", up)
	}
	grpc, _ := LookupProfile(ProfileGRPCDeadlines)
	if grpc.Upstream ||
		!slices.Equal(grpc.Core, []FeatureName{gwfeatures.SupportGRPCRoute, gwfeatures.SupportGateway}) ||
		!slices.Equal(grpc.Extended, []FeatureName{
			SupportGRPCRouteMaxStreamDuration, SupportGRPCRouteMaxStreamDurationCancelsBackend,
			SupportGRPCRouteMaxStreamDurationDeadlineExceeded, SupportGRPCRouteStrictEnforcement,
			SupportGRPCRouteTimeoutPropagation,
		}) {
		t.Errorf("%s = %+v", ProfileGRPCDeadlines, grpc)
	}
	if _, ok := ByProfile(ProfileHTTPResilience); !ok {
		t.Errorf("ByProfile(%s) found nothing", ProfileHTTPResilience)
	}
}

// TestGEP3139Features checks the GRPCRoute timeout features against
// GEP-3139: its two names at support level Extended, StrictEnforcement
// resting on MaxStreamDuration, and gatewitness's finer features resting on
// MaxStreamDuration too.
func TestGEP3139Features(t *testing.T) {
	tests := []struct {
		name  FeatureName
		level Level
		deps  []FeatureName
	}{
		{SupportGRPCRouteMaxStreamDuration, LevelExtended, []FeatureName{gwfeatures.SupportGRPCRoute}},
		{SupportGRPCRouteStrictEnforcement, LevelExtended, []FeatureName{SupportGRPCRouteMaxStreamDuration}},
		{SupportGRPCRouteMaxStreamDurationDeadlineExceeded, LevelExtended, []FeatureName{SupportGRPCRouteMaxStreamDuration}},
		{SupportGRPCRouteTimeoutPropagation, LevelImplementationSpecific, []FeatureName{SupportGRPCRouteMaxStreamDuration}},
		{SupportGRPCRouteMaxStreamDurationCancelsBackend, LevelImplementationSpecific, []FeatureName{SupportGRPCRouteMaxStreamDuration}},
	}
	for _, tt := range tests {
		f, ok := Lookup(tt.name)
		if !ok {
			t.Errorf("Lookup(%s) found nothing", tt.name)
			continue
		}
		if f.Level != tt.level || f.GEP != 3139 || f.Channel != ChannelExperimental || !slices.Equal(f.DependsOn, tt.deps) {
			t.Errorf("%s = level %q, GEP %d, channel %q, DependsOn %v; want %q, 3139, experimental, %v",
				tt.name, f.Level, f.GEP, f.Channel, f.DependsOn, tt.level, tt.deps)
		}
		if !slices.Equal(f.Profiles, []string{ProfileGRPCDeadlines}) {
			t.Errorf("%s: Profiles = %v, want [%s]", tt.name, f.Profiles, ProfileGRPCDeadlines)
		}
	}
}

// TestAreasNameTheirLists: the file and list each area names for
// WhereToAdd's messages hold that list.
func TestAreasNameTheirLists(t *testing.T) {
	for _, a := range gatewitnessAreas {
		src, err := os.ReadFile(filepath.Join("..", a.file))
		if err != nil {
			t.Errorf("area %s names %s: %v", a.profile, a.file, err)
			continue
		}
		if !strings.Contains(string(src), "\nvar "+a.list+" = []Feature{") {
			t.Errorf("area %s: %s has no \"var %s = []Feature{\"; fix gatewitnessAreas in features/features.go", a.profile, a.file, a.list)
		}
	}
	msg := WhereToAdd(ProfileHTTPResilience, "HTTPRouteBackendProtocolH2C")
	if want := "add gwfeatures.SupportHTTPRouteBackendProtocolH2C to GATEWITNESS-HTTP-RESILIENCE's Extended list in features/gatewitness.go"; msg != want {
		t.Errorf("WhereToAdd(upstream feature) = %q, want %q", msg, want)
	}
	msg = WhereToAdd(ProfileHTTPResilience, "HTTPRouteRetryStreamReset")
	if !strings.Contains(msg, "httpResilienceFeatures in features/gatewitness_http.go") {
		t.Errorf("WhereToAdd(new feature) = %q, want it to name httpResilienceFeatures in features/gatewitness_http.go", msg)
	}
}

// TestChannelsAreDeclaredForEveryRelease checks that a gatewitness feature
// has no default channel: an entry that declares none for a supported
// release, or sets Channel itself, is refused with a message naming the
// feature, its list and the release.
func TestChannelsAreDeclaredForEveryRelease(t *testing.T) {
	for _, tt := range []struct {
		name string
		f    Feature
		want string
	}{
		{"no channels", Feature{Name: "X"}, "feature X (list in file.go): Channels has no channel for Gateway API v1.6"},
		{"one release left out", Feature{Name: "X", Channels: map[Release]Channel{ReleaseV16: ChannelStandard}}, "no channel for Gateway API v1.7"},
		{"Channel set", Feature{Name: "X", Channel: ChannelStandard, Channels: standardInEveryRelease}, "Channel is set; declare the channel of each release in Channels"},
		{"bad channel", Feature{Name: "X", Channels: map[Release]Channel{ReleaseV16: "beta", ReleaseV17: ChannelStandard}}, `Channels[v1.6] is "beta"`},
		{"unknown release", Feature{Name: "X", Channels: map[Release]Channel{ReleaseV16: ChannelStandard, ReleaseV17: ChannelStandard, "v1.9": ChannelStandard}}, "Channels names v1.9, which is not a supported release"},
	} {
		err := checkChannels(tt.f, "file.go", "list")
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: checkChannels = %v; want an error containing %q", tt.name, err, tt.want)
		}
	}
	for _, f := range Declarations() {
		if err := checkChannels(f, "", ""); err != nil {
			t.Error(err)
		}
	}
	for _, bv := range []string{"v1.6.3", "v1.7.0", "v1.7"} {
		if _, err := releaseOf(bv); err != nil {
			t.Errorf("releaseOf(%s): %v", bv, err)
		}
	}
	if _, err := releaseOf("v1.8.0"); err == nil || !strings.Contains(err.Error(), "v1.8.0") {
		t.Errorf("releaseOf(v1.8.0) = %v; want an error naming it", err)
	}
}
