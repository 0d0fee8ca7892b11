// Package ledger records, per request id, every attempt a proxy made: when it
// arrived, when response headers left, how it ended, the connection and
// stream it came on and the headers it carried. Tests read it back to count
// retries and measure gaps from the backend's own clock.
//
// State is per id and locked per id: attempts of different ids never wait on
// each other. Entries expire after a TTL and the total size is bounded.
//
// The ids are spread over up to 64 shards by a hash of the id. A shard's mutex
// is held only to find, insert or remove an id; each id has its own mutex for
// its attempts. MaxIDs is divided between the shards, and a shard that is full
// evicts its own oldest id (by last Begin) to make room for a new one. So the
// ledger never holds more than MaxIDs ids, eviction costs O(1), and when ids
// hash unevenly an id may be evicted a little before MaxIDs ids are held.
//
// Bytes are bounded as well as counts, since what a request carries is the
// client's choice: an attempt keeps at most MaxHeaderBytes of headers and
// MaxPathBytes of request URI (and of method), cutting the rest and saying
// so in Attempt.Truncated, and the ledger as a whole keeps about MaxBytes:
// a shard over its share evicts its oldest ids, as a full shard does.
//
// A ledger holds up to MaxIDs ids for as long as the TTL, so what each one
// costs the garbage collector counts: a new id is one allocation (its entry
// with its first attempt inside), and the headers of an attempt are kept
// packed in one string, which the collector does not scan, rather than as
// a map of slices of strings. Get unpacks them into a fresh map.
package ledger

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gatewitness/gatewitness/contract/echowire"
)

// The ledger's JSON types are the echo-backend's wire contract, in
// contract/echowire, so that clients decode them without importing the
// ledger. These aliases keep the server's code in the ledger's own terms.
type (
	// Outcome says how an attempt ended.
	Outcome = echowire.Outcome
	// Attempt is one attempt of a request id.
	Attempt = echowire.Attempt
	// Entry is the ledger of one request id.
	Entry = echowire.Entry
)

// Outcomes.
const (
	InFlight  = echowire.InFlight  // not ended yet
	Answered  = echowire.Answered  // a complete response was sent
	Reset     = echowire.Reset     // the backend reset the stream or connection (fault)
	Closed    = echowire.Closed    // the backend closed the connection without a response (fault)
	GoAway    = echowire.GoAway    // the backend sent GOAWAY (fault)
	Cancelled = echowire.Cancelled // the client or proxy went away first
	Rejected  = echowire.Rejected  // the request was invalid (bad fault spec)
)

// Options bound a Ledger. A zero or negative field takes its default.
type Options struct {
	TTL         time.Duration // an id expires this long after its last attempt began (default 10m)
	MaxIDs      int           // oldest ids are evicted past this (default 10000)
	MaxAttempts int           // attempts stored per id; later ones are counted in Dropped (default 100)
	// MaxHeaderBytes bounds the headers kept per attempt (names and values);
	// past it the rest is cut (default 32 KiB).
	MaxHeaderBytes int
	// MaxPathBytes bounds the request URI, and the method, kept per attempt
	// (default 8 KiB).
	MaxPathBytes int
	// MaxBytes bounds what the whole ledger keeps, counted as the bytes of
	// the attempts' headers, paths and methods plus a fixed cost per
	// attempt; past it the oldest ids are evicted (default 64 MiB).
	MaxBytes int64
	Now      func() time.Time // clock; time.Now by default
}

// Defaults for Options.
const (
	DefaultTTL            = 10 * time.Minute
	DefaultMaxIDs         = 10000
	DefaultMaxAttempts    = 100
	DefaultMaxHeaderBytes = 32 << 10
	DefaultMaxPathBytes   = 8 << 10
	DefaultMaxBytes       = 64 << 20
)

// attemptOverhead is what an attempt is counted for besides its headers,
// path and method: the handle, the times and the short strings.
const attemptOverhead = 512

// maxShards is the number of shards of a ledger whose MaxIDs is at least that.
const maxShards = 64

// Ledger is safe for concurrent use.
type Ledger struct {
	ttl            time.Duration
	maxAttempts    int
	maxHeaderBytes int
	maxPathBytes   int
	now            func() time.Time
	shards         []shard

	closeOnce sync.Once
	stop      chan struct{}
	done      chan struct{}
}

