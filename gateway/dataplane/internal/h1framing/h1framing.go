// Package h1framing follows the requests on an HTTP/1.1 connection from
// its raw bytes, as they are read, and says of each request head whether
// its framing was in doubt: Content-Length together with
// Transfer-Encoding, a Transfer-Encoding given twice, or any header line
// folded onto the next (obs-fold). Go's server reads all of these as
// chunked and hides from the handler which it saw; RFC 9112 section 6.1
// asks a server that processes such a request to close the connection
// after responding, and section 5.2 lets it reject an obs-fold.
//
// The Follower parses heads and skips bodies (by Content-Length or chunk
// by chunk) in the order the bytes come. Whatever it does not read as Go
// does for an unambiguous message (a malformed chunk, a bare LF, a
// Transfer-Encoding other than "chunked") leaves it lost: from then on
// every request is reported in doubt, the safe answer, until the
// connection closes (which Go's server does after most of these anyway).
package h1framing

import (
	"bytes"
	"hash/maphash"
	"strconv"
	"sync"
)

// MaxHead bounds the bytes of one request head the Follower keeps while
// it waits for the head's end; a longer head leaves it lost (Go's server
// answers 431 beyond its own MaxHeaderBytes).
const MaxHead = 1 << 20

// Head is what the Follower saw of one request head.
type Head struct {
	// line identifies the request line (method and target), hashed so
	// that following a request allocates nothing for it.
	line uint64
	// Doubtful is set when the head's framing was in doubt, or the
	// Follower lost track of the connection's framing before it.
	Doubtful bool
}

// seed keys the request-line hashes, unpredictably.
var seed = maphash.MakeSeed()

// lineOf hashes a request line's method and target.
func lineOf(method, target []byte) uint64 {
	var h maphash.Hash
	h.SetSeed(seed)
	_, _ = h.Write(method)
	_ = h.WriteByte(' ')
	_, _ = h.Write(target)
	return h.Sum64()
}

func lineOfStrings(method, target string) uint64 {
	var h maphash.Hash
	h.SetSeed(seed)
	_, _ = h.WriteString(method)
	_ = h.WriteByte(' ')
	_, _ = h.WriteString(target)
	return h.Sum64()
}

// optionsStar is the line of "OPTIONS *", which Go's server answers
// itself.
var optionsStar = lineOfStrings("OPTIONS", "*")

// Follower follows one connection's request stream. Feed and Next may be
// called from different goroutines.
type Follower struct {
	mu    sync.Mutex
	state state
	head  []byte // the current head, while it is incomplete
	left  int64  // bytes left in the current body or chunk
	line  []byte // the current chunk-size or trailer line, while incomplete
	heads []Head // parsed, not yet asked for: heads[asked:]
	asked int
	// outOfStep is set once Next was asked for a request other than the
	// head it had: every later request is doubtful.
	outOfStep bool
}

type state int

const (
	inHead      state = iota
	inBody            // left bytes of a Content-Length body
	inChunkSize       // a chunk-size line
	inChunkData       // left bytes of chunk data
	inChunkCRLF       // the CRLF after chunk data; left counts what is missing of it
	inTrailer         // trailer lines after the last chunk
	lostTrack         // nothing more is parsed
)

// Feed gives the Follower bytes read from the connection, in order.
func (f *Follower) Feed(p []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for len(p) > 0 && f.state != lostTrack {
		p = f.step(p)
	}
}

// Next returns the oldest head not yet asked for, matched against the
// request the server parsed (its method and request target): a head that
// does not match, or none at all, is reported doubtful. Heads Go's server
// answers without a handler ("OPTIONS *") are passed over.
func (f *Follower) Next(method, target string) Head {
	line := lineOfStrings(method, target)
	f.mu.Lock()
	defer f.mu.Unlock()
	for f.asked < len(f.heads) && !f.outOfStep {
		h := f.heads[f.asked]
		f.asked++
		if f.asked == len(f.heads) {
			f.heads, f.asked = f.heads[:0], 0
		}
		if h.line == optionsStar && line != optionsStar {
			continue
		}
		if h.line != line {
			f.outOfStep = true
			f.loseTrack()
			break
		}
		return h
	}
	return Head{line: line, Doubtful: true}
}

// loseTrack stops the parsing: the heads parsed so far stay, every
// request after them is doubtful.
func (f *Follower) loseTrack() {
	f.state = lostTrack
	f.head, f.line = nil, nil
}

// step consumes a prefix of p and returns the rest.
func (f *Follower) step(p []byte) []byte {
	switch f.state {
	case inHead:
		return f.readHead(p)
	case inBody, inChunkData:
		n := int64(len(p))
		if n > f.left {
			n = f.left
		}
		f.left -= n
		if f.left == 0 {
			if f.state == inBody {
				f.state = inHead
			} else {
				f.state, f.left = inChunkCRLF, 2
			}
		}
		return p[n:]
	case inChunkCRLF:
		want := "\r\n"[2-f.left:]
		n := min(len(p), len(want))
		if string(p[:n]) != want[:n] {
			f.loseTrack()
			return nil
		}
		f.left -= int64(n)
		if f.left == 0 {
			f.state = inChunkSize
		}
		return p[n:]
	case inChunkSize, inTrailer:
		line, rest, ok := f.readLine(p)
		if !ok {
			return rest
		}
		if f.state == inTrailer {
			if len(line) == 0 {
				f.state = inHead
			}
			return rest
		}
		size, ok := chunkSize(line)
		switch {
		case !ok:
			f.loseTrack()
			return nil
		case size == 0:
			f.state = inTrailer
		default:
			f.state, f.left = inChunkData, size
		}
		return rest
	}
	return nil
}

