package plugin_test

import (
	"bufio"
	"bytes"
	"go/version"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// gatewitness is the module path of this repository.
const gatewitness = "github.com/gatewitness/gatewitness"

// suitePackages are the packages an implementer links to run gatewitness's
// tests: the plug-in and the tests themselves.
var suitePackages = []string{gatewitness + "/conformance/plugin", gatewitness + "/conformance/tests"}

// forbiddenInSuite says why a package must not be linked into the suite:
// the suite talks to the implementation it certifies and to the
// echo-backend only over the wire, through the contract packages
// (contract/..., echo-backend/echopb and grpcechopb), as a gRPC client and
// server share only their .proto. "" means the package may be linked.
func forbiddenInSuite(pkg string) string {
	switch {
	case pkg == gatewitness+"/gateway" || strings.HasPrefix(pkg, gatewitness+"/gateway/"):
		return "the reference implementation, which the suite certifies"
	case pkg == gatewitness+"/cluster" || strings.HasPrefix(pkg, gatewitness+"/cluster/"):
		return "the embedded cluster, which only the runner's in-process target starts"
	case (pkg == gatewitness+"/echo-backend" || strings.HasPrefix(pkg, gatewitness+"/echo-backend/")) &&
		!slices.Contains([]string{gatewitness + "/echo-backend/echopb", gatewitness + "/echo-backend/grpcechopb"}, pkg):
		return "a part of the echo-backend (its servers, its fault parser, its ledger), not its generated gRPC API; take wire names from contract/echowire"
	case isEchoBasic(pkg) && !strings.HasSuffix(pkg, "/echo-basic/grpcechoserver"):
		return "upstream's echo-basic servers"
	}
	return ""
}

// isEchoBasic reports whether pkg is one of upstream echo-basic's packages:
// under sigs.k8s.io/gateway-api/conformance/echo-basic up to v1.6, under
// sigs.k8s.io/gateway-api-conformance-images/echo-basic from v1.7.
func isEchoBasic(pkg string) bool {
	return strings.HasPrefix(pkg, "sigs.k8s.io/gateway-api/conformance/echo-basic") ||
		strings.HasPrefix(pkg, "sigs.k8s.io/gateway-api-conformance-images/")
}

// TestSuiteLinksNoImplementation lists, with the go command, every package
// the plug-in and the tests depend on (tests excluded: a test binary of
// this repository may start the reference gateway), and fails on any
// package forbiddenInSuite names, printing the chain of imports that
// brings it in. Upstream's generated GrpcEcho stubs
// (echo-basic/grpcechoserver) come in through upstream's own
// conformance/utils/grpc, which utils/suite imports; no gatewitness package
// may import any echo-basic package itself.
//
// The go command runs in this package's directory, so it sees this
// repository's go.mod; GATEWITNESS_GOLIST_DIR makes it run in another module
// that requires gatewitness, as make test-gwapi-v1.7 does for Gateway API
// v1.7.0.
func TestSuiteLinksNoImplementation(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is not on PATH (go test puts it there): %v", err)
	}
	cmd := exec.Command(goCmd, append([]string{"list", "-deps", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}"}, suitePackages...)...)
	cmd.Dir = os.Getenv("GATEWITNESS_GOLIST_DIR")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v\n%s", strings.Join(suitePackages, " "), err, stderr.Bytes())
	}
	imports := map[string][]string{}
	var order []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		imports[f[0]] = f[1:]
		order = append(order, f[0])
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for _, p := range suitePackages {
		if _, ok := imports[p]; !ok {
			t.Fatalf("go list -deps did not list %s itself; output:\n%s", p, out)
		}
	}

	for _, pkg := range order {
		if why := forbiddenInSuite(pkg); why != "" {
			t.Errorf("the suite links %s, %s: %s", pkg, why, strings.Join(importChain(imports, pkg), " -> "))
		}
		if strings.HasPrefix(pkg, gatewitness+"/") {
			for _, imp := range imports[pkg] {
				if isEchoBasic(imp) {
					t.Errorf("%s imports upstream's echo-basic package %s; use the contract packages instead", pkg, imp)
				}
			}
		}
	}
}

// importChain returns a shortest chain of imports from one of
// suitePackages to pkg.
func importChain(imports map[string][]string, pkg string) []string {
	parent := map[string]string{}
	queue := slices.Clone(suitePackages)
	for _, p := range queue {
		parent[p] = ""
	}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if p == pkg {
			var chain []string
			for ; p != ""; p = parent[p] {
				chain = append(chain, p)
			}
			slices.Reverse(chain)
			return chain
		}
		for _, imp := range imports[p] {
			if _, seen := parent[imp]; !seen {
				parent[imp] = p
				queue = append(queue, imp)
			}
		}
	}
	return []string{pkg}
}

// TestGoDirectiveIsTheLowestNeeded checks that gatewitness's go.mod asks for
// no newer Go than its dependencies do: a consumer's go mod tidy raises the
// consumer's go line to gatewitness's, so a patch release there (such as the
// one that built it) would force it on every implementer.
func TestGoDirectiveIsTheLowestNeeded(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is not on PATH (go test puts it there): %v", err)
	}
	list := func(args ...string) []string {
		t.Helper()
		var stderr bytes.Buffer
		cmd := exec.Command(goCmd, append([]string{"list", "-m", "-f", "{{.Path}} {{.GoVersion}}"}, args...)...)
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list -m %v: %v\n%s", args, err, stderr.Bytes())
		}
		return strings.Split(strings.TrimSpace(string(out)), "\n")
	}
	main := strings.Fields(list()[0])
	if len(main) != 2 || main[0] != gatewitness {
		t.Fatalf("go list -m printed %q; want %s and its go version", main, gatewitness)
	}
	need, by := "go1", ""
	for _, line := range list("all")[1:] {
		f := strings.Fields(line)
		if len(f) == 2 && version.Compare("go"+f[1], need) > 0 {
			need, by = "go"+f[1], f[0]
		}
	}
	if have := "go" + main[1]; version.Compare(have, need) != 0 {
		t.Errorf("go.mod says go %s; the dependencies need go %s (%s): set the go line to that", main[1], strings.TrimPrefix(need, "go"), by)
	}
}
