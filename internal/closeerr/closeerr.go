// Package closeerr collects the errors that the parts of a running
// component report (its goroutines as they end, its parts as they close),
// so that the component's Close can return them all.
package closeerr

import (
	"errors"
	"fmt"
	"sync"
)

// Collector keeps errors in the order they are recorded. The zero value is
// ready; it is safe for use by several goroutines.
type Collector struct {
	mu   sync.Mutex
	errs []error
}

// Record keeps err, wrapped as "what: err", unless it is nil.
func (c *Collector) Record(what string, err error) {
	if err == nil {
		return
	}
	c.mu.Lock()
	c.errs = append(c.errs, fmt.Errorf("%s: %w", what, err))
	c.mu.Unlock()
}

// Err joins the errors recorded so far, or is nil when there are none.
func (c *Collector) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return errors.Join(c.errs...)
}
