package tests_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/gateway-api/conformance"
	upstream "sigs.k8s.io/gateway-api/conformance/tests"
	"sigs.k8s.io/gateway-api/conformance/utils/suite"

	"github.com/gatewitness/gatewitness/conformance/runner"
	"github.com/gatewitness/gatewitness/conformance/tests"
	"github.com/gatewitness/gatewitness/features"
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
				t.Errorf("%s: manifest %s: %v; add conformance/tests/%s, or name the file that is there", ct.ShortName, m, err, m)
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
	if err := tests.SetTimingTolerance(1800 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if got := tests.TimingTolerance(); got != 1800*time.Millisecond {
		t.Errorf("TimingTolerance() = %v after SetTimingTolerance(1.8s)", got)
	}
	for _, d := range []time.Duration{0, -time.Second, tests.MinTimingTolerance - 1, tests.MaxTimingTolerance + 1} {
		err := tests.SetTimingTolerance(d)
		if err == nil || !strings.Contains(err.Error(), "out of range; accepted: a duration from 500ms to 2s") {
			t.Errorf("SetTimingTolerance(%v) = %v, want an out-of-range error naming the range", d, err)
		}
	}
	for _, d := range []time.Duration{tests.MinTimingTolerance, tests.MaxTimingTolerance} {
		if err := tests.SetTimingTolerance(d); err != nil {
			t.Errorf("SetTimingTolerance(%v) = %v, want it accepted", d, err)
		}
	}
	if err := tests.SetTimingTolerance(2 * time.Second); err != nil {
		t.Fatal(err)
	}
	if got := tests.TimingTolerance(); got != 2*time.Second {
		t.Errorf("a rejected SetTimingTolerance changed the tolerance to %v", got)
	}
}

// TestEveryConformanceTestIsListed parses the package's Go files and checks
// that every package-level variable of type suite.ConformanceTest is in
// ConformanceTests, and nothing else is: a test written but not listed
// would never run.
func TestEveryConformanceTestIsListed(t *testing.T) {
	_, files := parsePackage(t)
	var declared []string
	for _, f := range files {
		eachTestVariable(f.ast, func(name string, _ *ast.CompositeLit) { declared = append(declared, name) })
	}
	var listed []string
	for _, ct := range tests.ConformanceTests {
		listed = append(listed, ct.ShortName)
	}
	for _, name := range declared {
		if !slices.Contains(listed, name) {
			t.Errorf("%s is declared but not in ConformanceTests (tests.go): it would never run", name)
		}
	}
	for _, name := range listed {
		if !tests.IsGatewitnessTest(name) {
			t.Errorf("IsGatewitnessTest(%s) = false", name)
		}
	}
	if tests.IsGatewitnessTest("HTTPRouteSimpleSameNamespace") {
		t.Error("IsGatewitnessTest is true for an upstream test")
	}
	if len(declared) != len(listed) {
		t.Errorf("%d tests declared (%v), %d listed (%v); a variable's name must be its ShortName", len(declared), declared, len(listed), listed)
	}
}

// TestTestFilesFollowTheRecipe checks the shape the package doc's recipe
// gives a test's file, so that every test reads the same way: the variable
// X's Test is the function testX, declared in X's file; each manifest's
// name starts with that file's name (httproute_retry_codes.go:
// httproute-retry-codes.yaml, or httproute-retry-codes-<more>.yaml); and
// no Go file of the package spells the manifest directory itself, as
// every path is ManifestPrefix + "<name>.yaml".
func TestTestFilesFollowTheRecipe(t *testing.T) {
	fset, files := parsePackage(t)
	fileOf := map[string]string{} // test variable -> its file
	testFunc := map[string]string{}
	funcs := map[string]string{} // function -> its file
	for _, pf := range files {
		name, f := pf.name, pf.ast
		ast.Inspect(f, func(n ast.Node) bool {
			// ManifestPrefix's own declaration is the one literal "gatewitness/".
			// A manifest is a .yaml file: other strings under the same
			// prefix (the echo-backend's image repository) are not paths.
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING && strings.HasPrefix(strings.Trim(lit.Value, "\"`"), tests.ManifestPrefix) && strings.HasSuffix(strings.Trim(lit.Value, "\"`"), ".yaml") {
				t.Errorf("%s: %s spells the manifest directory; write ManifestPrefix + %q", fset.Position(lit.Pos()), lit.Value, strings.TrimPrefix(strings.Trim(lit.Value, "\"`"), tests.ManifestPrefix))
			}
			return true
		})
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil {
				funcs[fd.Name.Name] = name
			}
		}
		eachTestVariable(f, func(v string, lit *ast.CompositeLit) {
			fileOf[v] = name
			for _, e := range lit.Elts {
				kv, ok := e.(*ast.KeyValueExpr)
				if !ok {
					continue
				}
				if k, _ := kv.Key.(*ast.Ident); k == nil || k.Name != "Test" {
					continue
				}
				testFunc[v] = "(a function literal)"
				if id, ok := kv.Value.(*ast.Ident); ok {
					testFunc[v] = id.Name
				}
			}
		})
	}
	for _, ct := range tests.ConformanceTests {
		file := fileOf[ct.ShortName]
		if file == "" {
			continue // TestEveryConformanceTestIsListed names it
		}
		want := "test" + ct.ShortName
		if got := testFunc[ct.ShortName]; got != want {
			t.Errorf("%s: %s's Test is %s; want Test: %s, a function declared in %s", file, ct.ShortName, got, want, file)
		} else if funcs[want] != file {
			t.Errorf("%s: declare func %s(t *testing.T, s *suite.ConformanceTestSuite) in %s, beside %s (it is in %q)", file, want, file, ct.ShortName, funcs[want])
		}
		stem := strings.ReplaceAll(strings.TrimSuffix(file, ".go"), "_", "-")
		for _, m := range ct.Manifests {
			base := strings.TrimSuffix(strings.TrimPrefix(m, tests.ManifestPrefix), ".yaml")
			if base != stem && !strings.HasPrefix(base, stem+"-") {
				t.Errorf("%s: %s's manifest %s does not share the file's stem; name it %s%s.yaml (or %s-<more>.yaml) in conformance/tests/%s", file, ct.ShortName, m, tests.ManifestPrefix, stem, stem, tests.ManifestPrefix)
			}
		}
	}
}

