package negative

import (
	"slices"
	"sync"
	"testing"
)

// TestTurnsOrderTheSlots: children that ask in any order take a single
// slot in the order of their turns, and a turn ended without asking (a
// subtest that skipped) holds no one up.
func TestTurnsOrderTheSlots(t *testing.T) {
	q := &slotQueue{free: 1}
	turns := newTurns()
	hold := q.ask() // the one slot is taken until all four wait
	<-hold
	var mu sync.Mutex
	var order []int
	var wg sync.WaitGroup
	for _, i := range []int{3, 1, 2} { // turn 0 never asks
		wg.Go(func() {
			release := turn{turns, i}.takeSlot(q)
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			release()
		})
	}
	turns.end(0) // as CheckInTurn's cleanup does for a subtest that skipped
	// Every turn asks once the ones before it have; the last to ask is 3.
	turns.wait(4)
	q.release()
	wg.Wait()
	if !slices.Equal(order, []int{1, 2, 3}) {
		t.Errorf("the slot went to turns %v, want [1 2 3]", order)
	}
}

// TestNewTurnsOrdersNothingBeyondTheParallelLimit: with more subtests than
// -test.parallel runs at once, waiting for a turn could wait for a subtest
// that cannot start, so NewTurns gives none.
func TestNewTurnsOrdersNothingBeyondTheParallelLimit(t *testing.T) {
	if turns := NewTurns(1 << 20); turns != nil {
		t.Error("NewTurns(1<<20) ordered the slots; want nil beyond -test.parallel")
	}
}
