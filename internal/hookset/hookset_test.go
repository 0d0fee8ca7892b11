package hookset

import (
	"strings"
	"testing"
)

type inner struct{ C bool }

type hooks struct {
	A, B bool
	F    func() int
	In   inner
}

func TestMergeAddsBothSides(t *testing.T) {
	one := func() int { return 1 }
	got := Merge(hooks{A: true, F: one}, hooks{In: inner{C: true}})
	if !got.A || got.B || !got.In.C || got.F == nil || got.F() != 1 {
		t.Errorf("Merge = %+v: want A and In.C on, B off, F kept", got)
	}
	two := func() int { return 2 }
	if got := Merge(hooks{F: one}, hooks{F: two}); got.F() != 2 {
		t.Errorf("Merge: F = %d, want b's (2)", got.F())
	}
}

func TestMergeRefusesOtherKinds(t *testing.T) {
	defer func() {
		msg, _ := recover().(string)
		if !strings.Contains(msg, "N is a int") {
			t.Errorf("panic %q: want it to name field N and its kind", msg)
		}
	}()
	Merge(struct{ N int }{1}, struct{ N int }{2})
}
