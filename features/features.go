// Package features is gatewitness's feature registry: every feature of the
// upstream Gateway API conformance suite (v1.6.3) plus gatewitness's own, with
// their channel, support level, GEP, dependencies and conformance profiles.
//
// Tests name the features they need with upstream's feature names where the
// meaning matches, so a gatewitness test and an upstream test gate on the same
// switches; every gatewitness test also names at least one of gatewitness's own
// features, so that it is never counted in an upstream profile.
// gatewitness's own profiles are registered with the upstream suite, so an
// upstream ConformanceReport counts gatewitness's extended features like any
// other.
//
// gatewitness's features and profiles are package-level data (gatewitness.go
// and gatewitness_*.go), as upstream's pkg/features declares its own. The
// registry is built from that data and from upstream's sets once, in this
// package's init; nothing registers itself, so no result depends on the
// order in which files or packages initialise. Feature.Upstream and
// Profile.Upstream tell upstream's from gatewitness's.
package features

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/gateway-api/conformance/utils/suite"
	gwfeatures "sigs.k8s.io/gateway-api/pkg/features"
)

// FeatureName is upstream's feature name type, so names from both sets of
// features mix freely in a test's feature list.
type FeatureName = gwfeatures.FeatureName

// Channel is the Gateway API release channel a feature belongs to.
type Channel string

const (
	// ChannelStandard marks a feature of the standard channel.
	ChannelStandard Channel = gwfeatures.FeatureChannelStandard
	// ChannelExperimental marks a feature of the experimental channel.
	ChannelExperimental Channel = gwfeatures.FeatureChannelExperimental
)

// Level is a feature's support level, as the Gateway API defines them.
type Level string

const (
	// LevelCore features must be supported by every implementation of the
	// resource.
	LevelCore Level = "core"
	// LevelExtended features are optional, portable, and tested.
	LevelExtended Level = "extended"
	// LevelImplementationSpecific features are not portable; gatewitness tests
	// them for implementations that opt in.
	LevelImplementationSpecific Level = "implementation-specific"
)

// Feature describes one feature a conformance test can depend on.
type Feature struct {
	// Name is the feature's name, as it appears in a test's Features list,
	// in GatewayClass status and in reports.
	Name FeatureName
	// Channel is the release channel, standard or experimental, in the
	// linked Gateway API release. For gatewitness's own features it is
	// Channels[LinkedRelease()], set when the registry is built.
	Channel Channel
	// Channels is, in gatewitness's data, the channel of the feature in
	// each supported Gateway API release (every entry of Releases, none
	// left out): standard when its tests' manifests use only fields of
	// that release's standard CRDs, experimental when one needs a field
	// (or a kind) the standard CRDs lack. The suite's
	// TestFeatureChannelsFollowTheManifests checks each declaration
	// against the release's real CRDs. Upstream's features leave it empty.
	Channels map[Release]Channel
	// Level is the support level.
	Level Level
	// GEP is the number of the Gateway Enhancement Proposal that defines the
	// feature, or 0 when there is none (or none this registry knows).
	GEP int
	// DependsOn lists features an implementation must also support for this
	// one to make sense.
	DependsOn []FeatureName
	// Profiles names conformance profiles. In gatewitness's data it is left
	// empty (the feature's list names its profile); the features returned
	// by Lookup and All list every profile (upstream or gatewitness) that
	// contains the feature.
	Profiles []string
	// Description says what the feature covers, in one sentence.
	Description string
	// Upstream reports whether the feature is defined by the upstream
	// Gateway API conformance suite rather than by gatewitness.
	Upstream bool
}

// Profile is a conformance profile: the features an implementation must
// support to claim it (Core) and the optional ones it counts (Extended).
type Profile struct {
	// Name is the profile name, e.g. "GATEWAY-HTTP".
	Name string
	// Core lists the mandatory features, sorted.
	Core []FeatureName
	// Extended lists the optional features, sorted.
	Extended []FeatureName
	// Upstream reports whether the upstream suite defines the profile.
	Upstream bool
}

