package layers

import (
	"bufio"
	"bytes"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// module is the path every package of this repository starts with.
const module = "github.com/gatewitness/gatewitness"

// TestNoImportAgainstTheLayers lists every package of the module with the go
// command and fails on each import the parts do not allow, tests' imports
// included.
func TestNoImportAgainstTheLayers(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is not on PATH (go test puts it there): %v", err)
	}
	const format = `{{.ImportPath}}|{{join .Imports " "}}|{{join .TestImports " "}} {{join .XTestImports " "}}`
	cmd := exec.Command(goCmd, "list", "-f", format, module+"/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s/...: %v\n%s", module, err, stderr.Bytes())
	}
	arrows := parseList(t, out)
	if len(arrows) < 100 {
		t.Fatalf("go list gave %d imports between the module's packages; want the whole graph (output:\n%s)", len(arrows), out)
	}
	for _, msg := range Check(Parts, Allowed, arrows) {
		t.Error(msg)
	}
}

// parseList reads go list's lines (package|imports|test imports) into the
// arrows between the module's own packages.
func parseList(t *testing.T, out []byte) []Arrow {
	t.Helper()
	var arrows []Arrow
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		f := strings.Split(sc.Text(), "|")
		if len(f) != 3 {
			t.Fatalf("go list line %q: want package|imports|test imports", sc.Text())
		}
		from, ok := relative(f[0])
		if !ok {
			continue
		}
		prod := strings.Fields(f[1])
		for _, imp := range prod {
			if to, ok := relative(imp); ok {
				arrows = append(arrows, Arrow{From: from, To: to})
			}
		}
		for _, imp := range strings.Fields(f[2]) {
			if to, ok := relative(imp); ok && to != from && !slices.Contains(prod, imp) {
				arrows = append(arrows, Arrow{From: from, To: to, Test: true})
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return arrows
}

// relative returns pkg's path below the module, and whether it is in it.
func relative(pkg string) (string, bool) {
	return strings.CutPrefix(pkg, module+"/")
}

// TestCheckRefusesTheOldArrows shows that the rule refuses the three imports
// issue 24 found against the layers, each with a message that names both
// packages and the rule.
func TestCheckRefusesTheOldArrows(t *testing.T) {
	for _, tc := range []struct {
		arrow Arrow
		want  string
	}{
		{Arrow{From: "reports", To: "conformance/observe"},
			"reports (reports) imports conformance/observe (the suite's tests): reports may import only its own packages and internal, contract, embedded files, features"},
		{Arrow{From: "gateway/probeproxy", To: "cluster/probe"},
			"gateway/probeproxy (gateway) imports cluster/probe (cluster): gateway may import only"},
		{Arrow{From: "internal/brokengateway", To: "gateway/dataplane"},
			"internal/brokengateway (internal) imports gateway/dataplane (gateway): internal may import only its own packages"},
		{Arrow{From: "conformance/tests", To: "echo-backend/fault"},
			"conformance/tests (the suite's tests) imports echo-backend/fault (echo-backend)"},
	} {
		msgs := Check(Parts, nil, []Arrow{tc.arrow})
		if len(msgs) != 1 || !strings.HasPrefix(msgs[0], tc.want) {
			t.Errorf("Check(%v) = %q; want one message starting %q", tc.arrow, msgs, tc.want)
		}
	}
}

// TestCheckAllowsWhatTheRuleAllows keeps Check from refusing everything.
func TestCheckAllowsWhatTheRuleAllows(t *testing.T) {
	ok := []Arrow{
		{From: "reports", To: "contract/observe"},
		{From: "gateway/probeproxy", To: "internal/probe"},
		{From: "cluster", To: "gateway/controller"},
		{From: "gateway/dataplane", To: "echo-backend/httpecho", Test: true},
		{From: "cmd/gatewitness", To: "cluster/store"},
		{From: "conformance/tests", To: "echo-backend/echopb"},
		{From: "echo-backend/ledger", To: "echo-backend/fault"},
	}
	if msgs := Check(Parts, nil, ok); len(msgs) != 0 {
		t.Errorf("Check refused allowed imports:\n%s", strings.Join(msgs, "\n"))
	}
	if msgs := Check(Parts, nil, []Arrow{{From: "gateway/dataplane", To: "echo-backend/httpecho"}}); len(msgs) != 1 {
		t.Errorf("a test-only allowance let production code import: %q", msgs)
	}
	if msgs := Check(Parts, nil, []Arrow{{From: "newpart/x", To: "internal/probe"}}); len(msgs) != 1 || !strings.Contains(msgs[0], "newpart/x belongs to no part") {
		t.Errorf("a package of no part: %q; want one message naming it", msgs)
	}
}

// TestPartsNameKnownParts catches a MayImport entry that names no part.
func TestPartsNameKnownParts(t *testing.T) {
	names := map[string]bool{"*": true}
	for _, p := range Parts {
		names[p.Name] = true
	}
	for _, p := range Parts {
		for _, n := range append(slices.Clone(p.MayImport), p.TestsMayImport...) {
			if !names[n] {
				t.Errorf("part %q may import %q, which is no part's Name", p.Name, n)
			}
		}
	}
}