// shard holds the ids whose hash falls on it, in a map for lookup and in a
// list ordered by last Begin (oldest first) for eviction and expiry.
type shard struct {
	mu         sync.Mutex
	ids        map[string]*entry
	head, tail *entry // oldest, newest
	capacity   int
	bytes      int64    // counted bytes of the ids held
	budget     int64    // this shard's share of MaxBytes
	_          [64]byte // keep neighbouring shards' mutexes off one cache line
}

// entry is one id. prev, next and last belong to the shard's mutex; the rest
// to the entry's own.
type entry struct {
	id         string
	prev, next *entry
	last       time.Time // last Begin
	bytes      int64     // counted bytes of its attempts, guarded by the shard's mutex

	mu       sync.Mutex
	number   int       // last attempt number given out
	attempts []*Handle // stored attempts, in number order
	dropped  int
	inline   [2]*Handle // first backing array of attempts, saving an allocation per id

	// first is the handle of the entry's first attempt, allocated with
	// it: most ids see one attempt.
	first Handle
}

// New returns an empty ledger and starts its background expiry, which Close
// stops.
func New(opts Options) *Ledger {
	return newLedger(opts, sweepPeriod(opts.TTL), nil)
}

// sweepPeriod is TTL/4 bounded to [1s, 1m].
func sweepPeriod(ttl time.Duration) time.Duration {
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	return min(max(ttl/4, time.Second), time.Minute)
}