// Counts reports whether the profile counts a test that lists fs, by the
// upstream suite's rule: the profile holds every one of them, core or
// extended.
func (p Profile) Counts(fs []FeatureName) bool {
	for _, f := range fs {
		if !slices.Contains(p.Core, f) && !slices.Contains(p.Extended, f) {
			return false
		}
	}
	return true
}

// CountedIn reports whether one of the named profiles counts a test that
// lists fs (Profile.Counts); a name that is no known profile counts
// nothing.
func CountedIn(profiles []string, fs []FeatureName) bool {
	for _, name := range profiles {
		if p, ok := LookupProfile(name); ok && p.Counts(fs) {
			return true
		}
	}
	return false
}

// registry holds features and profiles. The package-level functions use
// the default registry; tests build their own.
type registry struct {
	mu       sync.RWMutex
	features map[FeatureName]Feature
	profiles map[string]*profileSets
}

// profileSets is a profile as the upstream suite sees it. The sets are
// shared with the upstream profile registration for gatewitness's profiles.
type profileSets struct {
	name     string
	core     sets.Set[FeatureName]
	extended sets.Set[FeatureName]
	upstream bool
}

func newRegistry() *registry {
	return &registry{
		features: make(map[FeatureName]Feature),
		profiles: make(map[string]*profileSets),
	}
}

var defaultRegistry = newRegistry()

// init builds the default registry: upstream's features and profiles,
// then gatewitness's profiles (also registered with the upstream suite, whose
// reports count them) and features. It reads only package-level data, so it
// does not depend on the order of any other initialisation. A bad entry in
// the data is a programming error, found by any test of any package.
func init() {
	if err := registerUpstream(defaultRegistry); err != nil {
		panic(fmt.Sprintf("features: deriving the upstream features: %v", err))
	}
	if err := registerGatewitness(defaultRegistry); err != nil {
		panic(fmt.Sprintf("features: gatewitness's features: %v", err))
	}
	for _, p := range gatewitnessProfiles {
		ps := defaultRegistry.profiles[p.Name]
		suite.RegisterConformanceProfile(suite.ConformanceProfile{
			Name:             suite.ConformanceProfileName(ps.name),
			CoreFeatures:     ps.core,
			ExtendedFeatures: ps.extended,
		})
	}
}

// gatewitnessAreas ties each list of gatewitness's features to the profile its
// features join.
// file and list say where the list is, for the messages of the checks
// (WhereToAdd; TestAreasNameTheirLists keeps them true).
var gatewitnessAreas = []struct {
	profile    string
	features   []Feature
	file, list string
}{
	{ProfileHTTPResilience, httpResilienceFeatures, "features/gatewitness_http.go", "httpResilienceFeatures"},
	{ProfileGRPCDeadlines, grpcDeadlineFeatures, "features/gatewitness_grpc.go", "grpcDeadlineFeatures"},
	{ProfileConnectionTimeouts, connectionFeatures, "features/gatewitness_connection.go", "connectionFeatures"},
	{ProfileMeshProbes, meshProbeFeatures, "features/gatewitness_probes.go", "meshProbeFeatures"},
	{ProfileRetryBudgets, retryBudgetFeatures, "features/gatewitness_retrybudget.go", "retryBudgetFeatures"},
	{ProfileFaultFidelity, faultFidelityFeatures, "features/gatewitness_faultfidelity.go", "faultFidelityFeatures"},
}

// WhereToAdd says, as an instruction naming the file and the list, how f
// joins the gatewitness profile named profile: a feature of gatewitness's
// own is an entry of the profile's area list; an upstream feature goes in
// the profile's Extended list. It is for the messages of checks that find
// a feature missing from a profile.
func WhereToAdd(profile string, f FeatureName) string {
	if IsGatewitness(f) || !upstreamHas(f) {
		for _, a := range gatewitnessAreas {
			if a.profile == profile {
				return fmt.Sprintf("add a Feature{Name: %q, ...} entry to %s in %s (it joins %s from there)", f, a.list, a.file, profile)
			}
		}
		return fmt.Sprintf("add %s's area (its profile and its feature list) to gatewitnessAreas in features/features.go", profile)
	}
	return fmt.Sprintf("add gwfeatures.Support%s to %s's Extended list in features/gatewitness.go", f, profile)
}

