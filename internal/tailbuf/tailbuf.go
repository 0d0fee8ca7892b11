// Package tailbuf holds the last bytes written to it: the end of a child
// process's output, kept to quote in an error when the process fails,
// without letting a chatty process grow memory without bound.
package tailbuf

import "sync"

// Buffer keeps the last Max bytes written to it. It is safe for
// concurrent use (a process's stdout and stderr may both write to it).
type Buffer struct {
	// Max is how many bytes it keeps; the oldest are dropped first.
	Max int

	mu  sync.Mutex
	buf []byte
}

// New returns a Buffer that keeps the last max bytes.
func New(max int) *Buffer { return &Buffer{Max: max} }

// Write appends p, dropping the oldest bytes past Max. It never fails.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.Max; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}

// String returns the bytes kept.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}
