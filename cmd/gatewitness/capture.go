package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gatewitness/gatewitness/contract/observe"
	"github.com/gatewitness/gatewitness/reports"
)

// capture reads what the hosted tests print (testing's -test.v=test2json
// form, whose framing lines start with a ^V byte: "=== RUN   name",
// "=== NAME  name", "--- FAIL: name (1.00s)"), keeps the tail of each
// conformance test's log for the report, and forwards the output to a
// writer when asked to.
type capture struct {
	w       *os.File  // the pipe's write end: os.Stdout while the tests run
	r       *os.File  // the pipe's read end
	forward io.Writer // nil: keep the output to ourselves
	done    chan struct{}

	mu    sync.Mutex
	logs  map[string]*bytes.Buffer // by ShortName
	cut   map[string]bool          // logs whose start was dropped
	seq   int
	syncs map[int]chan struct{}
}

// Bounds on what the capture keeps.
const (
	// maxKeptLog is the most of a test's log kept: the tail, where the
	// failure is; the reports keep as much (reports.MaxLogLen).
	maxKeptLog = reports.MaxLogLen
	// maxLine is the longest line parsed; the rest of a longer line is
	// forwarded but not kept.
	maxLine = 64 << 10
	// syncTimeout bounds the wait for the reader to catch up.
	syncTimeout = 10 * time.Second
)

const (
	framing    = '\x16'
	syncPrefix = "\x16=== GATEWITNESS-SYNC "
)

func newCapture(forward io.Writer) (*capture, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("capturing the test output: %w", err)
	}
	c := &capture{w: w, r: r, forward: forward, done: make(chan struct{}),
		logs: map[string]*bytes.Buffer{}, cut: map[string]bool{}, syncs: map[int]chan struct{}{}}
	go c.read()
	return c, nil
}

// read parses the output until the write end is closed.
func (c *capture) read() {
	defer close(c.done)
	br := bufio.NewReaderSize(c.r, maxLine)
	current := ""
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// An over-long line: forward it, keep its start.
			c.add(current, line)
			c.emit(line)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = br.ReadSlice('\n')
				c.emit(line)
			}
			if err != nil {
				return
			}
			continue
		}
		if len(line) > 0 {
			current = c.handle(current, line)
		}
		if err != nil {
			return
		}
	}
}

// handle takes one whole line and returns the test that now owns the
// output.
func (c *capture) handle(current string, line []byte) string {
	if bytes.HasPrefix(line, []byte(syncPrefix)) {
		n, _ := strconv.Atoi(string(bytes.TrimSpace(line[len(syncPrefix):])))
		c.mu.Lock()
		if ch, ok := c.syncs[n]; ok {
			close(ch)
			delete(c.syncs, n)
		}
		c.mu.Unlock()
		return current
	}
	if line[0] == framing {
		line = line[1:]
		c.emit(line)
		s := string(bytes.TrimLeft(line, " "))
		// "=== RUN   name", "=== NAME  name", "=== CONT  name", "=== PAUSE name"
		if len(s) > 10 && s[:4] == "=== " {
			// Kept, so the log shows which subtest wrote what.
			name := strings.TrimSpace(s[10:])
			c.add(name, line)
			return name
		}
		// "--- FAIL: name (1.00s)": kept in the named test's log, where
		// runner.FailedAssertions looks for the failed subtests.
		if rest, ok := strings.CutPrefix(s, "--- "); ok {
			if _, after, ok := strings.Cut(rest, ": "); ok {
				name, _, _ := strings.Cut(after, " (")
				c.add(name, line)
			}
		}
		return current
	}
	c.emit(line)
	c.add(current, line)
	return current
}

func (c *capture) emit(line []byte) {
	if c.forward != nil {
		c.forward.Write(line)
	}
}

// add appends a line to the log of the test named testName.
func (c *capture) add(testName string, line []byte) {
	if testName == "" {
		return
	}
	short := observe.ShortName(testName)
	c.mu.Lock()
	defer c.mu.Unlock()
	b := c.logs[short]
	if b == nil {
		b = &bytes.Buffer{}
		c.logs[short] = b
	}
	b.Write(line)
	if b.Len() > 2*maxKeptLog {
		tail := bytes.Clone(b.Bytes()[b.Len()-maxKeptLog:])
		b.Reset()
		b.Write(tail)
		c.cut[short] = true
	}
}

// Log returns the tail of the log of the conformance test shortName,
// once everything printed before the call has been read.
func (c *capture) Log(shortName string) string {
	c.mu.Lock()
	c.seq++
	n := c.seq
	ch := make(chan struct{})
	c.syncs[n] = ch
	c.mu.Unlock()
	// os.Stdout is c.w while the tests run; testing writes through it
	// too, and one *os.File serialises writes, so the marker follows
	// whole lines.
	if _, err := fmt.Fprintf(c.w, "%s%d\n", syncPrefix, n); err == nil {
		timer := time.NewTimer(syncTimeout)
		select {
		case <-ch:
		case <-timer.C:
		}
		timer.Stop()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	b := c.logs[shortName]
	if b == nil {
		return ""
	}
	const mark = "[earlier lines cut]\n"
	if data := b.Bytes(); c.cut[shortName] || len(data) > maxKeptLog {
		if len(data) > maxKeptLog-len(mark) {
			data = data[len(data)-(maxKeptLog-len(mark)):]
		}
		return mark + string(data)
	}
	return b.String()
}

// Close ends the capture once everything written has been read.
func (c *capture) Close() error {
	err := c.w.Close()
	<-c.done
	c.r.Close()
	return err
}
