package calibration_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/gatewitness/gatewitness/calibration"
	"github.com/gatewitness/gatewitness/reports"
)

// TestCalibrationHelper is the child process of the calibration runs.
func TestCalibrationHelper(t *testing.T) { calibration.Helper(t) }

// envCalibrate, set to 1 by make calibrate, runs TestCalibration; make
// test leaves it out (CI runs make calibrate as a step of its own).
const envCalibrate = "GATEWITNESS_CALIBRATION"

// envMatrix names a folder to write the matrix to, as matrix.json.
const envMatrix = "GATEWITNESS_CALIBRATION_MATRIX"

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
	var mu sync.Mutex
	measured := map[string]map[string]calibration.Verdict{}
	if dir := os.Getenv(envMatrix); dir != "" {
		t.Cleanup(func() { // after the parallel subtests
			data, err := json.MarshalIndent(calibration.Matrix(measured), "", "  ")
			if err == nil {
				err = os.MkdirAll(dir, 0o755)
			}
			if err == nil {
				err = os.WriteFile(filepath.Join(dir, "matrix.json"), append(data, '\n'), 0o644)
			}
			if err != nil {
				t.Errorf("writing the calibration matrix: %v", err)
				return
			}
			t.Logf("calibration matrix: %s (gatewitness publish --calibration shows it on the site)", filepath.Join(dir, "matrix.json"))
		})
	}
	for _, v := range calibration.Variants() {
		if only != "" && !slices.Contains(strings.Split(only, ","), v.Key()) {
			continue
		}
		t.Run(v.Key(), func(t *testing.T) {
			t.Parallel()
			slots <- struct{}{}
			defer func() { <-slots }()
			got := calibration.Check(t, "TestCalibrationHelper", v)
			mu.Lock()
			measured[v.Key()] = got
			mu.Unlock()
		})
	}
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

// TestDocMatrix: docs/calibration.md holds the matrix as the tables make
// it (GATEWITNESS_UPDATE_DOCS=1 writes it again).
func TestDocMatrix(t *testing.T) {
	const path = "../docs/calibration.md"
	const begin, end = "<!-- matrix: begin (written by go test ./calibration -run TestDocMatrix with GATEWITNESS_UPDATE_DOCS=1) -->\n", "<!-- matrix: end -->"
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	i, j := strings.Index(doc, begin), strings.Index(doc, end)
	if i < 0 || j < i {
		t.Fatalf("%s has no matrix markers %q ... %q", path, begin, end)
	}
	want := doc[:i+len(begin)] + calibration.MarkdownMatrix() + doc[j:]
	if want == doc {
		return
	}
	if os.Getenv("GATEWITNESS_UPDATE_DOCS") == "1" {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s's matrix is not the tables' (calibration/expected.go): write it again with GATEWITNESS_UPDATE_DOCS=1 go test ./calibration -run TestDocMatrix", path)
}
