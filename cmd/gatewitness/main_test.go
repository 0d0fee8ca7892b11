package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/gatewitness/gatewitness/features"
)

func run(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = gatewitness(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestFeaturesCommand(t *testing.T) {
	code, out, errs := run("features")
	if code != 0 || errs != "" {
		t.Fatalf("gatewitness features: exit %d, stderr %q", code, errs)
	}
	var want bytes.Buffer
	if err := features.Table(&want, nil); err != nil {
		t.Fatal(err)
	}
	if out != want.String() {
		t.Errorf("gatewitness features printed:\n%s\nwant features.Table:\n%s", out, want.String())
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if !strings.HasPrefix(lines[0], "NAME ") || len(lines) != len(features.All())+1 {
		t.Errorf("want a header and %d features, got %d lines starting %q", len(features.All()), len(lines), lines[0])
	}
	for _, name := range []string{"HTTPRouteRetryCodes", "GRPCRouteMaxStreamDuration", "HTTPRouteRequestTimeout"} {
		if !strings.Contains(out, "\n"+name+" ") {
			t.Errorf("gatewitness features does not list %s", name)
		}
	}
}

func TestTestsAndVersionCommands(t *testing.T) {
	code, out, _ := run("tests")
	if code != 0 || !strings.Contains(out, "HTTPRouteSimpleSameNamespace ") || !strings.HasPrefix(out, "TEST ") {
		t.Errorf("gatewitness tests: exit %d, output starts %.200q", code, out)
	}
	code, out, _ = run("version")
	if code != 0 || !strings.Contains(out, "Gateway API conformance suite v1.6.3") {
		t.Errorf("gatewitness version: exit %d, output %q", code, out)
	}
}

func TestUsageErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{nil, "Usage:"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"rnu"}, `unknown command "rnu" (did you mean run?)`},
		{[]string{"verify-report"}, "Usage: gatewitness verify-report [--strict] [--check-links] PATH..."},
		{[]string{"verify-report", "--bogus", "x"}, "unknown flag --bogus"},
		{[]string{"verify-report", "/no/such/report.yaml"}, "no such file"},
		{[]string{"run", "--supported-features", "HTTPRouteRetryCode"}, "did you mean HTTPRouteRetryCodes?"},
		{[]string{"run", "--in-process", "--organization", "acme"}, "--organization: these name the implementation under test, but this run is in-process"},
		{[]string{"tests", "extra"}, "takes no arguments"},
		{[]string{"features", "HTTPRouteRetryCode"}, `no feature "HTTPRouteRetryCode" (did you mean HTTPRouteRetryCodes?)`},
		{[]string{"features", "-o", "yaml"}, `-o "yaml": want table, wide or json`},
		{[]string{"run", "extra"}, `unexpected argument "extra"`},
		{[]string{"run", "--timing-tolerance", "fast"}, "flag --timing-tolerance"},
		{[]string{"run", "--conformance-profiles", "GATEWAY-FTP"}, "flag --conformance-profiles"},
		{[]string{"run", "--no-such-flag"}, "flag provided but not defined: -no-such-flag"},
		{[]string{"run", "--parallel", "0"}, "flag --parallel: 0 is out of range; want 1 to 4096"},
		{[]string{"run", "--parallel", "many"}, `invalid value "many" for flag -parallel`},
	}
	for _, tt := range tests {
		code, _, errs := run(tt.args...)
		if code != 2 || !strings.Contains(errs, tt.want) {
			t.Errorf("gatewitness %q: exit %d, stderr %q; want exit 2 and %q", tt.args, code, errs, tt.want)
		}
	}
}

