// Package fault parses and evaluates the echo-backend's fault vocabulary: the
// `;`-separated directives carried by the X-Gatecheck-Fault header, the
// gatecheck-fault query parameter or the x-gatecheck-fault gRPC metadata key.
//
// A Spec says what each attempt of one request id does. Attempt numbers come
// from the ledger, so a spec such as "fail=2;status=503" answers 503 twice and
// then answers normally.
package fault

import (
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
)

// Names of the carriers of a fault spec and of the request id.
const (
	HeaderName   = "X-Gatecheck-Fault" // HTTP request header
	QueryName    = "gatecheck-fault"   // HTTP query parameter
	MetadataName = "x-gatecheck-fault" // gRPC metadata key

	IDHeaderName   = "X-Gatecheck-Id" // HTTP request header
	IDQueryName    = "gatecheck-id"   // HTTP query parameter
	IDMetadataName = "x-gatecheck-id" // gRPC metadata key
)

// ResetPoint says where in an exchange the backend aborts it.
type ResetPoint int

// Reset points, in the order an exchange reaches them.
const (
	ResetNone          ResetPoint = iota
	ResetBeforeHeaders            // abort before any response byte
	ResetAfterHeaders             // abort after the response headers were sent
	ResetMidBody                  // abort after part of the body was sent
)

// String returns the directive value naming p ("before-headers", ...).
func (p ResetPoint) String() string {
	switch p {
	case ResetBeforeHeaders:
		return "before-headers"
	case ResetAfterHeaders:
		return "after-headers"
	case ResetMidBody:
		return "mid-body"
	}
	return "none"
}

// Trailer is one extra trailer (HTTP trailer or gRPC trailing metadata).
type Trailer struct {
	Name, Value string
}

// Action is what the backend does for one attempt. The zero Action answers
// normally: no delay, status 200 / gRPC OK, the echo body in one write.
type Action struct {
	Delay     time.Duration // before response headers
	BodyDelay time.Duration // after headers, before the first body byte
	Chunks    int           // HTTP: body split into this many writes (0: one write)
	Messages  int           // gRPC server streams: messages to send (0: the method's default)
	Interval  time.Duration // between chunks or stream messages

	Status int // HTTP status; 0 means 200

	HasGRPCStatus bool       // GRPCStatus was given
	GRPCStatus    codes.Code // gRPC status code to end the call with
	GRPCMessage   string     // gRPC status message
	Trailers      []Trailer  // extra trailers

	Reset     ResetPoint // where to abort; ResetNone for no reset
	ResetCode uint32     // HTTP/2 RST_STREAM error code (default INTERNAL_ERROR, 0x2)
	GoAway    bool       // HTTP/2: send GOAWAY excluding this stream, then close the connection
	Close     bool       // close the connection gracefully without a response
}

// Faulted reports whether a is anything other than a normal answer.
func (a Action) Faulted() bool {
	return a.Delay != 0 || a.BodyDelay != 0 || a.Chunks != 0 || a.Messages != 0 ||
		a.Interval != 0 || a.Status != 0 || a.HasGRPCStatus || len(a.Trailers) != 0 ||
		a.Reset != ResetNone || a.GoAway || a.Close
}

// Spec is a parsed fault specification.
type Spec struct {
	Raw    string   // the text it was parsed from
	Base   Action   // directives outside script=
	Fail   int      // >0: Base applies only to the first Fail attempts
	Script []Action // attempt i (1-based) gets Script[i-1] over Base; later attempts answer normally
}

// Limits bound what a spec may ask for.
type Limits struct {
	MaxDelay    time.Duration // cap on any single delay and on the total time an attempt may take
	MaxChunks   int
	MaxMessages int
	MaxAttempts int // cap on fail= and on the length of script=
}

// DefaultLimits are the limits used when the operator sets none.
var DefaultLimits = Limits{MaxDelay: 5 * time.Minute, MaxChunks: 10000, MaxMessages: 10000, MaxAttempts: 100}

// Error is a rejected directive. Its message names the directive and the
// accepted form; the HTTP server answers 400 with it and gRPC INVALID_ARGUMENT.
type Error struct {
	Directive string // e.g. "delay"
	Value     string // the offending value as given
	Reason    string // what is wrong
	Accepted  string // the accepted form
}

func (e *Error) Error() string {
	return fmt.Sprintf("fault directive %q (value %q): %s; accepted: %s", e.Directive, e.Value, e.Reason, e.Accepted)
}

// Parse parses a spec. An empty string yields an empty Spec and no error.
func Parse(s string, lim Limits) (*Spec, error) {
	panic("fault.Parse: not implemented yet")
}

// For returns the action for the given attempt number (1-based).
func (s *Spec) For(attempt int) Action {
	panic("fault.Spec.For: not implemented yet")
}
