package plugin_test

import (
	"io/fs"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/gateway-api/conformance"
	"sigs.k8s.io/gateway-api/conformance/utils/suite"

	"github.com/gatewitness/gatewitness/conformance/plugin"
	gctests "github.com/gatewitness/gatewitness/conformance/tests"
)

// TestAddAddsEverythingOnce checks that one call gives an upstream suite
// gatewitness's tests, manifests (next to upstream's) and profiles, that
// the suite then accepts them and finds every manifest a test names, and
// that a second call adds nothing.
func TestAddAddsEverythingOnce(t *testing.T) {
	upstreamTest := suite.ConformanceTest{ShortName: "UpstreamOne", Manifests: []string{"tests/httproute-simple-same-namespace.yaml"}}
	opts := suite.ConformanceOptions{ConfigurableOptions: suite.ConfigurableOptions{
		GatewayClassName:    "any",
		ConformanceProfiles: []suite.ConformanceProfileName{"GATEWAY-HTTP"},
	}}
	if _, err := plugin.Add(&opts, nil); err == nil || !strings.Contains(err.Error(), "conformance.Manifests") {
		t.Errorf("Add with an empty ManifestFS: %v; want an error naming upstream's manifests", err)
	}
	opts.ManifestFS = []fs.FS{&conformance.Manifests}
	tests, err := plugin.Add(&opts, []suite.ConformanceTest{upstreamTest})
	if err != nil {
		t.Fatal(err)
	}
	if len(tests) != 1+len(plugin.ConformanceTests) || tests[0].ShortName != "UpstreamOne" ||
		tests[1].ShortName != plugin.ConformanceTests[0].ShortName {
		t.Fatalf("Add returned %d tests (first %s); want the upstream one then gatewitness's %d", len(tests), tests[0].ShortName, len(plugin.ConformanceTests))
	}
	if len(opts.ManifestFS) != 2 {
		t.Fatalf("ManifestFS has %d file systems; want upstream's and gatewitness's", len(opts.ManifestFS))
	}
	for _, ct := range tests {
		for _, m := range ct.Manifests {
			if !slices.ContainsFunc(opts.ManifestFS, func(f fs.FS) bool { _, err := fs.Stat(f, m); return err == nil }) {
				t.Errorf("test %s: manifest %s is in none of ManifestFS", ct.ShortName, m)
			}
		}
	}
	b, err := fs.ReadFile(opts.ManifestFS[1], plugin.ManifestPrefix+"httproute-timeouts.yaml")
	if err != nil || !strings.Contains(string(b), "image: "+gctests.DefaultEchoImage()) {
		t.Errorf("the added manifests do not name the linked version's image %s (%v)", gctests.DefaultEchoImage(), err)
	}
	wantProfiles := append([]suite.ConformanceProfileName{"GATEWAY-HTTP"}, plugin.Profiles...)
	if !slices.Equal(opts.ConformanceProfiles, wantProfiles) {
		t.Errorf("ConformanceProfiles = %v; want %v", opts.ConformanceProfiles, wantProfiles)
	}
	again, err := plugin.Add(&opts, tests)
	if err != nil || len(again) != len(tests) || len(opts.ManifestFS) != 2 || len(opts.ConformanceProfiles) != len(wantProfiles) {
		t.Errorf("a second Add added again: %d tests, %d file systems, %d profiles", len(again), len(opts.ManifestFS), len(opts.ConformanceProfiles))
	}
	if opts.ManifestFS[0] != fs.FS(&conformance.Manifests) {
		t.Error("upstream's manifests are no longer first in ManifestFS")
	}
	// The upstream suite takes the options as Add leaves them (it refuses
	// a profile it does not know), with gatewitness's profiles' features.
	opts.SupportedFeatures = nil
	opts.EnableAllSupportedFeatures = true
	if _, err := newSuite(t, opts); err != nil {
		t.Errorf("the upstream suite refuses the options Add made: %v", err)
	}
}
