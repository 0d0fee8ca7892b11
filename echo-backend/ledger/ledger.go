// Package ledger records, per request id, every attempt a proxy made: when it
// arrived, when response headers left, how it ended, the connection and
// stream it came on and the headers it carried. Tests read it back to count
// retries and measure gaps from the backend's own clock.
//
// State is per id and locked per id: attempts of different ids never wait on
// each other. Entries expire after a TTL and the total size is bounded.
package ledger

import (
	"time"
)

// Outcome says how an attempt ended.
type Outcome string

// Outcomes.
const (
	InFlight  Outcome = "in-flight" // not ended yet
	Answered  Outcome = "answered"  // a complete response was sent
	Reset     Outcome = "reset"     // the backend reset the stream or connection (fault)
	Closed    Outcome = "closed"    // the backend closed the connection without a response (fault)
	GoAway    Outcome = "goaway"    // the backend sent GOAWAY (fault)
	Cancelled Outcome = "cancelled" // the client or proxy went away first
	Rejected  Outcome = "rejected"  // the request was invalid (bad fault spec)
)

// Attempt is one attempt of a request id.
type Attempt struct {
	Number      int        `json:"attempt"`
	Arrived     time.Time  `json:"arrived"`
	HeadersSent *time.Time `json:"headersSent,omitempty"`
	Ended       *time.Time `json:"ended,omitempty"`
	Outcome     Outcome    `json:"outcome"`
	CancelledAt *time.Time `json:"cancelledAt,omitempty"`

	Listener    string              `json:"listener"`           // "http", "h2c", "https", "grpc", "grpcs", "tcp"
	Protocol    string              `json:"protocol"`           // "HTTP/1.1", "HTTP/2.0", ...
	Conn        string              `json:"conn"`               // connection id and peer, e.g. "c12 127.0.0.1:40112"
	Stream      uint32              `json:"stream,omitempty"`   // HTTP/2 stream id (0 on HTTP/1.1)
	ConnRequest int                 `json:"connRequest"`        // n-th request seen on that connection
	Method      string              `json:"method"`             // HTTP method or gRPC full method
	Path        string              `json:"path"`               // request URI
	Headers     map[string][]string `json:"headers"`            // as received (incl. grpc-timeout)
	Fault       string              `json:"fault,omitempty"`    // the action applied, in spec syntax
	Status      int                 `json:"status,omitempty"`   // HTTP status sent
	GRPCCode    string              `json:"grpcCode,omitempty"` // gRPC code sent
	BodyBytes   int64               `json:"bodyBytes"`          // request body length read
	BodySHA256  string              `json:"bodySha256,omitempty"`
}

// Entry is the ledger of one request id.
type Entry struct {
	ID       string    `json:"id"`
	Attempts []Attempt `json:"attempts"`
	Dropped  int       `json:"dropped"` // attempts counted but not stored (over MaxAttempts)
}

// Options bound a Ledger.
type Options struct {
	TTL         time.Duration    // an id expires this long after its last attempt began (default 10m)
	MaxIDs      int              // oldest ids are evicted past this (default 10000)
	MaxAttempts int              // attempts stored per id; later ones are counted in Dropped (default 100)
	Now         func() time.Time // clock; time.Now by default
}

// Ledger is safe for concurrent use.
type Ledger struct{}

// New returns an empty ledger.
func New(opts Options) *Ledger { panic("ledger.New: not implemented yet") }

// Begin records the arrival of an attempt of id and returns its handle. The
// attempt number is assigned here, under the id's lock, so concurrent
// attempts of one id get distinct consecutive numbers. a.Number, a.Arrived
// (if zero) and a.Outcome are filled in by Begin. An empty id returns a
// handle whose Number is 1 and whose methods record nothing.
func (l *Ledger) Begin(id string, a Attempt) *Handle { panic("not implemented yet") }

// Get returns a deep copy of id's entry.
func (l *Ledger) Get(id string) (Entry, bool) { panic("not implemented yet") }

// Delete forgets id.
func (l *Ledger) Delete(id string) { panic("not implemented yet") }

// Close stops the background expiry.
func (l *Ledger) Close() { panic("not implemented yet") }

// Handle updates one attempt. Its methods are safe for concurrent use and are
// no-ops on a handle of an empty id.
type Handle struct{}

// Number is the attempt's 1-based number for its id.
func (h *Handle) Number() int { panic("not implemented yet") }

// HeadersSent records the time response headers were sent.
func (h *Handle) HeadersSent(t time.Time) { panic("not implemented yet") }

// Cancelled records that the peer went away at t (outcome Cancelled, ended at t).
func (h *Handle) Cancelled(t time.Time) { panic("not implemented yet") }

// End records how the attempt ended, unless it already ended.
func (h *Handle) End(o Outcome, t time.Time) { panic("not implemented yet") }

// Update runs f on the stored attempt under the id's lock (for Status,
// GRPCCode, Fault, body digest and so on).
func (h *Handle) Update(f func(*Attempt)) { panic("not implemented yet") }
