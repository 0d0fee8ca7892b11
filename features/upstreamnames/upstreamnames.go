// Package upstreamnames knows the profile, feature and test names of the
// Gateway API conformance suite release by release, so a report is
// checked against the names of the release it says it ran
// (gatewayAPIVersion), not against the release gatewitness links: names
// change between patch releases (v1.6.1's GatewayInfrastructurePropagation
// is v1.6.3's GatewayInfrastructure).
//
// The linked release's names come from its packages; the others from data
// files (data/<version>.json) that hack/upstream-names.sh writes from
// upstream's tagged source, each naming its source.
package upstreamnames

import (
	"embed"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"

	utilversion "k8s.io/apimachinery/pkg/util/version"
	"sigs.k8s.io/gateway-api/conformance/tests"
	"sigs.k8s.io/gateway-api/pkg/consts"
	gwfeatures "sigs.k8s.io/gateway-api/pkg/features"

	"github.com/gatewitness/gatewitness/features"
)

// Names are one release's names.
type Names struct {
	// Version is the release, e.g. v1.6.1.
	Version string `json:"version"`
	// Source says where the names were read from.
	Source string `json:"source"`
	// Profiles, Features and Tests are the release's conformance profile,
	// feature and test names, sorted.
	Profiles []string `json:"profiles"`
	Features []string `json:"features"`
	Tests    []string `json:"tests"`
}

//go:embed data/*.json
var data embed.FS

var (
	loadOnce sync.Once
	releases map[string]Names
	loadErr  error
)

func load() {
	releases = map[string]Names{}
	entries, err := data.ReadDir("data")
	if err != nil {
		loadErr = err
		return
	}
	for _, e := range entries {
		b, err := data.ReadFile(path.Join("data", e.Name()))
		if err != nil {
			loadErr = err
			return
		}
		var n Names
		if err := json.Unmarshal(b, &n); err != nil {
			loadErr = fmt.Errorf("upstreamnames: %s: %w", e.Name(), err)
			return
		}
		releases[n.Version] = n
	}
	linked := Linked()
	releases[linked.Version] = linked
}

// Linked returns the names of the release gatewitness is built with, from
// its packages.
func Linked() Names {
	n := Names{Version: consts.BundleVersion, Source: "the packages gatewitness is built with"}
	for _, p := range features.Profiles() {
		if p.Upstream {
			n.Profiles = append(n.Profiles, p.Name)
		}
	}
	for _, f := range gwfeatures.AllFeatures.UnsortedList() {
		n.Features = append(n.Features, string(f.Name))
	}
	for _, t := range tests.ConformanceTests {
		n.Tests = append(n.Tests, t.ShortName)
	}
	for _, s := range []*[]string{&n.Profiles, &n.Features, &n.Tests} {
		slices.Sort(*s)
		*s = slices.Compact(*s)
	}
	return n
}

// Known returns the releases whose names are known, oldest first.
func Known() []string {
	loadOnce.Do(load)
	out := make([]string, 0, len(releases))
	for v := range releases {
		out = append(out, v)
	}
	slices.SortFunc(out, compareVersions)
	return out
}

// ForRelease returns the names of the Gateway API release version. When
// that release is not known, it returns the names of the newest known
// patch release of the same minor release and exact false; ok is false
// when no release of that minor is known.
func ForRelease(version string) (n Names, exact, ok bool) {
	loadOnce.Do(load)
	if loadErr != nil {
		return Names{}, false, false
	}
	if n, ok := releases[version]; ok {
		return n, true, true
	}
	v, err := utilversion.ParseSemantic(version)
	if err != nil {
		return Names{}, false, false
	}
	var best *utilversion.Version
	for k, cand := range releases {
		kv := utilversion.MustParseSemantic(k)
		if kv.Major() != v.Major() || kv.Minor() != v.Minor() {
			continue
		}
		if best == nil || kv.GreaterThan(best) {
			best, n = kv, cand
		}
	}
	return n, false, best != nil
}

// Gatewitness returns the names gatewitness adds to upstream's: its own
// profiles and features, and the given tests of its suite (the caller
// knows them; this package does not import the suite). A feature that is
// upstream's in some release (HTTPRouteRetryCodes from v1.7) is listed
// too; a report of that release names it rightly, so check a release's
// names first.
func Gatewitness(testNames []string) Names {
	n := Names{Version: "gatewitness", Source: "gatewitness's registry"}
	for _, p := range features.GatewitnessProfiles() {
		n.Profiles = append(n.Profiles, p.Name)
	}
	for _, f := range features.All() {
		if !f.Upstream {
			n.Features = append(n.Features, string(f.Name))
		}
	}
	n.Tests = slices.Clone(testNames)
	for _, s := range []*[]string{&n.Profiles, &n.Features, &n.Tests} {
		slices.Sort(*s)
		*s = slices.Compact(*s)
	}
	return n
}

func compareVersions(a, b string) int {
	va, err := utilversion.ParseSemantic(a)
	if err != nil {
		return strings.Compare(a, b)
	}
	c, err := va.Compare(b)
	if err != nil {
		return strings.Compare(a, b)
	}
	return c
}
