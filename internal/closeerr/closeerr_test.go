package closeerr

import (
	"errors"
	"io"
	"sync"
	"testing"
)

func TestCollectorKeepsWrappedErrorsAndSkipsNil(t *testing.T) {
	var c Collector
	if err := c.Err(); err != nil {
		t.Fatalf("Err of an empty Collector = %v; want nil", err)
	}
	c.Record("controller", nil)
	c.Record("data plane", io.ErrUnexpectedEOF)
	err := c.Err()
	if err == nil || err.Error() != "data plane: unexpected EOF" || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("Err = %v; want \"data plane: unexpected EOF\" wrapping io.ErrUnexpectedEOF", err)
	}
}

func TestCollectorRecordsFromManyGoroutines(t *testing.T) {
	var c Collector
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() { c.Record("part", io.EOF) })
	}
	wg.Wait()
	if n := len(c.Err().(interface{ Unwrap() []error }).Unwrap()); n != 8 {
		t.Fatalf("%d errors kept; want 8", n)
	}
}