// ownFeatures returns gatewitness's features as the linked release has them:
// every entry of gatewitnessAreas with its profile set and its Channel that
// of the linked release, less the release-dependent ones the linked release
// defines itself (releases.go). There is no default channel: an entry that
// sets Channel itself, or that declares no channel for a supported release,
// is an error.
func ownFeatures() ([]Feature, error) {
	linked, err := LinkedRelease()
	if err != nil {
		return nil, err
	}
	var out []Feature
	for _, area := range gatewitnessAreas {
		for _, f := range area.features {
			if err := checkChannels(f, area.file, area.list); err != nil {
				return nil, err
			}
			if releaseDependent[f.Name] && upstreamHas(f.Name) {
				continue
			}
			f.Channel = f.Channels[linked]
			f.Profiles = []string{area.profile}
			out = append(out, f)
		}
	}
	return out, nil
}

// checkChannels checks that f, an entry of list in file, declares its
// channel in every supported release and nowhere else.
func checkChannels(f Feature, file, list string) error {
	if f.Channel != "" {
		return fmt.Errorf("feature %s (%s in %s): Channel is set; declare the channel of each release in Channels instead, such as Channels: %s",
			f.Name, list, file, "standardInEveryRelease")
	}
	for _, r := range Releases {
		switch f.Channels[r] {
		case ChannelStandard, ChannelExperimental:
		case "":
			return fmt.Errorf("feature %s (%s in %s): Channels has no channel for Gateway API %s; want %q or %q for each of %v (what its tests' manifests need of that release's CRDs)",
				f.Name, list, file, r, ChannelStandard, ChannelExperimental, Releases)
		default:
			return fmt.Errorf("feature %s (%s in %s): Channels[%s] is %q; want %q or %q",
				f.Name, list, file, r, f.Channels[r], ChannelStandard, ChannelExperimental)
		}
	}
	for r := range f.Channels {
		if !slices.Contains(Releases, r) {
			return fmt.Errorf("feature %s (%s in %s): Channels names %s, which is not a supported release (%v)", f.Name, list, file, r, Releases)
		}
	}
	return nil
}

