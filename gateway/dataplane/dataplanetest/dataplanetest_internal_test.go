package dataplanetest

import (
	"slices"
	"testing"

	"github.com/gatewitness/gatewitness/gateway/dataplane"
	"github.com/gatewitness/gatewitness/gateway/dataplane/internal/breakage"
)

// TestEachBreakageTurnsOnItsOwnSwitch: Breakages lists exactly the names
// switches knows, and each turns on a switch no other one does.
func TestEachBreakageTurnsOnItsOwnSwitch(t *testing.T) {
	if len(Breakages()) != len(switches) {
		t.Fatalf("Breakages lists %d, switches has %d", len(Breakages()), len(switches))
	}
	var seen []breakage.Set
	for _, b := range Breakages() {
		on, ok := switches[b]
		if !ok {
			t.Fatalf("%s has no switch", b)
		}
		var s breakage.Set
		on(&s)
		if s == (breakage.Set{}) || slices.Contains(seen, s) {
			t.Errorf("%s turns on %+v: nothing, or what another breakage does", b, s)
		}
		seen = append(seen, s)
	}
}

func TestNewServerRefusesUnknownBreakage(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("NewServer with an unknown breakage did not panic")
		}
	}()
	NewServer(dataplane.Options{}, "no-such-breakage").Close()
}

func TestNewServerHealthy(t *testing.T) {
	s := NewServer(dataplane.Options{})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}
