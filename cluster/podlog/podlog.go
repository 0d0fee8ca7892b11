// Package podlog is the container log of an in-process pod: a bounded,
// in-memory record of the lines the pod's echo-backend writes, each with
// the time it was written, so that the embedded cluster can answer
// GET .../pods/{name}/log with sinceTime, tailLines and timestamps as a
// kubelet would.
//
// A Buffer keeps the newest lines, at most MaxLines of them and MaxBytes of
// text in all; older lines are dropped as newer ones arrive. A line longer
// than MaxLineBytes is cut into lines of that length, as container runtimes
// split long lines.
package podlog

import (
	"bytes"
	"sync"
	"time"
)

// Bounds of one Buffer.
const (
	MaxLines     = 10000
	MaxBytes     = 1 << 20 // text of the kept lines, one byte per newline included
	MaxLineBytes = 16 << 10
)

// Line is one line of a log.
type Line struct {
	// Time is when the line's last byte was written.
	Time time.Time
	// Text is the line without its newline.
	Text string
}

// Buffer is one container's log. It is an io.Writer safe for concurrent
// use; the zero value is not usable, create one with New.
type Buffer struct {
	now func() time.Time

	mu      sync.Mutex
	lines   []Line // oldest first; dropped lines are resliced off the front
	bytes   int    // text bytes of lines, plus one per line for its newline
	partial []byte // the start of a line whose newline has not come yet
	dropped int64  // lines dropped to keep the bounds
}

// New returns an empty Buffer.
func New() *Buffer { return &Buffer{now: time.Now} }

// Write appends p to the log. Every newline in p ends a line, stamped with
// the time of this call; text after the last newline waits for the rest of
// its line and is not returned by Lines until it is complete. Write never
// fails.
func (b *Buffer) Write(p []byte) (int, error) {
	n := len(p)
	b.mu.Lock()
	defer b.mu.Unlock()
	t := b.now()
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			// No newline: keep the piece, cutting full-length lines off it.
			for len(b.partial)+len(p) > MaxLineBytes {
				k := MaxLineBytes - len(b.partial)
				b.add(t, string(append(b.partial, p[:k]...)))
				b.partial, p = b.partial[:0], p[k:]
			}
			b.partial = append(b.partial, p...)
			return n, nil
		}
		line := p[:i]
		for len(b.partial)+len(line) > MaxLineBytes {
			k := MaxLineBytes - len(b.partial)
			b.add(t, string(append(b.partial, line[:k]...)))
			b.partial, line = b.partial[:0], line[k:]
		}
		if len(b.partial) == 0 {
			b.add(t, string(line))
		} else {
			b.add(t, string(append(b.partial, line...)))
			b.partial = b.partial[:0]
		}
		p = p[i+1:]
	}
	return n, nil
}

// add appends a complete line and drops the oldest lines past the bounds.
func (b *Buffer) add(t time.Time, text string) {
	b.lines = append(b.lines, Line{Time: t, Text: text})
	b.bytes += len(text) + 1
	for len(b.lines) > MaxLines || b.bytes > MaxBytes {
		b.bytes -= len(b.lines[0].Text) + 1
		b.lines[0] = Line{} // let the text go before append reallocates
		b.lines = b.lines[1:]
		b.dropped++
	}
}

// Lines returns the complete lines written at or after since (every line
// for the zero time), oldest first; with tail >= 0, only the last tail of
// those. The result is a copy the caller may keep.
func (b *Buffer) Lines(since time.Time, tail int) []Line {
	b.mu.Lock()
	defer b.mu.Unlock()
	first := 0
	if !since.IsZero() {
		// Times grow with the lines (unless the wall clock is stepped
		// back), so the lines since a time are a suffix: it ends at the
		// newest line written before since.
		first = len(b.lines)
		for i := len(b.lines) - 1; i >= 0 && !b.lines[i].Time.Before(since); i-- {
			first = i
		}
	}
	if tail >= 0 && len(b.lines)-first > tail {
		first = len(b.lines) - tail
	}
	return append([]Line(nil), b.lines[first:]...)
}

// Dropped returns how many lines were dropped to keep the bounds.
func (b *Buffer) Dropped() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.dropped
}
