package upstreamnames

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"
)

// TestDataFileOfTheLinkedReleaseMatchesItsPackages checks the extractor
// that writes the data files (hack/upstream-names) against the linked
// release's packages: the file parsed from v1.6.3's source must hold the
// names the v1.6.3 packages hold at run time, so the files of the other
// releases, made the same way, are trusted.
func TestDataFileOfTheLinkedReleaseMatchesItsPackages(t *testing.T) {
	linked := Linked()
	b, err := data.ReadFile("data/" + linked.Version + ".json")
	if err != nil {
		t.Fatalf("no data file for the linked release %s: %v (run hack/upstream-names.sh)", linked.Version, err)
	}
	var file Names
	if err := json.Unmarshal(b, &file); err != nil {
		t.Fatal(err)
	}
	for what, pair := range map[string][2][]string{
		"profiles": {file.Profiles, linked.Profiles},
		"features": {file.Features, linked.Features},
		"tests":    {file.Tests, linked.Tests},
	} {
		if !reflect.DeepEqual(pair[0], pair[1]) {
			t.Errorf("%s of %s: the data file has %d, the packages %d:\n file %v\n pkgs %v", what, linked.Version, len(pair[0]), len(pair[1]), pair[0], pair[1])
		}
	}
}

func TestForRelease(t *testing.T) {
	for _, tt := range []struct {
		version, got string
		exact, ok    bool
		hasFeature   string
		lacksFeature string
	}{
		{"v1.6.1", "v1.6.1", true, true, "GatewayInfrastructurePropagation", "GatewayInfrastructure"},
		{"v1.6.3", "v1.6.3", true, true, "GatewayInfrastructure", "GatewayInfrastructurePropagation"},
		{"v1.5.0", "v1.5.0", true, true, "HTTPRouteRequestTimeout", ""},
		{"v1.6.2", "v1.6.3", false, true, "GatewayInfrastructure", ""},
		{"v1.7.0", "v1.7.0", true, true, "HTTPRouteRetryCodes", "HTTPRouteRetry"},
		{"v1.9.0", "", false, false, "", ""},
		{"main", "", false, false, "", ""},
	} {
		n, exact, ok := ForRelease(tt.version)
		if n.Version != tt.got || exact != tt.exact || ok != tt.ok {
			t.Errorf("ForRelease(%s) = %s, exact %v, ok %v; want %s, %v, %v", tt.version, n.Version, exact, ok, tt.got, tt.exact, tt.ok)
		}
		if tt.hasFeature != "" && !slices.Contains(n.Features, tt.hasFeature) {
			t.Errorf("%s lacks the feature %s", tt.version, tt.hasFeature)
		}
		if tt.lacksFeature != "" && slices.Contains(n.Features, tt.lacksFeature) {
			t.Errorf("%s has the feature %s", tt.version, tt.lacksFeature)
		}
	}
	if k := Known(); len(k) < 6 || k[0] != "v1.5.0" || k[len(k)-1] != "v1.7.0" {
		t.Errorf("Known() = %v", k)
	}
}

func TestGatewitnessNamesAreNotTheLinkedReleases(t *testing.T) {
	g, l := Gatewitness([]string{"HTTPRouteRetryCodes"}), Linked()
	if len(g.Profiles) == 0 || len(g.Features) == 0 {
		t.Fatalf("no gatewitness names: %+v", g)
	}
	for _, p := range g.Profiles {
		if slices.Contains(l.Profiles, p) {
			t.Errorf("profile %s is both upstream's and gatewitness's", p)
		}
	}
	for _, f := range g.Features {
		if slices.Contains(l.Features, f) {
			t.Errorf("feature %s is both upstream's and gatewitness's", f)
		}
	}
}