// newLedger is New with the sweep period chosen and a hook, for tests, that
// the sweeper calls after each sweep.
func newLedger(opts Options, period time.Duration, onSweep func()) *Ledger {
	if opts.TTL <= 0 {
		opts.TTL = DefaultTTL
	}
	if opts.MaxIDs <= 0 {
		opts.MaxIDs = DefaultMaxIDs
	}
	if opts.MaxAttempts <= 0 {
		opts.MaxAttempts = DefaultMaxAttempts
	}
	if opts.MaxHeaderBytes <= 0 {
		opts.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if opts.MaxPathBytes <= 0 {
		opts.MaxPathBytes = DefaultMaxPathBytes
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	n := min(opts.MaxIDs, maxShards)
	l := &Ledger{
		ttl:            opts.TTL,
		maxAttempts:    opts.MaxAttempts,
		maxHeaderBytes: opts.MaxHeaderBytes,
		maxPathBytes:   opts.MaxPathBytes,
		now:            opts.Now,
		shards:         make([]shard, n),
		stop:           make(chan struct{}),
		done:           make(chan struct{}),
	}
	for i := range l.shards {
		// Split MaxIDs exactly: the first MaxIDs%n shards take one more.
		c := opts.MaxIDs / n
		if i < opts.MaxIDs%n {
			c++
		}
		l.shards[i] = shard{ids: make(map[string]*entry), capacity: c, budget: max(opts.MaxBytes/int64(n), 1)}
	}
	go l.sweepLoop(period, onSweep)
	return l
}

// shardOf hashes id with 32-bit FNV-1a.
func (l *Ledger) shardOf(id string) *shard {
	h := uint32(2166136261)
	for i := 0; i < len(id); i++ {
		h ^= uint32(id[i])
		h *= 16777619
	}
	return &l.shards[h%uint32(len(l.shards))]
}

func (l *Ledger) expired(e *entry, now time.Time) bool {
	return !now.Before(e.last.Add(l.ttl))
}

// noID is the handle of every attempt without an id.
var noID = &Handle{number: 1}

// Begin records the arrival of an attempt of id and returns its handle. The
// attempt number is assigned here, under the id's lock, so concurrent
// attempts of one id get distinct consecutive numbers. a.Number, a.Arrived
// (if zero) and a.Outcome are filled in by Begin. An empty id returns a
// handle whose Number is 1 and whose methods record nothing.
//
// Begin copies a.Headers: the caller may reuse the map.
func (l *Ledger) Begin(id string, a Attempt) *Handle {
	if id == "" {
		return noID
	}
	headers, hasHeaders := l.bound(&a)
	size := int64(attemptOverhead + len(headers) + len(a.Path) + len(a.Method) + len(id))

	sh := l.shardOf(id)
	sh.mu.Lock()
	now := l.now()
	e := sh.ids[id]
	if e != nil && l.expired(e, now) {
		sh.remove(e)
		e = nil
	}
	fresh := e == nil
	if fresh {
		if len(sh.ids) >= sh.capacity {
			sh.remove(sh.head)
		}
		e = &entry{id: id}
		e.attempts = e.inline[:0]
		sh.ids[id] = e
	} else {
		sh.unlink(e)
	}
	e.last = now
	sh.pushBack(e)
	e.bytes += size
	sh.bytes += size
	// Over its share of MaxBytes, the shard evicts its oldest ids, never
	// the one being recorded.
	for sh.bytes > sh.budget && sh.head != e {
		sh.remove(sh.head)
	}
	sh.mu.Unlock()

	if a.Arrived.IsZero() {
		a.Arrived = now
	}
	a.Outcome = InFlight
	var h *Handle
	if fresh {
		// Only the Begin that made e uses e.first; others see it once
		// it is in e.attempts, under e.mu, below.
		h = &e.first
		*h = Handle{l: l, e: e, a: a, headers: headers, hasHeaders: hasHeaders}
	} else {
		h = &Handle{l: l, e: e, a: a, headers: headers, hasHeaders: hasHeaders}
	}

	e.mu.Lock()
	e.number++
	h.number = e.number
	h.a.Number = e.number
	if len(e.attempts) < l.maxAttempts {
		e.attempts = append(e.attempts, h)
	} else {
		e.dropped++
	}
	e.mu.Unlock()
	return h
}

// Get returns a deep copy of id's entry: the caller may keep and marshal it
// while the attempts go on.
func (l *Ledger) Get(id string) (Entry, bool) {
	if id == "" {
		return Entry{}, false
	}
	sh := l.shardOf(id)
	sh.mu.Lock()
	e := sh.ids[id]
	if e != nil && l.expired(e, l.now()) {
		sh.remove(e)
		e = nil
	}
	sh.mu.Unlock()
	if e == nil {
		return Entry{}, false
	}

	e.mu.Lock()
	defer e.mu.Unlock()
	out := Entry{ID: e.id, Attempts: make([]Attempt, len(e.attempts)), Dropped: e.dropped}
	for i, h := range e.attempts {
		out.Attempts[i] = cloneAttempt(h.a)
		if h.hasHeaders {
			out.Attempts[i].Headers = unpackHeaders(h.headers)
		}
	}
	return out, true
}

// Delete forgets id. Handles of its attempts stay valid but record nothing
// that Get can see.
func (l *Ledger) Delete(id string) {
	sh := l.shardOf(id)
	sh.mu.Lock()
	if e := sh.ids[id]; e != nil {
		sh.remove(e)
	}
	sh.mu.Unlock()
}

// Len returns the number of ids held, counting expired ids that were not
// removed yet.
func (l *Ledger) Len() int {
	n := 0
	for i := range l.shards {
		sh := &l.shards[i]
		sh.mu.Lock()
		n += len(sh.ids)
		sh.mu.Unlock()
	}
	return n
}

// Close stops the background expiry. It is safe to call more than once; the
// ledger stays usable, expiring ids only when they are accessed.
func (l *Ledger) Close() {
	l.closeOnce.Do(func() { close(l.stop) })
	<-l.done
}

func (l *Ledger) sweepLoop(period time.Duration, onSweep func()) {
	defer close(l.done)
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
			l.sweep()
			if onSweep != nil {
				onSweep()
			}
		}
	}
}

// sweep removes the expired ids of every shard. A shard's list is ordered by
// last Begin, so it stops at the first id that is still live.
func (l *Ledger) sweep() {
	for i := range l.shards {
		sh := &l.shards[i]
		sh.mu.Lock()
		now := l.now()
		for sh.head != nil && l.expired(sh.head, now) {
			sh.remove(sh.head)
		}
		sh.mu.Unlock()
	}
}

func (sh *shard) remove(e *entry) {
	delete(sh.ids, e.id)
	sh.unlink(e)
	sh.bytes -= e.bytes
}

func (sh *shard) unlink(e *entry) {
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		sh.head = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else {
		sh.tail = e.prev
	}
	e.prev, e.next = nil, nil
}

func (sh *shard) pushBack(e *entry) {
	e.prev = sh.tail
	if sh.tail != nil {
		sh.tail.next = e
	} else {
		sh.head = e
	}
	sh.tail = e
}