func TestRunHelpDescribesEveryFlag(t *testing.T) {
	code, errs, stderr := run("run", "-help")
	if code != 0 || stderr != "" {
		t.Fatalf("gatewitness run -help: exit %d, stderr %q; want 0 and the help on stdout", code, stderr)
	}
	for _, flag := range []string{
		"gateway-class", "supported-features", "exempt-features", "all-features", "skip-tests", "run-test",
		"mode", "conformance-profiles", "report-output", "organization", "project", "url", "version", "contact",
		"cleanup-base-resources", "debug", "allow-crds-mismatch", "namespace-labels", "namespace-annotations",
		"timeout-config-overrides", "kubeconfig", "context", "in-process", "report-dir", "timing-tolerance",
		"retry-budget-load-qps", "retry-budget-load-requests", "retry-budget-share-slack",
		"options-file", "conformance-options-file", "v", "parallel", "install-steps",
	} {
		if len(flag) == 1 {
			// flag prints a one-letter flag's help on its own line.
			if line, ok := strings.CutPrefix(errs[strings.Index(errs, "\n  -"+flag+"\t")+1:], "  -"+flag+"\t"); !ok || len(line) < 10 {
				t.Errorf("-%s has no help text", flag)
			}
			continue
		}
		i := strings.Index(errs, "\n  -"+flag+" ")
		if i < 0 {
			i = strings.Index(errs, "\n  -"+flag+"\n")
		}
		if i < 0 {
			t.Errorf("gatewitness run -help does not list -%s", flag)
			continue
		}
		// The help text follows on the next line, indented by a tab.
		rest := errs[i+1:]
		if _, after, ok := strings.Cut(rest, "\n"); !ok || !strings.HasPrefix(after, "    \t") || len(strings.TrimSpace(strings.SplitN(after, "\n", 2)[0])) < 10 {
			t.Errorf("-%s has no help text", flag)
		}
	}
	if !strings.Contains(errs, "Usage: gatewitness run") {
		t.Error("gatewitness run -help has no usage line")
	}
}

func TestMatchString(t *testing.T) {
	d := testDeps{}
	for _, tt := range []struct {
		pat, s string
		want   bool
	}{{"", "anything", true}, {"^gate", "gatewitness", true}, {"^x$", "gatewitness", false}} {
		if got, err := d.MatchString(tt.pat, tt.s); err != nil || got != tt.want {
			t.Errorf("MatchString(%q, %q) = %v, %v", tt.pat, tt.s, got, err)
		}
	}
	if _, err := d.MatchString("(", "x"); err == nil {
		t.Error("MatchString of a bad pattern: no error")
	}
}

