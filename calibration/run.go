package calibration

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/gateway-api/conformance/utils/suite"

	"github.com/gatewitness/gatewitness/cluster"
	"github.com/gatewitness/gatewitness/conformance/runner"
	gctests "github.com/gatewitness/gatewitness/conformance/tests"
	"github.com/gatewitness/gatewitness/internal/gotestout"
	"github.com/gatewitness/gatewitness/reports"
)

// Verdict is one test's result on a variant, and what it said.
type Verdict struct {
	Result  reports.Result
	Message string `json:",omitempty"`
}

// Environment of the child process that runs one variant.
const (
	envVariant = "GATEWITNESS_CALIBRATION_VARIANT"
	envResults = "GATEWITNESS_CALIBRATION_RESULTS"
	envTests   = "GATEWITNESS_CALIBRATION_TESTS"
)

// childLimit bounds one variant's run.
const childLimit = 4 * time.Minute

// Run runs the variant's tests in a child process (the running test
// binary, with -test.run selecting helperTest) and returns each
// gatewitness test's verdict. Tests it does not claim come back skipped.
// A failing conformance test fails the Go test running the suite, so the
// suite runs in a child, as conformance/negative runs its breakages. only,
// when not empty, restricts the run to those ShortNames.
func Run(t *testing.T, helperTest string, v Variant, only ...string) map[string]Verdict {
	t.Helper()
	if len(only) == 0 {
		only = v.Tests
	}
	results := filepath.Join(t.TempDir(), "results.json")
	cmd := exec.Command(os.Args[0], "-test.run=^"+helperTest+"$", "-test.count=1", "-test.v", "-test.parallel=48")
	cmd.Env = append(os.Environ(), envVariant+"="+v.Key(), envResults+"="+results, envTests+"="+strings.Join(only, ","))
	done := make(chan struct{})
	var out []byte
	var err error
	start := time.Now()
	go func() { out, err = cmd.CombinedOutput(); close(done) }()
	select {
	case <-done:
	case <-time.After(childLimit):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("calibration run %s did not finish in %v; output:\n%s", v.Key(), childLimit, tail(out))
	}
	data, readErr := os.ReadFile(results)
	if readErr != nil {
		t.Fatalf("calibration run %s wrote no results (exit: %v): %v; output:\n%s", v.Key(), err, readErr, tail(out))
	}
	got := map[string]Verdict{}
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatalf("calibration run %s: reading %s: %v", v.Key(), results, err)
	}
	if dir := os.Getenv("GATEWITNESS_CALIBRATION_OUTPUT"); dir != "" {
		_ = os.WriteFile(filepath.Join(dir, strings.ReplaceAll(v.Key(), "/", "-")+".log"), out, 0o644)
	}
	for name, vd := range got {
		if vd.Result == reports.Fail {
			vd.Message = failureLines(out, helperTest, name)
			got[name] = vd
		}
	}
	t.Logf("calibration run %s took %v", v.Key(), time.Since(start).Round(100*time.Millisecond))
	return got
}

// Helper is the body of the helper test that Run starts: run normally it
// skips; in a child it runs the variant named in the environment and
// writes every gatewitness test's verdict.
func Helper(t *testing.T) {
	key := os.Getenv(envVariant)
	if key == "" {
		t.Skip("helper process of the calibration; it runs only as its child")
	}
	v, ok := Lookup(key)
	if !ok {
		t.Fatalf("unknown calibration variant %q; known: %v", key, Keys())
	}
	var only []string
	if s := os.Getenv(envTests); s != "" {
		only = strings.Split(s, ",")
	}
	o := runner.DefaultOptions()
	o.SupportedFeatures = v.Claims()
	// Only the profiles the data plane is calibrated in: a profile's core
	// features (GRPCRoute, say) would otherwise be taken as claimed.
	for _, p := range Profiles {
		o.ConformanceProfiles = append(o.ConformanceProfiles, suite.ConformanceProfileName(p))
	}
	ours := map[string]bool{}
	for _, ct := range gctests.ConformanceTests {
		ours[ct.ShortName] = len(only) == 0 || slices.Contains(only, ct.ShortName)
	}
	for _, ct := range runner.AllTests() {
		if !ours[ct.ShortName] {
			o.SkipTests = append(o.SkipTests, ct.ShortName)
		}
	}
	var res *runner.Result
	t.Cleanup(func() { // registered first, so it runs after the run's own
		if res == nil || res.Run == nil {
			return
		}
		got := map[string]Verdict{}
		for _, tr := range res.Run.Tests {
			if ours[tr.ShortName] {
				got[tr.ShortName] = Verdict{Result: tr.Result, Message: tr.Message}
			}
		}
		data, err := json.Marshal(got)
		if err == nil {
			err = os.WriteFile(os.Getenv(envResults), data, 0o600)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "calibration: writing results: %v\n", err)
		}
	})
	in := runner.InProcess{Gateway: cluster.Gateway{ServeWith: func(log logr.Logger) (cluster.DataPlane, error) {
		return v.New(log)
	}}}
	var err error
	if res, err = runner.RunInProcess(t, o, in); err != nil {
		t.Fatal(err)
	}
}

func tail(b []byte) string {
	const max = 12 << 10
	if len(b) > max {
		return "...\n" + string(b[len(b)-max:])
	}
	return string(b)
}

// failureLines returns the last lines the test named test wrote in the
// child's verbose output, under its own and its subtests' headers: they
// say why it failed.
func failureLines(out []byte, helperTest, test string) string {
	return gotestout.FailureLines(out, helperTest+"/"+test, gotestout.Options{Keep: 8, DropResults: true})
}

// Check runs v and fails t for each test whose verdict differs from
// Expected(v), naming the test, the data plane, the variant, the verdict
// expected and why, and what the test said. It returns the verdicts.
func Check(t *testing.T, helperTest string, v Variant) map[string]Verdict {
	t.Helper()
	got := Run(t, helperTest, v)
	for _, r := range Expected(v) {
		g, ok := got[r.Test]
		switch {
		case !ok:
			t.Errorf("%s on %s, variant %s: no verdict; expected %s: %s (%s)", r.Test, v.DataPlane, v.Name, r.Verdict, r.Why, r.Doc)
		case g.Result != r.Verdict:
			said := ""
			if g.Message != "" {
				said = "\nthe test said:\n" + g.Message
			}
			t.Errorf("%s on %s, variant %s: %s, expected %s: %s (%s)%s", r.Test, v.DataPlane, v.Name, g.Result, r.Verdict, r.Why, r.Doc, said)
		}
	}
	return got
}