// Handle updates one attempt. Its methods are safe for concurrent use and are
// no-ops on a handle of an empty id. A handle stays valid after its id was
// evicted, expired or deleted; its updates are then simply not visible.
//
// A time argument that is zero means now, by the ledger's clock.
type Handle struct {
	l      *Ledger
	e      *entry // nil for an empty id
	number int

	// Guarded by e.mu. a's time pointers point at the fields below, so that
	// recording a time allocates nothing. a.Headers is nil: the headers
	// are in headers, packed (set by Begin, never changed).
	a                             Attempt
	headersSent, ended, cancelled time.Time
	headers                       string
	hasHeaders                    bool // Begin got a non-nil map
}

// Number is the attempt's 1-based number for its id.
func (h *Handle) Number() int { return h.number }

// HeadersSent records the time response headers were sent. Only the first
// call counts.
func (h *Handle) HeadersSent(t time.Time) {
	if h.e == nil {
		return
	}
	h.e.mu.Lock()
	if h.a.HeadersSent == nil {
		h.headersSent = h.orNow(t)
		h.a.HeadersSent = &h.headersSent
	}
	h.e.mu.Unlock()
}

// Cancelled records that the peer went away at t (outcome Cancelled, ended at
// t), unless the attempt already ended.
func (h *Handle) Cancelled(t time.Time) {
	if h.e == nil {
		return
	}
	h.e.mu.Lock()
	if h.a.Ended == nil {
		h.ended = h.orNow(t)
		h.cancelled = h.ended
		h.a.Ended = &h.ended
		h.a.CancelledAt = &h.cancelled
		h.a.Outcome = Cancelled
	}
	h.e.mu.Unlock()
}

// End records how the attempt ended, unless it already ended.
func (h *Handle) End(o Outcome, t time.Time) {
	if h.e == nil {
		return
	}
	h.e.mu.Lock()
	if h.a.Ended == nil {
		h.ended = h.orNow(t)
		h.a.Ended = &h.ended
		h.a.Outcome = o
	}
	h.e.mu.Unlock()
}

// Update runs f on the stored attempt under the id's lock (for Status,
// GRPCCode, Fault, body digest and so on). f must not keep the pointer or
// call back into the ledger, and should leave Number, the times and Outcome
// to the other methods.
func (h *Handle) Update(f func(*Attempt)) {
	if h.e == nil {
		return
	}
	h.e.mu.Lock()
	defer h.e.mu.Unlock()
	f(&h.a)
}

// orNow returns t, or the ledger clock's now if t is zero.
func (h *Handle) orNow(t time.Time) time.Time {
	if t.IsZero() {
		return h.l.now()
	}
	return t
}

// cloneAttempt copies a with its own times. Its Headers are nil in a handle.
func cloneAttempt(a Attempt) Attempt {
	c := a
	c.HeadersSent = cloneTime(a.HeadersSent)
	c.Ended = cloneTime(a.Ended)
	c.CancelledAt = cloneTime(a.CancelledAt)
	c.FirstMessage = cloneTime(a.FirstMessage)
	c.Truncated = slices.Clone(a.Truncated)
	return c
}

// bound cuts a's path and method to MaxPathBytes and packs its headers
// within MaxHeaderBytes, noting in a.Truncated what was cut. It returns the
// packed headers and whether a had a header map, and leaves a.Headers nil.
func (l *Ledger) bound(a *Attempt) (packed string, hasHeaders bool) {
	a.Path = l.cut(a, "path", a.Path, l.maxPathBytes)
	a.Method = l.cut(a, "method", a.Method, l.maxPathBytes)
	hasHeaders = a.Headers != nil
	var dropped int
	packed, dropped = packHeaders(a.Headers, l.maxHeaderBytes)
	if dropped > 0 {
		a.Truncated = append(a.Truncated, fmt.Sprintf("headers: %d bytes not kept", dropped))
	}
	a.Headers = nil // kept packed in the handle
	return packed, hasHeaders
}

// cut returns s cut to max bytes, noting the cut in a.Truncated.
func (l *Ledger) cut(a *Attempt, field, s string, max int) string {
	if len(s) <= max {
		return s
	}
	a.Truncated = append(a.Truncated, fmt.Sprintf("%s: %d bytes not kept", field, len(s)-max))
	return strings.Clone(s[:max])
}