func TestCaptureAttributesOutput(t *testing.T) {
	var fwd bytes.Buffer
	c, err := newCapture(&fwd)
	if err != nil {
		t.Fatal(err)
	}
	w := func(s string) {
		if _, err := c.w.WriteString(s); err != nil {
			t.Fatal(err)
		}
	}
	w("\x16=== RUN   gatewitness\n")
	w("    suite.go:1: setting up\n")
	w("\x16=== RUN   gatewitness/First\n")
	w("    first.go:10: first log\n")
	w("\x16=== RUN   gatewitness/Second\n")
	w("\x16=== PAUSE gatewitness/Second\n")
	w("\x16=== RUN   gatewitness/Third/sub_test\n")
	w("    third.go:5: from a subtest\n")
	w("\x16=== NAME  gatewitness/First\n")
	w("    first.go:11: Error: boom\n")
	w("\x16--- FAIL: gatewitness/First (0.10s)\n")
	// A test's log keeps its framing lines ("=== RUN", "=== NAME", "---
	// FAIL"), which say who wrote what and which subtest failed.
	if got, want := c.Log("First"), "=== RUN   gatewitness/First\n    first.go:10: first log\n=== NAME  gatewitness/First\n    first.go:11: Error: boom\n--- FAIL: gatewitness/First (0.10s)\n"; got != want {
		t.Errorf("Log(First) = %q, want %q", got, want)
	}
	if got := c.Log("Third"); got != "=== RUN   gatewitness/Third/sub_test\n    third.go:5: from a subtest\n" {
		t.Errorf("Log(Third) = %q: a subtest's output belongs to its conformance test", got)
	}
	if got := c.Log("gatewitness"); got != "=== RUN   gatewitness\n    suite.go:1: setting up\n" {
		t.Errorf("Log(gatewitness) = %q", got)
	}
	if got := c.Log("Second"); got != "=== RUN   gatewitness/Second\n=== PAUSE gatewitness/Second\n" {
		t.Errorf("Log(Second) = %q, want its framing lines only", got)
	}

	// A long log keeps its tail.
	w("\x16=== NAME  gatewitness/Third\n")
	for i := range 12000 {
		w(fmt.Sprintf("line %d\n", i))
	}
	got := c.Log("Third")
	if len(got) > maxKeptLog || !strings.HasPrefix(got, "[earlier lines cut]\n") || !strings.HasSuffix(got, "line 11999\n") {
		t.Errorf("Log of a long log: %d bytes, starts %.40q, ends %q", len(got), got, got[max(0, len(got)-20):])
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	out := fwd.String()
	if strings.Contains(out, "\x16") || strings.Contains(out, "GATEWITNESS-SYNC") {
		t.Error("the forwarded output has framing bytes or sync markers")
	}
	if !strings.Contains(out, "=== RUN   gatewitness/First\n    first.go:10: first log\n") {
		t.Errorf("the output was not forwarded as written: %.300q", out)
	}
}

// TestParallelReachesTesting: --parallel is what testing reads as
// -test.parallel, which bounds the suite's parallel tests.
func TestParallelReachesTesting(t *testing.T) {
	for _, name := range []string{"test.v", "test.parallel"} {
		f := flag.Lookup(name)
		old := f.Value.String()
		t.Cleanup(func() { _ = f.Value.Set(old) })
	}
	if err := setTestingFlags(defaultParallel); err != nil {
		t.Fatal(err)
	}
	if got := flag.Lookup("test.parallel").Value.String(); got != strconv.Itoa(defaultParallel) {
		t.Errorf("-test.parallel = %s, want --parallel's default %d", got, defaultParallel)
	}
	if defaultParallel <= runtime.GOMAXPROCS(0) {
		t.Errorf("--parallel's default %d is no more than the cores' %d", defaultParallel, runtime.GOMAXPROCS(0))
	}
}

// TestHelpOfEveryCommand: -help, --help and -h of every command print its
// help on stdout and exit 0.
func TestHelpOfEveryCommand(t *testing.T) {
	for _, cmd := range []string{"run", "gateway", "verify-report", "report", "publish", "features", "tests", "version"} {
		for _, h := range []string{"-help", "--help", "-h"} {
			code, out, errs := run(cmd, h)
			if code != 0 || errs != "" || !strings.Contains(out, "Usage: gatewitness "+cmd) {
				t.Errorf("gatewitness %s %s: exit %d, stderr %q, stdout starting %.60q; want 0 and its usage on stdout", cmd, h, code, errs, out)
			}
		}
	}
}

// TestBadFlagIsOneLine: a mistyped flag is one line on stderr, with the
// flag it resembles and where the flags are listed, not the whole help.
func TestBadFlagIsOneLine(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--bogus"}, "gatewitness run: flag provided but not defined: -bogus (gatewitness run -help lists the flags)\n"},
		{[]string{"run", "--supported-featurs", "Gateway"}, "gatewitness run: flag provided but not defined: -supported-featurs; did you mean --supported-features? (gatewitness run -help lists the flags)\n"},
		{[]string{"gateway", "--kubeconfg", "x"}, "gatewitness gateway: flag provided but not defined: -kubeconfg; did you mean --kubeconfig? (gatewitness gateway -help lists the flags)\n"},
		{[]string{"publish", "--histroy", "x"}, "gatewitness publish: flag provided but not defined: -histroy; did you mean --history? (gatewitness publish -help lists the flags)\n"},
	} {
		code, out, errs := run(tt.args...)
		if code != 2 || out != "" || errs != tt.want {
			t.Errorf("gatewitness %q: exit %d, stdout %q, stderr %q; want 2 and only %q", tt.args, code, out, errs, tt.want)
		}
	}
}

// TestFeaturesOutputs: the default table is narrow, -o wide has the
// profiles, -o json every field, and names select features.
func TestFeaturesOutputs(t *testing.T) {
	code, out, _ := run("features")
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if len(l) > 120 {
			t.Errorf("gatewitness features: a line of %d columns", len(l))
			break
		}
	}
	if code != 0 || strings.Contains(out, "PROFILES") {
		t.Errorf("gatewitness features: exit %d; the default table has PROFILES", code)
	}
	if code, out, _ := run("features", "-o", "wide"); code != 0 || !strings.Contains(strings.SplitN(out, "\n", 2)[0], "PROFILES") {
		t.Errorf("gatewitness features -o wide: exit %d, header %q", code, strings.SplitN(out, "\n", 2)[0])
	}
	code, out, _ = run("features", "-o", "json", "HTTPRouteRetryCodes", "HTTPRouteRequestTimeout")
	var got []struct {
		Name     string   `json:"name"`
		Upstream bool     `json:"upstream"`
		Profiles []string `json:"profiles"`
	}
	if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil || len(got) != 2 || got[0].Name != "HTTPRouteRetryCodes" ||
		got[0].Upstream || !got[1].Upstream || len(got[0].Profiles) == 0 {
		t.Errorf("gatewitness features -o json NAMES: exit %d, %v, %+v", code, err, got)
	}
}
