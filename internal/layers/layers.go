// Package layers says, as data, which part of gatewitness may import which,
// as docs/architecture.md ("Who may import whom") describes it, and checks
// an import graph against that rule.
//
// A package belongs to the part whose longest prefix matches its path
// (relative to the module). A part may import its own packages and those of
// the parts it lists; its tests may import those of TestsMayImport too.
// Everything else is an import against the layers, unless Allowed names the
// exact arrow with its reason.
package layers

import (
	"fmt"
	"slices"
	"strings"
)

// Part is a set of packages with one job, and what they may import.
type Part struct {
	// Name names the part in messages.
	Name string
	// Prefixes are package paths relative to the module; a prefix matches
	// the package of that path and every package below it.
	Prefixes []string
	// MayImport names the parts whose packages this part's packages may
	// import.
	MayImport []string
	// TestsMayImport names the further parts this part's tests (in-package
	// and external) may import.
	TestsMayImport []string
}

// Arrow is one import of one package by another, relative to the module.
type Arrow struct {
	From, To string
	// Test is true when only a test file imports To.
	Test bool
}

// Exception allows one arrow that the parts forbid, for a stated reason.
type Exception struct {
	From, To string
	Why      string
}

// Parts is the rule, from the ground floor up. Keep it in step with
// docs/architecture.md.
var Parts = []Part{
	// The ground floor: shared helpers, the contracts, embedded files.
	{Name: "internal", Prefixes: []string{"internal"}},
	{Name: "contract", Prefixes: []string{"contract"}, MayImport: []string{"internal"}},
	{Name: "embedded files", Prefixes: []string{"crds", "docs"}},
	{Name: "the backend's gRPC API", Prefixes: []string{"echo-backend/echopb", "echo-backend/grpcechopb"}},
	{Name: "features", Prefixes: []string{"features"}, MayImport: []string{"internal", "contract"}},

	// The parts.
	{
		Name: "echo-backend", Prefixes: []string{"echo-backend"},
		MayImport: []string{"internal", "contract", "the backend's gRPC API"},
	},
	{
		Name: "gateway", Prefixes: []string{"gateway"},
		MayImport: []string{"internal", "contract", "the backend's gRPC API", "embedded files"},
		// Its tests run real backends behind the data plane and use the
		// embedded cluster's object store as an API server.
		TestsMayImport: []string{"echo-backend", "cluster"},
	},
	{
		Name: "cluster", Prefixes: []string{"cluster"},
		MayImport: []string{"internal", "contract", "embedded files", "the backend's gRPC API", "echo-backend", "gateway"},
	},
	{
		Name: "reports", Prefixes: []string{"reports"},
		MayImport: []string{"internal", "contract", "embedded files", "features"},
	},
	{
		// What an implementer links: the tests and the plug-in (and any new
		// package under conformance/ until it is placed). No part of what
		// they certify (conformance/plugin's TestSuiteLinksNoImplementation
		// checks the whole dependency tree).
		Name: "the suite's tests", Prefixes: []string{"conformance", "conformance/tests", "conformance/plugin"},
		MayImport: []string{"internal", "contract", "the backend's gRPC API", "features"},
		// The tests' own tests run them against the reference gateway, broken
		// on purpose.
		TestsMayImport: []string{"the runner", "the runner's breakages", "reports", "cluster", "gateway", "echo-backend", "embedded files"},
	},
	{
		Name: "the runner", Prefixes: []string{"conformance/runner"},
		MayImport:      []string{"internal", "contract", "embedded files", "features", "the suite's tests", "reports", "cluster"},
		TestsMayImport: []string{"the runner's breakages", "gateway", "echo-backend", "the backend's gRPC API"},
	},
	{
		// Runs of the reference gateway broken on purpose: they build its
		// configuration and its test-only constructors.
		Name: "the runner's breakages", Prefixes: []string{"conformance/runner/runnertest", "conformance/negative"},
		MayImport:      []string{"internal", "contract", "embedded files", "features", "the suite's tests", "the runner", "reports", "cluster", "gateway"},
		TestsMayImport: []string{"echo-backend", "the backend's gRPC API"},
	},

	{
		// Real data planes (HAProxy, nginx) behind the reference controller,
		// and the expected verdicts of the suite's tests on them: it builds
		// the in-process target with a real proxy in place of the reference
		// data plane, from the controller's snapshots (gateway/ir).
		Name: "calibration", Prefixes: []string{"calibration"},
		MayImport: []string{"internal", "contract", "embedded files", "features", "the suite's tests", "the runner", "reports", "cluster", "gateway"},
	},

	// The top floor: mains and tools may import anything.
	{Name: "commands", Prefixes: []string{"cmd", "hack"}, MayImport: []string{"*"}},
}

// Allowed are the arrows the parts forbid that stay for now, each with its
// reason. None: the breakage seam removed internal/brokengateway, the last
// ground-floor package that imported the gateway.
var Allowed []Exception

// PartOf returns the part pkg (relative to the module) belongs to: the one
// with the longest matching prefix. ok is false if none matches.
func PartOf(parts []Part, pkg string) (p Part, ok bool) {
	best := -1
	for _, part := range parts {
		for _, pre := range part.Prefixes {
			if (pkg == pre || strings.HasPrefix(pkg, pre+"/")) && len(pre) > best {
				p, ok, best = part, true, len(pre)
			}
		}
	}
	return p, ok
}

// Check returns one message for each arrow that goes against parts and is
// not in allowed, naming the importing package, the imported one and the
// rule; and one for each package that belongs to no part.
func Check(parts []Part, allowed []Exception, arrows []Arrow) []string {
	var msgs []string
	unplaced := map[string]bool{}
	place := func(pkg string) (Part, bool) {
		p, ok := PartOf(parts, pkg)
		if !ok && !unplaced[pkg] {
			unplaced[pkg] = true
			msgs = append(msgs, fmt.Sprintf("package %s belongs to no part: add its path to a part's Prefixes in internal/layers/layers.go and to docs/architecture.md", pkg))
		}
		return p, ok
	}
	for _, a := range arrows {
		from, ok1 := place(a.From)
		to, ok2 := place(a.To)
		if !ok1 || !ok2 || from.Name == to.Name {
			continue
		}
		may := from.MayImport
		if a.Test {
			may = append(slices.Clone(may), from.TestsMayImport...)
		}
		if slices.Contains(may, "*") || slices.Contains(may, to.Name) {
			continue
		}
		if slices.ContainsFunc(allowed, func(e Exception) bool { return e.From == a.From && e.To == a.To }) {
			continue
		}
		what := "imports"
		if a.Test {
			what = "imports in a test"
		}
		msgs = append(msgs, fmt.Sprintf("%s (%s) %s %s (%s): %s may import only %s%s",
			a.From, from.Name, what, a.To, to.Name, from.Name, list(from.MayImport), testsList(from.TestsMayImport)))
	}
	return msgs
}

func list(names []string) string {
	if len(names) == 0 {
		return "its own packages"
	}
	return "its own packages and " + strings.Join(names, ", ")
}

func testsList(names []string) string {
	if len(names) == 0 {
		return ""
	}
	return "; its tests also " + strings.Join(names, ", ")
}
