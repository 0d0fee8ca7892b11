package calibration_test

import (
	"os"
	"os/exec"
	"slices"
	"strconv"
	"testing"

	"github.com/gatewitness/gatewitness/calibration"
	"github.com/gatewitness/gatewitness/reports"
)

// TestCalibrationHelper is the child process of the calibration runs.
func TestCalibrationHelper(t *testing.T) { calibration.Helper(t) }

// envCalibrate, set to 1 by make calibrate, runs TestCalibration; make
// test leaves it out (CI runs make calibrate as a step of its own).
const envCalibrate = "GATEWITNESS_CALIBRATION"

// EnvParallel sets how many variants run at once (default 3).
const envParallel = "GATEWITNESS_CALIBRATION_PARALLEL"

// EnvOnly names variants (comma-separated keys such as haproxy/honest)
// to run alone.
const envOnly = "GATEWITNESS_CALIBRATION_ONLY"

// TestCalibration runs every variant on its real data plane and wants
// each test's verdict to be the one its table expects.
func TestCalibration(t *testing.T) {
	if os.Getenv(envCalibrate) != "1" {
		t.Skipf("the calibration runs real proxies: make calibrate (or %s=1 go test ./calibration -run TestCalibration)", envCalibrate)
	}
	for _, bin := range []string{"haproxy", "nginx"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("%s is not installed: apt-get install -y haproxy nginx (the calibration drives both)", bin)
		}
	}
	n := 3
	if v, err := strconv.Atoi(os.Getenv(envParallel)); err == nil && v > 0 {
		n = v
	}
	slots := make(chan struct{}, n)
	only := os.Getenv(envOnly)
	for _, v := range calibration.Variants() {
		if only != "" && !slices.Contains(splitComma(only), v.Key()) {
			continue
		}
		t.Run(v.Key(), func(t *testing.T) {
			t.Parallel()
			slots <- struct{}{}
			defer func() { <-slots }()
			calibration.Check(t, "TestCalibrationHelper", v)
		})
	}
}

func splitComma(s string) []string {
	var out []string
	for start := 0; start <= len(s); {
		end := start
		for end < len(s) && s[end] != ',' {
			end++
		}
		out = append(out, s[start:end])
		start = end + 1
	}
	return out
}

// TestTablesCoverTheProfiles: each data plane's honest table has a row for
// every gatewitness test of the calibrated profiles, and none for any
// other; a variant's rows name tests of those profiles; every row says
// why and where.
func TestTablesCoverTheProfiles(t *testing.T) {
	scope := calibration.Scope()
	if len(scope) == 0 {
		t.Fatal("no test counts in the calibrated profiles")
	}
	for _, v := range calibration.Variants() {
		rows := calibration.Expected(v)
		var names []string
		for _, r := range rows {
			names = append(names, r.Test)
			if !slices.Contains(scope, r.Test) {
				t.Errorf("%s: row for %s, which is not a test of the calibrated profiles %v", v.Key(), r.Test, calibration.Profiles)
			}
			if r.Why == "" {
				t.Errorf("%s: the row of %s says not why", v.Key(), r.Test)
			}
			if r.Verdict == reports.Fail && r.Doc == "" {
				t.Errorf("%s: the failing row of %s cites no documentation", v.Key(), r.Test)
			}
		}
		if len(v.Tests) > 0 {
			continue
		}
		for _, name := range scope {
			if !slices.Contains(names, name) {
				t.Errorf("%s: no expected verdict for %s, a test of the calibrated profiles: add a row to the %s table in calibration/expected.go", v.Key(), name, v.DataPlane)
			}
		}
	}
}

// TestOverClaimsFail: a variant that claims beyond its data plane's
// honest claims expects each test it runs to fail, and runs at least one.
func TestOverClaimsFail(t *testing.T) {
	for _, v := range calibration.Variants() {
		if len(v.Extra) == 0 {
			continue
		}
		if len(v.Tests) == 0 {
			t.Errorf("%s over-claims %v but names no tests to run", v.Key(), v.Extra)
		}
		for _, r := range calibration.Expected(v) {
			if r.Verdict != reports.Fail {
				t.Errorf("%s over-claims, yet expects %s to %s", v.Key(), r.Test, r.Verdict)
			}
		}
	}
}
