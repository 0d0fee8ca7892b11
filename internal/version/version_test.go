package version

import (
	"runtime/debug"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	for in, want := range map[string]string{
		"v1.2.3": "v1.2.3",
		"v0.0.0-20261125214906-2314c6f7e383+dirty": "v0.0.0-20261125214906-2314c6f7e383+dirty",
		"(devel)": Unknown,
		"":        Unknown,
		"v1.2":    Unknown,
		"dev":     Unknown,
	} {
		if got := fromBuildInfo(in); got != want {
			t.Errorf("fromBuildInfo(%q) = %q, want %q", in, got, want)
		}
	}
	if !IsSemantic(Unknown) {
		t.Errorf("Unknown (%q) is not a semantic version", Unknown)
	}
	if g := Gatewitness(); !IsSemantic(g) {
		t.Errorf("Gatewitness() = %q, not a semantic version", g)
	}
}

func TestIsSemantic(t *testing.T) {
	for v, want := range map[string]bool{
		"v1.6.3": true, "1.6.3": true, "v1.18.0-beta30": true, "v1.0.0+build.1": true,
		"main": false, "v1.6": false, "latest": false, "": false, "v1.6.3.4": false,
	} {
		if got := IsSemantic(v); got != want {
			t.Errorf("IsSemantic(%q) = %v, want %v", v, got, want)
		}
	}
}

func TestIsRelease(t *testing.T) {
	for v, want := range map[string]bool{
		"v0.1.0": true, "v1.2.3": true, "1.2.3": true,
		"v0.0.0-20260301120000-0123456789ab":       false, // a pseudo-version: a commit, not a release
		"v0.0.0-20260301120000-0123456789ab+dirty": false,
		Unknown:          false,
		"v1.2.3-rc.1":    false,
		"v1.2.3+build.1": false,
		"v0.0.0":         false,
		"main":           false,
		"":               false,
	} {
		if got := IsRelease(v); got != want {
			t.Errorf("IsRelease(%q) = %v, want %v", v, got, want)
		}
	}
}

func TestFromModules(t *testing.T) {
	gw := func(v string) *debug.Module { return &debug.Module{Path: modulePath, Version: v} }
	for _, tt := range []struct {
		name string
		main *debug.Module
		deps []*debug.Module
		want string
	}{
		{"gatewitness is the main module", gw("v0.1.0"), nil, "v0.1.0"},
		{"built from a checkout without VCS stamping", gw("(devel)"), nil, Unknown},
		{"a module of its own requiring a release", &debug.Module{Path: "example.com/nightly", Version: "(devel)"},
			[]*debug.Module{{Path: "sigs.k8s.io/gateway-api", Version: "v1.7.0"}, gw("v0.2.0")}, "v0.2.0"},
		{"a module of its own replacing gatewitness with a directory", &debug.Module{Path: "example.com/nightly", Version: "(devel)"},
			[]*debug.Module{{Path: modulePath, Version: "v0.0.0-00010101000000-000000000000", Replace: &debug.Module{Path: "/src/gatewitness"}}},
			Unknown},
		{"a module without gatewitness", &debug.Module{Path: "example.com/other", Version: "(devel)"}, nil, Unknown},
	} {
		if got := fromModules(tt.main, tt.deps); got != tt.want {
			t.Errorf("%s: fromModules = %q, want %q", tt.name, got, tt.want)
		}
	}
}
