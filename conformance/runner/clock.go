package runner

import (
	"slices"
	"sync"
	"time"

	"github.com/gatewitness/gatewitness/reports"
)

// phaseClock times the phases of a run, each from the end of the one
// before.
type phaseClock struct {
	mu     sync.Mutex
	last   time.Time
	phases []reports.Phase
}

// newPhaseClock starts the first phase at began, or now if began is zero.
func newPhaseClock(began time.Time) *phaseClock {
	if began.IsZero() {
		began = time.Now()
	}
	return &phaseClock{last: began}
}

// end ends the phase name now.
func (c *phaseClock) end(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	c.phases = append(c.phases, reports.Phase{Name: name, Duration: now.Sub(c.last)})
	c.last = now
}

func (c *phaseClock) list() []reports.Phase {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.phases)
}