func cloneTime(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	c := *t
	return &c
}

// packHeaders packs h into one string, as uvarints and bytes: the number
// of names, the number of values, then for each name its length and bytes,
// its number of values plus one (0 for a nil slice) and each value's
// length and bytes. A nil or empty map packs to "".
//
// Names and values are kept up to limit bytes in all (the packing's own
// length prefixes aside); dropped says how many were not. Past the limit,
// headers are kept in name order, the value that crosses it is cut, and
// the headers after it are left out.
func packHeaders(h map[string][]string, limit int) (packed string, dropped int) {
	if len(h) == 0 {
		return "", 0
	}
	total := 0
	for k, vv := range h {
		total += len(k)
		for _, v := range vv {
			total += len(v)
		}
	}
	if total > limit {
		h, dropped = boundHeaders(h, limit)
	}
	values, size := 0, 0
	for k, vv := range h {
		values += len(vv)
		size += uvarintLen(len(k)) + len(k) + uvarintLen(len(vv)+1)
		for _, v := range vv {
			size += uvarintLen(len(v)) + len(v)
		}
	}
	size += uvarintLen(len(h)) + uvarintLen(values)
	var b strings.Builder
	b.Grow(size)
	var buf [binary.MaxVarintLen64]byte
	put := func(n int) { b.Write(binary.AppendUvarint(buf[:0], uint64(n))) }
	put(len(h))
	put(values)
	for k, vv := range h {
		put(len(k))
		b.WriteString(k)
		if vv == nil {
			put(0)
			continue
		}
		put(len(vv) + 1)
		for _, v := range vv {
			put(len(v))
			b.WriteString(v)
		}
	}
	return b.String(), dropped
}

// boundHeaders returns the headers of h that fit in limit bytes of names
// and values, in name order, with the value that crosses the limit cut,
// and the number of bytes left out.
func boundHeaders(h map[string][]string, limit int) (map[string][]string, int) {
	names := make([]string, 0, len(h))
	for k := range h {
		names = append(names, k)
	}
	slices.Sort(names)
	out := make(map[string][]string, len(h))
	room, dropped := limit, 0
	for _, k := range names {
		vv := h[k]
		if len(k) > room {
			dropped += len(k)
			for _, v := range vv {
				dropped += len(v)
			}
			room = 0
			continue
		}
		room -= len(k)
		var kept []string
		if vv != nil {
			kept = make([]string, 0, len(vv))
		}
		for _, v := range vv {
			if len(v) > room {
				dropped += len(v) - room
				if room > 0 {
					kept = append(kept, v[:room])
				}
				room = 0
				continue
			}
			room -= len(v)
			kept = append(kept, v)
		}
		out[k] = kept
	}
	return out, dropped
}

// unpackHeaders returns a new map of what packHeaders packed; the strings
// share p's bytes, the value slices one backing array. "" unpacks to an
// empty map.
func unpackHeaders(p string) map[string][]string {
	if p == "" {
		return map[string][]string{}
	}
	names, p := uvarint(p)
	values, p := uvarint(p)
	h := make(map[string][]string, names)
	all := make([]string, values)
	for range names {
		var n int
		n, p = uvarint(p)
		k := p[:n]
		p = p[n:]
		n, p = uvarint(p)
		if n == 0 {
			h[k] = nil
			continue
		}
		vv := all[: n-1 : n-1]
		all = all[n-1:]
		for i := range vv {
			n, p = uvarint(p)
			vv[i], p = p[:n], p[n:]
		}
		h[k] = vv
	}
	return h
}

// uvarintLen is the length of n as a uvarint.
func uvarintLen(n int) int {
	l := 1
	for ; n >= 0x80; n >>= 7 {
		l++
	}
	return l
}

// uvarint decodes a uvarint from the front of p, which packHeaders wrote,
// and returns it with the rest of p.
func uvarint(p string) (int, string) {
	n, shift := 0, 0
	for i := 0; i < len(p); i++ {
		c := p[i]
		n |= int(c&0x7f) << shift
		if c < 0x80 {
			return n, p[i+1:]
		}
		shift += 7
	}
	panic("ledger: truncated packed headers") // packHeaders wrote p: unreachable
}