// Declarations returns every entry of gatewitness's feature data, whatever
// the linked release (the release-dependent ones included), with its
// declared Channels, sorted by name: what the channel test checks against
// each release's CRDs.
func Declarations() []Feature {
	var out []Feature
	for _, area := range gatewitnessAreas {
		for _, f := range area.features {
			f.DependsOn = slices.Clone(f.DependsOn)
			f.Profiles = []string{area.profile}
			out = append(out, f)
		}
	}
	slices.SortFunc(out, func(a, b Feature) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// registerGatewitness adds gatewitness's profiles and features to r.
func registerGatewitness(r *registry) error {
	for _, p := range gatewitnessProfiles {
		if _, err := r.addProfile(p.Name, p.Core, p.Extended, false); err != nil {
			return err
		}
	}
	own, err := ownFeatures()
	if err != nil {
		return err
	}
	for _, f := range own {
		if err := r.register(f); err != nil {
			return err
		}
	}
	return nil
}

// Lookup returns the feature with the given name.
func Lookup(name FeatureName) (Feature, bool) { return defaultRegistry.lookup(name) }

// All returns every registered feature, sorted by name.
func All() []Feature { return defaultRegistry.all() }

// ByProfile returns the features of the named profile, core and extended,
// sorted by name. ok is false if there is no such profile.
func ByProfile(name string) (fs []Feature, ok bool) { return defaultRegistry.byProfile(name) }

// LookupProfile returns the named profile.
func LookupProfile(name string) (Profile, bool) { return defaultRegistry.lookupProfile(name) }

// Profiles returns every known profile, sorted by name.
func Profiles() []Profile { return defaultRegistry.allProfiles() }

// GatewitnessProfiles returns gatewitness's own profiles (the GATEWITNESS-* ones),
// sorted by name.
func GatewitnessProfiles() []Profile {
	var out []Profile
	for _, p := range Profiles() {
		if !p.Upstream {
			out = append(out, p)
		}
	}
	return out
}

// IsGatewitness reports whether name is one of gatewitness's own features
// rather than upstream's (false for unknown names too).
func IsGatewitness(name FeatureName) bool {
	f, ok := Lookup(name)
	return ok && !f.Upstream
}

// MaxGatewayClassFeatures is the most features a GatewayClass's
// status.supportedFeatures holds (the CRD's maxItems).
const MaxGatewayClassFeatures = 64

// ForGatewayClassStatus chooses, from the features a run claims, those an
// implementation publishes in its GatewayClass's status.supportedFeatures:
// upstream's first (upstream's suite reads them from there when a run names
// none), then gatewitness's own, in the order given, at most
// MaxGatewayClassFeatures. The rest are returned as left; a run that claims
// them must name them itself (--supported-features), as the in-process
// runner does.
func ForGatewayClassStatus[N ~string](claimed []N) (published, left []N) {
	var own []N
	for _, name := range claimed {
		if IsGatewitness(FeatureName(name)) {
			own = append(own, name)
		} else {
			published = append(published, name)
		}
	}
	published = append(published, own...)
	if len(published) > MaxGatewayClassFeatures {
		published, left = published[:MaxGatewayClassFeatures], published[MaxGatewayClassFeatures:]
	}
	return published, left
}

// Validate checks the registry as a whole: every dependency and every
// profile member is a registered feature, and no feature depends on itself
// through a chain of dependencies. It reports all problems found.
func Validate() error { return defaultRegistry.validate() }

func validName(kind, name string) error {
	if name == "" {
		return fmt.Errorf("%s: name is empty; want an identifier such as %q", kind, exampleName(kind))
	}
	for i, r := range name {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
		if kind == "profile" {
			ok = r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' && i > 0
		} else if i == 0 {
			ok = r >= 'A' && r <= 'Z'
		}
		if !ok {
			return fmt.Errorf("%s: name %q has %q at byte %d; want an identifier such as %q", kind, name, r, i, exampleName(kind))
		}
	}
	return nil
}

func exampleName(kind string) string {
	if kind == "profile" {
		return "GATEWITNESS-HTTP-RESILIENCE (upper-case letters, digits, '-')"
	}
	return "HTTPRouteRetryCodes (letters and digits, starting upper-case)"
}

func (r *registry) register(f Feature) error {
	if err := validName("feature", string(f.Name)); err != nil {
		return err
	}
	switch f.Channel {
	case ChannelStandard, ChannelExperimental:
	default:
		return fmt.Errorf("feature %s: Channel is %q; want %q or %q", f.Name, f.Channel, ChannelStandard, ChannelExperimental)
	}
	switch f.Level {
	case LevelCore, LevelExtended, LevelImplementationSpecific:
	default:
		return fmt.Errorf("feature %s: Level is %q; want %q, %q or %q", f.Name, f.Level, LevelCore, LevelExtended, LevelImplementationSpecific)
	}
	if f.GEP < 0 {
		return fmt.Errorf("feature %s: GEP is %d; want a GEP number, or 0 for none", f.Name, f.GEP)
	}
	for _, d := range f.DependsOn {
		if err := validName("feature", string(d)); err != nil {
			return fmt.Errorf("feature %s: DependsOn: %w", f.Name, err)
		}
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.features[f.Name]; dup {
		return fmt.Errorf("feature %s: already registered", f.Name)
	}
	for _, p := range f.Profiles {
		ps, ok := r.profiles[p]
		if !ok {
			return fmt.Errorf("feature %s: Profiles: no profile %q; add it to gatewitnessProfiles", f.Name, p)
		}
		if ps.upstream {
			return fmt.Errorf("feature %s: Profiles: %q is an upstream profile; a feature can only join gatewitness profiles", f.Name, p)
		}
	}
	for _, p := range f.Profiles {
		ps := r.profiles[p]
		if !ps.core.Has(f.Name) {
			ps.extended.Insert(f.Name)
		}
	}
	f.DependsOn = slices.Clone(f.DependsOn)
	f.Profiles = nil // computed from the profiles on the way out
	r.features[f.Name] = f
	return nil
}

func (r *registry) addProfile(name string, core, extended []FeatureName, upstream bool) (*profileSets, error) {
	if err := validName("profile", name); err != nil {
		return nil, err
	}
	p := &profileSets{
		name:     name,
		core:     sets.New(core...),
		extended: sets.New(extended...).Difference(sets.New(core...)),
		upstream: upstream,
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.profiles[name]; dup {
		return nil, fmt.Errorf("profile %s: already registered", name)
	}
	r.profiles[name] = p
	return p, nil
}

// withProfiles returns a copy of f with the names of the profiles that
// contain it. The caller holds r.mu.
func (r *registry) withProfiles(f Feature) Feature {
	f.DependsOn = slices.Clone(f.DependsOn)
	f.Profiles = nil
	for name, p := range r.profiles {
		if p.core.Has(f.Name) || p.extended.Has(f.Name) {
			f.Profiles = append(f.Profiles, name)
		}
	}
	slices.Sort(f.Profiles)
	return f
}

func (r *registry) lookup(name FeatureName) (Feature, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	f, ok := r.features[name]
	if !ok {
		return Feature{}, false
	}
	return r.withProfiles(f), true
}

func (r *registry) all() []Feature {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]Feature, 0, len(r.features))
	for _, f := range r.features {
		out = append(out, r.withProfiles(f))
	}
	slices.SortFunc(out, func(a, b Feature) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

func (r *registry) byProfile(name string) ([]Feature, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	p, ok := r.profiles[name]
	if !ok {
		return nil, false
	}
	var out []Feature
	for _, n := range sets.List(p.core.Union(p.extended)) {
		if f, ok := r.features[n]; ok {
			out = append(out, r.withProfiles(f))
		}
	}
	return out, true
}

func (r *registry) lookupProfile(name string) (Profile, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	p, ok := r.profiles[name]
	if !ok {
		return Profile{}, false
	}
	return p.export(), true
}

func (r *registry) allProfiles() []Profile {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.allProfilesLocked()
}

func (p *profileSets) export() Profile {
	return Profile{Name: p.name, Core: sets.List(p.core), Extended: sets.List(p.extended), Upstream: p.upstream}
}

func (r *registry) validate() error {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var errs []error
	names := make([]FeatureName, 0, len(r.features))
	for n := range r.features {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		for _, d := range r.features[n].DependsOn {
			if _, ok := r.features[d]; !ok {
				errs = append(errs, fmt.Errorf("feature %s: DependsOn: %s is not a registered feature", n, d))
			}
		}
	}
	for _, p := range r.allProfilesLocked() {
		for _, n := range append(slices.Clone(p.Core), p.Extended...) {
			if _, ok := r.features[n]; !ok {
				errs = append(errs, fmt.Errorf("profile %s: %s is not a registered feature", p.Name, n))
			}
		}
	}
	errs = append(errs, r.cycles(names)...)
	return errors.Join(errs...)
}

func (r *registry) allProfilesLocked() []Profile {
	out := make([]Profile, 0, len(r.profiles))
	for _, p := range r.profiles {
		out = append(out, p.export())
	}
	slices.SortFunc(out, func(a, b Profile) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// cycles reports each dependency cycle once, by a depth-first search over
// the features in name order. The caller holds r.mu.
func (r *registry) cycles(names []FeatureName) []error {
	const (
		unvisited = iota
		onPath
		done
	)
	state := make(map[FeatureName]int, len(names))
	var path []FeatureName
	var errs []error
	var visit func(n FeatureName)
	visit = func(n FeatureName) {
		state[n] = onPath
		path = append(path, n)
		for _, d := range r.features[n].DependsOn {
			if _, ok := r.features[d]; !ok {
				continue // reported as a missing dependency
			}
			switch state[d] {
			case onPath:
				i := slices.Index(path, d)
				cycle := make([]string, 0, len(path)-i+1)
				for _, c := range path[i:] {
					cycle = append(cycle, string(c))
				}
				cycle = append(cycle, string(d))
				errs = append(errs, fmt.Errorf("feature %s: DependsOn: dependency cycle %s", d, strings.Join(cycle, " -> ")))
			case unvisited:
				visit(d)
			}
		}
		path = path[:len(path)-1]
		state[n] = done
	}
	for _, n := range names {
		if state[n] == unvisited {
			visit(n)
		}
	}
	return errs
}
