package negative

import (
	"slices"
	"strings"
	"testing"

	"github.com/gatewitness/gatewitness/features"
)

// scopeTests are three tests of one profile: two of its retry feature and
// one of its timeouts.
func scopeTests() []Test {
	return []Test{
		{ShortName: "A", Features: []features.FeatureName{features.SupportHTTPRouteRetry, features.SupportHTTPRouteRetryCodes}},
		{ShortName: "B", Features: []features.FeatureName{features.SupportHTTPRouteRetry, features.SupportHTTPRouteRetryBackoff}},
		{ShortName: "C", Features: []features.FeatureName{features.SupportHTTPRouteTimeoutDeadlines}},
	}
}

func TestExpectedFollowsBreaksFailsSkipsAndUnclaimed(t *testing.T) {
	b := Breakage{Name: "b", Profiles: []string{features.ProfileHTTPResilience},
		Breaks: []features.FeatureName{features.SupportHTTPRouteRetryCodes}, Passes: "why"}
	fails, skips, passes := Expected(b, scopeTests())
	if !slices.Equal(fails, []string{"A"}) || len(skips) != 0 || !slices.Equal(passes, []string{"B", "C"}) {
		t.Errorf("Breaks: fails %v skips %v passes %v; want [A] [] [B C]", fails, skips, passes)
	}
	b = Breakage{Name: "b", Profiles: []string{features.ProfileHTTPResilience}, Fails: []string{"C"},
		Unclaimed: []features.FeatureName{features.SupportHTTPRouteRetryBackoff}, Passes: "why"}
	fails, skips, passes = Expected(b, scopeTests())
	if !slices.Equal(fails, []string{"C"}) || !slices.Equal(skips, []string{"B"}) || !slices.Equal(passes, []string{"A"}) {
		t.Errorf("Fails, Unclaimed: fails %v skips %v passes %v; want [C] [B] [A]", fails, skips, passes)
	}
}

func TestUnaccountedSaysWhatToFix(t *testing.T) {
	for _, tc := range []struct {
		name string
		b    Breakage
		want string // in the one message
	}{
		{"no default reason", Breakage{Fails: []string{"A"}}, "has no Passes"},
		{"failed twice", Breakage{Breaks: []features.FeatureName{features.SupportHTTPRouteRetry}, Fails: []string{"A"}, Passes: "why"}, "through Breaks"},
		{"failed and skipped", Breakage{Fails: []string{"A"}, Skips: []string{"A"}, Passes: "why"}, "more than one"},
		{"outside the scope", Breakage{Fails: []string{"A", "Z"}, Passes: "why"}, "not a test of its profiles"},
		{"a feature no test lists", Breakage{Breaks: []features.FeatureName{features.SupportMeshProbeTCP}, Fails: []string{"A"}, Passes: "why"}, "no test of its profiles"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.b.Name, tc.b.Profiles = "b", []string{features.ProfileHTTPResilience}
			got := Unaccounted(tc.b, scopeTests(), "where.go")
			if len(got) != 1 || !strings.Contains(got[0], tc.want) || !strings.Contains(got[0], "where.go") {
				t.Errorf("Unaccounted = %q; want one message with %q and the file", got, tc.want)
			}
		})
	}
	ok := Breakage{Name: "b", Profiles: []string{features.ProfileHTTPResilience}, Breaks: []features.FeatureName{features.SupportHTTPRouteRetry}, Passes: "why"}
	if got := Unaccounted(ok, scopeTests(), "where.go"); len(got) != 0 {
		t.Errorf("a whole declaration: %q; want none", got)
	}
}

// TestUnlistedIsOneMessage: a test that breakages name but that is not
// listed gets one message, however many breakages name it.
func TestUnlistedIsOneMessage(t *testing.T) {
	bs := []Breakage{{Name: "a", Fails: []string{"New"}}, {Name: "b", Skips: []string{"New"}}, {Name: "c", Unaffected: map[string]string{"New": "why"}}}
	got := Unlisted(bs, scopeTests(), "tests.go")
	if len(got) != 1 || !strings.Contains(got[0], "New") || !strings.Contains(got[0], "ConformanceTests in tests.go") {
		t.Errorf("Unlisted = %q; want one message naming New and where to list it", got)
	}
}

// TestPackTestsCountsEveryBreakagesScope: a pack's child runs the tests
// of each breakage's profiles.
func TestPackTestsCountsEveryBreakagesScope(t *testing.T) {
	all := append(scopeTests(), Test{ShortName: "G", Features: []features.FeatureName{features.SupportGRPCRouteMaxStreamDuration}})
	http := Breakage{Name: "http", Profiles: []string{features.ProfileHTTPResilience}}
	grpc := Breakage{Name: "grpc", Profiles: []string{features.ProfileGRPCDeadlines}}
	for _, c := range []struct {
		pack []Breakage
		want int
	}{{[]Breakage{http}, 3}, {[]Breakage{grpc}, 1}, {[]Breakage{http, grpc}, 4}} {
		if got := PackTests(c.pack, all); got != c.want {
			t.Errorf("PackTests(%v) = %d, want %d", c.pack, got, c.want)
		}
	}
}
