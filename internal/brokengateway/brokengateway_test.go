package brokengateway_test

import (
	"context"
	"testing"

	"github.com/gatewitness/gatewitness/internal/brokengateway"
)

func TestContext(t *testing.T) {
	if h := brokengateway.FromContext(context.Background()); h.NoMesh || h.Apply != nil || h.NewDataPlane != nil || h.ListenProbeProxy != nil {
		t.Fatal("a context without hooks gave some")
	}
	ctx := brokengateway.NewContext(context.Background(), brokengateway.Hooks{NoMesh: true})
	if !brokengateway.FromContext(ctx).NoMesh {
		t.Error("the hooks put in the context are not the ones taken out")
	}
}

// TestSetLastsAsLongAsTheTest: hooks registered for a test are its own,
// and gone once it ends.
func TestSetLastsAsLongAsTheTest(t *testing.T) {
	var inner testing.TB
	t.Run("broken", func(t *testing.T) {
		inner = t
		brokengateway.Set(t, brokengateway.Hooks{NoMesh: true})
		if !brokengateway.For(t).NoMesh {
			t.Error("For does not return what Set registered")
		}
	})
	if brokengateway.For(t).NoMesh {
		t.Error("the subtest's hooks leaked to its parent")
	}
	if brokengateway.For(inner).NoMesh {
		t.Error("the hooks outlived their test")
	}
}
