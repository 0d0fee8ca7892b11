package tests_test

import (
	"testing"

	"github.com/gatecheck/gatecheck/conformance/negative"
)

// TestNegativeHelper is the child process of this package's negative
// checks: run by negative.Run, it runs the selected conformance tests
// against the reference gateway broken as breakages says. Run directly, it
// skips.
func TestNegativeHelper(t *testing.T) { negative.Helper(t, breakages) }
