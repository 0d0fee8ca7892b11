package negative

import (
	"flag"
	"sync"
)

// slotQueue bounds the child runs going at once and gives the slots that
// come free to the waiting children in the order they asked.
type slotQueue struct {
	mu      sync.Mutex
	free    int
	waiting []chan struct{}
}

// childSlots bounds the child runs of one test binary (EnvParallel).
var childSlots = &slotQueue{free: parallelChildren()}

// ask puts the caller in the queue: the channel returned is closed when a
// slot is the caller's, which it gives back with release.
func (q *slotQueue) ask() <-chan struct{} {
	q.mu.Lock()
	defer q.mu.Unlock()
	ch := make(chan struct{})
	if q.free > 0 {
		q.free--
		close(ch)
		return ch
	}
	q.waiting = append(q.waiting, ch)
	return ch
}

// release gives a slot back: to the child that has waited longest, or to
// the free ones.
func (q *slotQueue) release() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.waiting) > 0 {
		close(q.waiting[0])
		q.waiting = q.waiting[1:]
		return
	}
	q.free++
}

// Turns sets the order in which the child runs of a set of parallel
// subtests ask for their slots (turn 0 first), whatever order the testing
// package resumes the subtests in (it is not the order of t.Run). The
// breakage matrix gives the children with most tests (PackTests) the
// first turns, so that a long child does not start last.
type Turns struct {
	mu   sync.Mutex
	cond *sync.Cond
	next int          // the first turn not over
	over map[int]bool // turns over ahead of next
}

// NewTurns returns the turns of n subtests, or nil, which orders nothing,
// when the test binary would not run n parallel subtests at once
// (-test.parallel less than n): a subtest waiting for a turn that has not
// started would hold its place while the one before it waits for one.
func NewTurns(n int) *Turns {
	if f := flag.Lookup("test.parallel"); f != nil {
		if p, ok := f.Value.(flag.Getter).Get().(int); ok && p < n {
			return nil
		}
	}
	return newTurns()
}

func newTurns() *Turns {
	tu := &Turns{over: map[int]bool{}}
	tu.cond = sync.NewCond(&tu.mu)
	return tu
}

// wait blocks until every turn before i is over.
func (tu *Turns) wait(i int) {
	tu.mu.Lock()
	defer tu.mu.Unlock()
	for tu.next < i {
		tu.cond.Wait()
	}
}

// end marks turn i over: its child has asked for its slot, or its subtest
// ended without one. Ending a turn again does nothing.
func (tu *Turns) end(i int) {
	tu.mu.Lock()
	defer tu.mu.Unlock()
	tu.over[i] = true
	for tu.over[tu.next] {
		delete(tu.over, tu.next)
		tu.next++
	}
	tu.cond.Broadcast()
}

// turn is a child run's place in Turns (nil Turns: none).
type turn struct {
	turns *Turns
	i     int
}

// takeSlot waits for the child's turn, if it has one, asks q for a slot,
// ends the turn and waits for the slot; it returns the function that
// gives the slot back.
func (tn turn) takeSlot(q *slotQueue) (release func()) {
	if tn.turns != nil {
		tn.turns.wait(tn.i)
	}
	ready := q.ask()
	if tn.turns != nil {
		tn.turns.end(tn.i)
	}
	<-ready
	return q.release
}
