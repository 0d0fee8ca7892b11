package runner_test

import (
	"testing"

	"github.com/gatewitness/gatewitness/conformance/runner"
)

// skipAllBut adds to o.SkipTests every test the suite knows that keep
// does not select.
func skipAllBut(o *runner.Options, keep func(shortName string) bool) {
	for _, ct := range runner.AllTests() {
		if !keep(ct.ShortName) {
			o.SkipTests = append(o.SkipTests, ct.ShortName)
		}
	}
}

// runChecked calls run (runner.Run, or RunInProcess, on t) and check with
// its result once the run has recorded it: Run registers the run's end on
// t's cleanups, so check runs in a cleanup registered first, which runs
// last. A Run that failed has said so, and check is not called; a
// Result.Err fails t before check.
func runChecked(t *testing.T, run func() (*runner.Result, error), check func(t *testing.T, res *runner.Result)) {
	t.Helper()
	var res *runner.Result
	t.Cleanup(func() {
		if res == nil {
			return // Run failed, and said so
		}
		if res.Err != nil {
			t.Fatalf("Result.Err = %v", res.Err)
		}
		check(t, res)
	})
	var err error
	if res, err = run(); err != nil {
		t.Fatal(err)
	}
}
