package tests_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gatewitness/gatewitness/conformance/negative"
	"github.com/gatewitness/gatewitness/conformance/tests"
	"github.com/gatewitness/gatewitness/features"
)

// semanticsDocs names the semantics doc of each gatewitness profile: the
// doc whose generated block lists the profile's tests and breakages.
var semanticsDocs = map[string]string{
	httpProfile:   "docs/semantics/http-retries-and-timeouts.md",
	grpcProfile:   "docs/semantics/grpcroute-timeouts.md",
	connProfile:   "docs/semantics/connection-timeouts.md",
	probeProfile:  "docs/semantics/probes.md",
	budgetProfile: "docs/semantics/retry-budgets.md",
	ffProfile:     "docs/semantics/fault-fidelity.md",
}

// EnvUpdateDocs, set to 1, makes TestSemanticsDocTables write the
// generated blocks instead of comparing them.
const EnvUpdateDocs = "GATEWITNESS_UPDATE_DOCS"

// regenerate is the command that writes the generated blocks.
const regenerate = EnvUpdateDocs + "=1 go test ./conformance/tests -run TestSemanticsDocTables"

// TestSemanticsDocTables checks that the tables of tests and breakages in
// each profile's semantics doc are what the registries (ConformanceTests,
// the features registry and breakages) say: the block between the
// BEGIN and END markers is generated, and any drift fails with the command
// that writes it again.
func TestSemanticsDocTables(t *testing.T) {
	all := gatewitnessTests()
	for _, p := range features.GatewitnessProfiles() {
		doc, ok := semanticsDocs[p.Name]
		if !ok {
			t.Errorf("profile %s has no semantics doc: add it to semanticsDocs in conformance/tests/docs_test.go, and the markers %q and %q to the doc", p.Name, beginMarker(p.Name), endMarker)
			continue
		}
		path := filepath.Join("..", "..", doc)
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("profile %s: %v", p.Name, err)
			continue
		}
		text := string(raw)
		begin, end := strings.Index(text, beginMarker(p.Name)), strings.Index(text, endMarker)
		if begin < 0 || end < begin {
			t.Errorf("%s: want the markers %q and %q around the generated tables of %s", doc, beginMarker(p.Name), endMarker, p.Name)
			continue
		}
		got := text[begin : end+len(endMarker)]
		want := beginMarker(p.Name) + "\n" + profileTables(p.Name, all) + endMarker
		if got == want {
			continue
		}
		if os.Getenv(EnvUpdateDocs) == "1" {
			if err := os.WriteFile(path, []byte(text[:begin]+want+text[end+len(endMarker):]), 0o644); err != nil {
				t.Error(err)
			}
			continue
		}
		t.Errorf("%s: the tables of %s differ from the registries (tests.go, features/, breakages_test.go); run: %s", doc, p.Name, regenerate)
	}
}

const endMarker = "<!-- END generated tables -->"

func beginMarker(profile string) string {
	return "<!-- BEGIN generated tables of " + profile + ": do not edit; " + regenerate + " -->"
}

// profileTables renders the tests that count in profile and the breakages
// checked against them, as Markdown.
func profileTables(profile string, all []negative.Test) string {
	var b strings.Builder
	inProfile := negative.Scope(negative.Breakage{Profiles: []string{profile}}, all)
	fmt.Fprintf(&b, "\n| test | gatewitness's features | what it verifies |\n|---|---|---|\n")
	for _, ct := range tests.ConformanceTests {
		if !slices.Contains(inProfile, ct.ShortName) {
			continue
		}
		var own []string
		for _, f := range ct.Features {
			if features.IsGatewitness(f) {
				own = append(own, "`"+string(f)+"`")
			}
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", ct.ShortName, strings.Join(own, ", "), cell(ct.Description))
	}
	fmt.Fprintf(&b, "\n| breakage | what it models | fails | skips |\n|---|---|---|---|\n")
	for _, br := range breakages {
		if !slices.Contains(br.Profiles, profile) {
			continue
		}
		fails, skips, _ := negative.Expected(br, all)
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", br.Name, cell(br.Models), names(fails, inProfile), names(skips, inProfile))
	}
	b.WriteString("\n")
	return b.String()
}

// names lists the tests of list that are in scope, as code, or "none".
func names(list, scope []string) string {
	var out []string
	for _, n := range list {
		if slices.Contains(scope, n) {
			out = append(out, "`"+n+"`")
		}
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

// cell makes s safe in a Markdown table cell.
func cell(s string) string { return strings.ReplaceAll(s, "|", "\\|") }
