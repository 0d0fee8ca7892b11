package site

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatewitness/gatewitness/reports"
)

// TestCalibrationPage: a site given a calibration matrix has
// calibration.html, linked from the index, with a row per test, a column
// per variant, the reason of each cell, a mark where the measured verdict
// differs, and "not run" where a variant does not run a test.
func TestCalibrationPage(t *testing.T) {
	c := &Calibration{
		Tests: []string{"RetryBody", "Streamed"},
		Variants: []CalibrationVariant{
			{DataPlane: "haproxy", Name: "honest", About: "as shipped", Cells: []CalibrationCell{
				{Test: "RetryBody", Expected: reports.Pass, Measured: reports.Pass, Why: "http-buffer-request holds the body"},
				{Test: "Streamed", Expected: reports.Pass, Measured: reports.Fail, Why: "http-no-delay"},
			}},
			{DataPlane: "haproxy", Name: "no-buffer", About: "without it", Cells: []CalibrationCell{
				{Test: "RetryBody", Expected: reports.Fail, Why: "the body streams to the first attempt", Doc: "manual 4.2"},
			}},
		},
	}
	data, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "matrix.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	read, err := ReadCalibration(path)
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	h, _ := NewHistory(nightRun(0, map[string]reports.Result{"A": reports.Pass}))
	if _, err := Build(out, h, Options{Calibration: read}); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(out, "calibration.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`<tr id="RetryBody">`, `<th colspan="2">haproxy</th>`, "the body streams to the first attempt (manual 4.2)",
		"measured fail", "not run", `class="cell fail"`} {
		if !strings.Contains(string(page), want) {
			t.Errorf("calibration.html lacks %q", want)
		}
	}
	index, _ := os.ReadFile(filepath.Join(out, "index.html"))
	if !strings.Contains(string(index), `href="calibration.html"`) {
		t.Error("the index does not link to calibration.html")
	}
	if _, err := ReadCalibration(filepath.Join(out, "index.html")); err == nil {
		t.Error("ReadCalibration took an HTML page for a matrix")
	}
}
