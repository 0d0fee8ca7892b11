package calibration_test

import (
	"os"
	"strings"
	"testing"

	"github.com/gatewitness/gatewitness/calibration"
)

// TestCalibrationHelper is the child process of the calibration runs.
func TestCalibrationHelper(t *testing.T) { calibration.Helper(t) }

func TestSmoke(t *testing.T) {
	key := os.Getenv("SMOKE")
	if key == "" {
		t.Skip()
	}
	v, _ := calibration.Lookup(key)
	var only []string
	if s := os.Getenv("SMOKE_TESTS"); s != "" {
		only = strings.Split(s, ",")
	}
	got := calibration.Run(t, "TestCalibrationHelper", v, only...)
	for name, r := range got {
		t.Logf("%s: %s %s", name, r.Result, r.Message)
	}
}
