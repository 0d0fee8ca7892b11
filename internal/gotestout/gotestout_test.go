package gotestout

import "testing"

const out = `=== RUN   TestHelper
=== RUN   TestHelper/Other
    other.go:1: not this one
=== RUN   TestHelper/Mine
    apply.go:279: Applying x.yaml
    mine.go:10: observe: status = 503
    mine.go:11: first
=== RUN   TestHelper/Mine/sub
    mine.go:20: second

    mine.go:21: third
--- FAIL: TestHelper/Mine (1.00s)
    --- FAIL: TestHelper/Mine/sub (0.50s)
=== RUN   TestHelper/Mineral
    mineral.go:1: a name that only starts alike
`

func TestFailureLines(t *testing.T) {
	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{Keep: 10, DropResults: true}, "mine.go:11: first\nmine.go:20: second\nmine.go:21: third"},
		{Options{Keep: 2, DropResults: true}, "mine.go:20: second\nmine.go:21: third"},
		{Options{Keep: 10}, "mine.go:11: first\nmine.go:20: second\nmine.go:21: third\n--- FAIL: TestHelper/Mine (1.00s)\n--- FAIL: TestHelper/Mine/sub (0.50s)"},
	} {
		if got := FailureLines([]byte(out), "TestHelper/Mine", c.o); got != c.want {
			t.Errorf("FailureLines(%+v) =\n%s\nwant\n%s", c.o, got, c.want)
		}
	}
	if got := FailureLines([]byte(out), "TestHelper/None", Options{Keep: 5}); got != "(no failure text in the child's output)" {
		t.Errorf("no lines: %q", got)
	}
}