// readLine gathers a CRLF-ended line across Feeds; ok once it is
// complete, the line then without its CRLF. A bare LF loses track.
func (f *Follower) readLine(p []byte) (line, rest []byte, ok bool) {
	i := bytes.IndexByte(p, '\n')
	if i < 0 {
		if len(f.line)+len(p) > MaxHead {
			f.loseTrack()
			return nil, nil, false
		}
		f.line = append(f.line, p...)
		return nil, nil, false
	}
	line = append(f.line, p[:i+1]...)
	f.line = f.line[:0]
	if len(line) < 2 || line[len(line)-2] != '\r' {
		f.loseTrack()
		return nil, nil, false
	}
	return line[:len(line)-2], p[i+1:], true
}

// chunkSize parses a chunk-size line (hex digits, then optional
// extensions after ';').
func chunkSize(line []byte) (int64, bool) {
	if i := bytes.IndexByte(line, ';'); i >= 0 {
		line = line[:i]
	}
	line = bytes.TrimRight(line, " \t")
	if len(line) == 0 || len(line) > 15 {
		return 0, false
	}
	n, err := strconv.ParseInt(string(line), 16, 64)
	return n, err == nil && n >= 0
}

// readHead gathers a head until its empty line, then parses it.
func (f *Follower) readHead(p []byte) []byte {
	if len(f.head) == 0 {
		// Go's server skips empty lines before a request line (RFC
		// 9112 section 2.2).
		for len(p) > 0 && (p[0] == '\r' || p[0] == '\n') {
			p = p[1:]
		}
		if len(p) == 0 {
			return nil
		}
	}
	start := len(f.head)
	f.head = append(f.head, p...)
	// The end may straddle two Feeds: look from a few bytes back.
	from := max(0, start-3)
	i := bytes.Index(f.head[from:], []byte("\r\n\r\n"))
	if i < 0 {
		if bytes.Contains(f.head[from:], []byte("\n\n")) || len(f.head) > MaxHead {
			f.loseTrack() // a bare LF, or too long
		}
		return nil
	}
	end := from + i + 4
	rest := p[end-start:]
	f.parseHead(f.head[:end-2])
	f.head = f.head[:0]
	return rest
}

// parseHead reads the request line and the fields of a complete head
// (each line CRLF-ended, the final empty line left out) and sets the
// state for its body.
func (f *Follower) parseHead(head []byte) {
	crlf := []byte("\r\n")
	reqLine, rest, _ := bytes.Cut(head[:len(head)-2], crlf)
	method, after, ok1 := bytes.Cut(reqLine, []byte(" "))
	target, version, ok2 := bytes.Cut(after, []byte(" "))
	if !ok1 || !ok2 || bytes.IndexByte(version, ' ') >= 0 {
		f.loseTrack()
		return
	}
	h := Head{line: lineOf(method, target)}
	var teAt, clAt [2][]byte // on the stack for the usual heads
	te, cl := teAt[:0], clAt[:0]
	for len(rest) > 0 {
		var l []byte
		l, rest, _ = bytes.Cut(rest, crlf)
		if len(l) > 0 && (l[0] == ' ' || l[0] == '\t') {
			h.Doubtful = true // obs-fold
			continue
		}
		name, value, ok := bytes.Cut(l, []byte(":"))
		if !ok {
			f.loseTrack()
			return
		}
		value = bytes.Trim(value, " \t")
		switch {
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			te = append(te, value)
		case bytes.EqualFold(name, []byte("Content-Length")):
			cl = append(cl, value)
		}
	}
	if len(te) > 0 && len(cl) > 0 || len(te) > 1 {
		h.Doubtful = true
	}
	// last keeps h, the last head followed.
	last := func(h Head) {
		f.heads = append(f.heads, h)
		f.loseTrack()
	}
	switch {
	case h.Doubtful:
		// The connection closes after this request.
		last(h)
	case len(te) == 1:
		if !bytes.EqualFold(te[0], []byte("chunked")) {
			h.Doubtful = true
			last(h) // Go answers 501 and closes
			return
		}
		f.heads = append(f.heads, h)
		f.state = inChunkSize
	case len(cl) > 0:
		n, err := strconv.ParseInt(string(cl[0]), 10, 64)
		for _, v := range cl[1:] {
			if !bytes.Equal(v, cl[0]) {
				err = strconv.ErrSyntax // Go answers 400 and closes
			}
		}
		if err != nil || n < 0 {
			h.Doubtful = true
			last(h)
			return
		}
		f.heads = append(f.heads, h)
		if n > 0 {
			f.state, f.left = inBody, n
		}
	default:
		f.heads = append(f.heads, h)
	}
}
