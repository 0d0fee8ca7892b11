// Command upstream-names writes the profile, feature and test names of one
// Gateway API release's conformance suite as the JSON data file
// (upstreamnames.Names) features/upstreamnames reads (features/upstreamnames/data/<version>.json).
// It parses the release's Go source and runs none of it, so it reads any
// release, whatever Go version the release needs:
//
//	go run ./hack/upstream-names -version v1.6.1 -root DIR -source '...' -o FILE
//
// ROOT is a tree laid out as the gateway-api repository is (pkg/features,
// conformance/tests, conformance/utils/suite), e.g. a `git archive` of a
// tag; -conformance names the conformance module's directory when it is
// apart from ROOT (a module cache: sigs.k8s.io/gateway-api/conformance@vX).
// hack/upstream-names.sh runs it for every release the data holds.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/gatewitness/gatewitness/features/upstreamnames"
)

func main() {
	version := flag.String("version", "", "the Gateway API release, e.g. v1.6.1")
	root := flag.String("root", "", "a tree laid out as the gateway-api repository")
	conf := flag.String("conformance", "", "the conformance module's directory (default ROOT/conformance)")
	source := flag.String("source", "", "where the tree came from, recorded in the file")
	out := flag.String("o", "", "the file to write (default stdout)")
	flag.Parse()
	if *version == "" || *root == "" || *source == "" {
		fmt.Fprintln(os.Stderr, "upstream-names: -version, -root and -source are required")
		os.Exit(2)
	}
	if *conf == "" {
		*conf = filepath.Join(*root, "conformance")
	}
	n, err := extract(*version, *root, *conf)
	if err != nil {
		fmt.Fprintln(os.Stderr, "upstream-names:", err)
		os.Exit(1)
	}
	n.Source = *source
	data, err := json.MarshalIndent(n, "", "  ")
	if err != nil {
		fmt.Fprintln(os.Stderr, "upstream-names:", err)
		os.Exit(1)
	}
	data = append(data, '\n')
	if *out == "" {
		os.Stdout.Write(data)
		return
	}
	if err := os.WriteFile(*out, data, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "upstream-names:", err)
		os.Exit(1)
	}
}

func extract(version, root, conf string) (*upstreamnames.Names, error) {
	n := &upstreamnames.Names{Version: version}
	var err error
	// Features: the string constants of pkg/features named Support*.
	if n.Features, err = constants(filepath.Join(root, "pkg", "features"), func(name string) bool {
		return strings.HasPrefix(name, "Support")
	}); err != nil {
		return nil, err
	}
	// Profiles: the string constants of the suite named *ProfileName.
	if n.Profiles, err = constants(filepath.Join(conf, "utils", "suite"), func(name string) bool {
		return strings.HasSuffix(name, "ProfileName")
	}); err != nil {
		return nil, err
	}
	// Tests: the ShortName of every ConformanceTest literal, in the tests
	// package and its subpackages (tests/mesh).
	if n.Tests, err = shortNamesUnder(filepath.Join(conf, "tests")); err != nil {
		return nil, err
	}
	for what, list := range map[string][]string{"features": n.Features, "profiles": n.Profiles, "tests": n.Tests} {
		if len(list) == 0 {
			return nil, fmt.Errorf("no %s found under %s: not a gateway-api tree", what, root)
		}
	}
	return n, nil
}

// parseDir parses the non-test Go files of dir.
func parseDir(dir string) ([]*ast.File, error) {
	matches, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, m := range matches {
		if strings.HasSuffix(m, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, m, nil, 0)
		if err != nil {
			return nil, fmt.Errorf("parsing %s: %w", m, err)
		}
		files = append(files, f)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s: no Go files", dir)
	}
	return files, nil
}

// constants returns the values of the string constants in dir whose
// names keep says to keep, sorted and without duplicates.
func constants(dir string, keep func(string) bool) ([]string, error) {
	files, err := parseDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, f := range files {
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if !keep(name.Name) || i >= len(vs.Values) {
						continue
					}
					if s, ok := stringLit(vs.Values[i]); ok {
						out = append(out, s)
					}
				}
			}
		}
	}
	return sortedUnique(out), nil
}

// shortNamesUnder returns the ShortName values of dir and of the folders
// under it that hold Go files.
func shortNamesUnder(root string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if ms, _ := filepath.Glob(filepath.Join(p, "*.go")); len(ms) == 0 {
			return nil
		}
		names, err := shortNames(p)
		out = append(out, names...)
		return err
	})
	return sortedUnique(out), err
}

// shortNames returns the ShortName string values of the composite
// literals in dir.
func shortNames(dir string) ([]string, error) {
	files, err := parseDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			kv, ok := n.(*ast.KeyValueExpr)
			if !ok {
				return true
			}
			if id, ok := kv.Key.(*ast.Ident); ok && id.Name == "ShortName" {
				if s, ok := stringLit(kv.Value); ok {
					out = append(out, s)
				}
			}
			return true
		})
	}
	return sortedUnique(out), nil
}

func stringLit(e ast.Expr) (string, bool) {
	bl, ok := e.(*ast.BasicLit)
	if !ok || bl.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(bl.Value)
	return s, err == nil
}

func sortedUnique(s []string) []string {
	slices.Sort(s)
	return slices.Compact(s)
}
