package tests_test

import (
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/gatecheck/gatecheck/conformance/tests"
	"sigs.k8s.io/gateway-api/conformance"
	upstream "sigs.k8s.io/gateway-api/conformance/tests"
)

// TestManifestsStayUnderPrefix checks that every embedded file is under
// tests.ManifestPrefix and that none shadows an upstream manifest path.
func TestManifestsStayUnderPrefix(t *testing.T) {
	n := 0
	err := fs.WalkDir(tests.Manifests, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		n++
		if !strings.HasPrefix(p, tests.ManifestPrefix) {
			t.Errorf("embedded file %s is outside %s", p, tests.ManifestPrefix)
		}
		if _, err := fs.Stat(&conformance.Manifests, p); err == nil {
			t.Errorf("embedded file %s has the path of an upstream manifest", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("tests.Manifests holds no files")
	}
}

// TestConformanceTestsAreWellFormed checks each registered test: a
// ShortName unique across upstream's tests and ours, a description,
// features, a Test function, and manifests that exist under the prefix.
func TestConformanceTestsAreWellFormed(t *testing.T) {
	seen := map[string]bool{}
	for _, u := range upstream.ConformanceTests {
		seen[u.ShortName] = true
	}
	for i, ct := range tests.ConformanceTests {
		switch {
		case ct.ShortName == "":
			t.Errorf("ConformanceTests[%d] has no ShortName", i)
		case seen[ct.ShortName]:
			t.Errorf("%s: ShortName is already taken by another test", ct.ShortName)
		}
		seen[ct.ShortName] = true
		if ct.Description == "" || len(ct.Features) == 0 || ct.Test == nil {
			t.Errorf("%s: want a Description, Features and a Test function", ct.ShortName)
		}
		for _, m := range ct.Manifests {
			if !strings.HasPrefix(m, tests.ManifestPrefix) {
				t.Errorf("%s: manifest %s is not under %s", ct.ShortName, m, tests.ManifestPrefix)
			}
			if _, err := fs.Stat(tests.Manifests, m); err != nil {
				t.Errorf("%s: manifest %s: %v", ct.ShortName, m, err)
			}
		}
	}
}

func TestTimingTolerance(t *testing.T) {
	if got := tests.TimingTolerance(); got != tests.DefaultTimingTolerance {
		t.Fatalf("TimingTolerance() = %v before any set, want the default %v", got, tests.DefaultTimingTolerance)
	}
	t.Cleanup(func() {
		if err := tests.SetTimingTolerance(tests.DefaultTimingTolerance); err != nil {
			t.Error(err)
		}
	})
	if err := tests.SetTimingTolerance(2 * time.Second); err != nil {
		t.Fatal(err)
	}
	if got := tests.TimingTolerance(); got != 2*time.Second {
		t.Errorf("TimingTolerance() = %v after SetTimingTolerance(2s)", got)
	}
	for _, d := range []time.Duration{0, -time.Second} {
		err := tests.SetTimingTolerance(d)
		if err == nil || !strings.Contains(err.Error(), "not positive") {
			t.Errorf("SetTimingTolerance(%v) = %v, want a not-positive error", d, err)
		}
	}
	if got := tests.TimingTolerance(); got != 2*time.Second {
		t.Errorf("a rejected SetTimingTolerance changed the tolerance to %v", got)
	}
}
