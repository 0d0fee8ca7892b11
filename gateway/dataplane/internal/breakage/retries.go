package breakage

// Retries broken: each type wraps the data plane's own part.Retries and
// changes one of its answers.

import (
	"io"
	"net/http"
	"sync"

	"github.com/gatewitness/gatewitness/gateway/dataplane/internal/part"
)

// idempotentOnly never retries a request whose method is not idempotent
// (Set.NoNonIdempotentRetries).
type idempotentOnly struct{ part.Retries }

func (r idempotentOnly) Attempts(method string, max int) int {
	if !idempotent(method) {
		return 1
	}
	return r.Retries.Attempts(method, max)
}

// idempotent reports whether a request with this method may be retried
// when non-idempotent retries are broken off (RFC 9110 section 9.2.2).
func idempotent(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace, http.MethodPut, http.MethodDelete:
		return true
	}
	return false
}

// sameEndpoint sends every retry to the first attempt's endpoint
// (Set.RetrySameEndpoint).
type sameEndpoint struct{ part.Retries }

func (sameEndpoint) Endpoint(first uint64, _ int) uint64 { return first }

// attemptErrors asks retries whether an attempt error may be retried
// (Set.RetriesAttemptError).
type attemptErrors struct {
	part.Retries
	retries func(error) bool
}

func (r attemptErrors) RetriesError(err error) bool {
	return r.retries(err) && r.Retries.RetriesError(err)
}

// budgetRelays answers a refused retry with the backend's own answer
// (Set.RetryBudgetRelaysBackendStatus).
type budgetRelays struct{ part.Retries }

func (budgetRelays) BudgetRefused() part.Refusal { return part.RefuseWithAttempt }

// bodyNotHeld streams a request body of known length to the first attempt
// as it arrives, and keeps it for a retry only if it had all arrived when
// the attempt began to send it (Set.BodyNotHeld). Other bodies are held as
// the data plane's own part holds them.
type bodyNotHeld struct{ part.Retries }

func (r bodyNotHeld) Hold(out *http.Request, limit int64) ([]byte, part.Held, bool) {
	if !replayable(out, limit) {
		return r.Retries.Hold(out, limit)
	}
	return nil, streamArriving(out), true
}

// replayable reports whether out has a body of a known length of at most
// limit bytes: one the reference data plane keeps for a retry.
func replayable(out *http.Request, limit int64) bool {
	return out.Body != nil && out.Body != http.NoBody && out.ContentLength > 0 && out.ContentLength <= limit
}

// arrivingBody is a request body read from the client in the background as
// it arrives, and streamed to the first attempt from what has arrived so
// far. It remembers whether the whole body had arrived when the attempt
// began to send it: a data plane that does not buffer requests has only
// then what it could resend.
type arrivingBody struct {
	mu      sync.Mutex
	grew    *sync.Cond
	buf     []byte
	n       int   // bytes of buf read from the client so far
	err     error // the client's read error, or io.EOF once n == len(buf)
	pos     int   // bytes of buf streamed to the attempt
	sending bool  // the attempt has begun to read the body
	whole   bool  // the whole body had arrived when it began
}

// streamArriving replaces out's body (of a known length, see replayable)
// with one streamed as it arrives, and returns the arrivingBody that
// tells, after the first attempt, whether it could be resent.
func streamArriving(out *http.Request) *arrivingBody {
	a := &arrivingBody{buf: make([]byte, out.ContentLength)}
	a.grew = sync.NewCond(&a.mu)
	src := out.Body
	go func() {
		for {
			a.mu.Lock()
			n := a.n
			a.mu.Unlock()
			if n == len(a.buf) {
				a.finish(0, io.EOF)
				return
			}
			// Only this goroutine writes buf[n:]; readers stop at a.n.
			m, err := src.Read(a.buf[n:])
			if err == io.EOF && n+m < len(a.buf) {
				err = io.ErrUnexpectedEOF
			}
			if err != nil && err != io.EOF {
				a.finish(m, err)
				return
			}
			a.finish(m, nil)
		}
	}()
	out.Body = a
	return a
}

// finish records m more bytes read from the client, and err if not nil.
func (a *arrivingBody) finish(m int, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.n += m
	if err != nil && a.err == nil {
		a.err = err
	}
	a.grew.Broadcast()
}

// Read streams the body to the attempt as it arrives.
func (a *arrivingBody) Read(p []byte) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.sending {
		a.sending, a.whole = true, a.n == len(a.buf)
	}
	for a.pos == a.n && a.err == nil {
		a.grew.Wait()
	}
	if a.pos == a.n {
		return 0, a.err
	}
	m := copy(p, a.buf[a.pos:a.n])
	a.pos += m
	return m, nil
}

// Close leaves the client's body to the server, which closes it when the
// exchange ends.
func (a *arrivingBody) Close() error { return nil }

// Replay returns the body to resend, and true, if the whole body had
// arrived when the first attempt began to send it (or, if it never began,
// has arrived by now); otherwise false: the body is not kept. The first
// attempt had no body of its own: it streamed out's.
func (a *arrivingBody) Replay([]byte) ([]byte, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	whole := a.whole
	if !a.sending {
		whole = a.n == len(a.buf)
	}
	if !whole {
		return nil, false
	}
	return a.buf, true
}