// parsedFile is a Go file of the package, not a test file, parsed.
type parsedFile struct {
	name string
	ast  *ast.File
}

// parsePackage parses the package's Go files, leaving out its tests.
func parsePackage(t *testing.T) (*token.FileSet, []parsedFile) {
	t.Helper()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var out []parsedFile
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, parsedFile{name, f})
	}
	return fset, out
}

// eachTestVariable calls fn for each package-level variable of f whose
// value is a suite.ConformanceTest literal.
func eachTestVariable(f *ast.File, fn func(name string, lit *ast.CompositeLit)) {
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.VAR {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, v := range vs.Values {
				lit, ok := v.(*ast.CompositeLit)
				if !ok {
					continue
				}
				if sel, ok := lit.Type.(*ast.SelectorExpr); ok && sel.Sel.Name == "ConformanceTest" {
					fn(vs.Names[i].Name, lit)
				}
			}
		}
	}
}

// TestEveryGatewitnessTestCountsInAGatewitnessProfile checks, by the upstream
// suite's own rule (a test counts in a profile when the profile holds every
// feature the test lists), that each gatewitness test lists one of
// gatewitness's features, counts in at least one GATEWITNESS-* profile, and in
// no upstream profile: a failure of a gatewitness test never changes an
// upstream result.
func TestEveryGatewitnessTestCountsInAGatewitnessProfile(t *testing.T) {
	holds := func(p features.Profile, ct suite.ConformanceTest) bool {
		for _, f := range ct.Features {
			if !slices.Contains(p.Core, f) && !slices.Contains(p.Extended, f) {
				return false
			}
		}
		return true
	}
	for _, ct := range tests.ConformanceTests {
		unknown := func(f features.FeatureName) bool { _, ok := features.Lookup(f); return !ok }
		// An unknown feature is a new one of gatewitness's: the profile
		// message below says where to add it.
		own := slices.ContainsFunc(ct.Features, features.IsGatewitness) || slices.ContainsFunc(ct.Features, unknown)
		if !own {
			t.Errorf("%s lists only upstream features %v; want one of gatewitness's too (features/gatewitness_*.go)", ct.ShortName, ct.Features)
		}
		var in []string
		for _, p := range features.Profiles() {
			if !holds(p, ct) {
				continue
			}
			if p.Upstream {
				t.Errorf("%s counts in the upstream profile %s", ct.ShortName, p.Name)
			}
			in = append(in, p.Name)
		}
		if len(in) == 0 {
			t.Errorf("%s (features %v) counts in no profile: %s", ct.ShortName, ct.Features, whatJoins(ct))
		}
	}
}

// whatJoins says what makes ct count in the gatewitness profile that lacks
// the fewest of its features: for each missing feature, where to add it.
func whatJoins(ct suite.ConformanceTest) string {
	var best features.Profile
	var bestMissing []features.FeatureName
	for _, p := range features.GatewitnessProfiles() {
		var missing []features.FeatureName
		for _, f := range ct.Features {
			if !slices.Contains(p.Core, f) && !slices.Contains(p.Extended, f) {
				missing = append(missing, f)
			}
		}
		if bestMissing == nil || len(missing) < len(bestMissing) {
			best, bestMissing = p, missing
		}
	}
	var todo []string
	for _, f := range bestMissing {
		todo = append(todo, features.WhereToAdd(best.Name, f))
	}
	return strings.Join(todo, "; ")
}

// TestReferenceGatewayClaimsEveryGatewitnessFeature checks that the reference
// gateway claims every feature gatewitness's tests list: each test runs
// in-process, so each is shown to pass against the executable
// specification.
func TestReferenceGatewayClaimsEveryGatewitnessFeature(t *testing.T) {
	claimed := runner.ReferenceFeatures()
	for _, ct := range tests.ConformanceTests {
		for _, f := range ct.Features {
			if !slices.Contains(claimed, f) {
				t.Errorf("%s needs %s, which the reference gateway does not claim: add it to referenceExtended in conformance/runner/reference.go, in the change that implements it in gateway/", ct.ShortName, f)
			}
		}
	}
}
