// The model of a fault spec: what an attempt does, and how a spec picks the
// action of an attempt and prints it back.

package fault

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
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
	ResetCode uint32     // HTTP/2 RST_STREAM or GOAWAY error code (default: DefaultCode)
	GoAway    bool       // HTTP/2: send GOAWAY excluding this stream; close the connection once earlier streams end
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
	Script []Action // attempt i (1-based) gets Script[i-1], already merged over Base; later attempts answer normally
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

// Error returns the message: the directive, its value, what is wrong and the
// accepted form.
func (e *Error) Error() string {
	return fmt.Sprintf("fault directive %q (value %q): %s; accepted: %s", e.Directive, e.Value, e.Reason, e.Accepted)
}

// Bounds on the text of a spec, independent of Limits. The content bounds
// keep Action.String of any parsed action, whose escaping may triple the text,
// within MaxSpecLen, so that it parses again.
const (
	MaxSpecLen      = 8192 // bytes in one spec
	MaxMessageLen   = 1024 // bytes in a grpc-message, decoded
	MaxTrailers     = 16   // trailers in one action
	MaxTrailerBytes = 1024 // bytes of trailer names and values in one action, decoded
)

// DefaultResetCode is the RST_STREAM error code of a reset without
// reset-code: INTERNAL_ERROR.
const DefaultResetCode uint32 = 0x2

// DefaultGoAwayCode is the GOAWAY error code of a goaway without reset-code
// (and without reset): NO_ERROR, as a server that shuts down sends.
const DefaultGoAwayCode uint32 = 0x0

// DefaultCode returns the error code a without reset-code gets:
// DefaultResetCode when it resets, DefaultGoAwayCode when it only sends
// GOAWAY, and 0 when it does neither.
func DefaultCode(a Action) uint32 {
	switch {
	case a.Reset != ResetNone:
		return DefaultResetCode
	case a.GoAway:
		return DefaultGoAwayCode
	}
	return 0
}

// For returns the action for the given attempt number (1-based; a number
// below 1 counts as 1). A nil Spec answers normally.
func (s *Spec) For(attempt int) Action {
	if s == nil {
		return Action{}
	}
	attempt = max(attempt, 1)
	switch {
	case s.Script != nil:
		if attempt <= len(s.Script) {
			return s.Script[attempt-1]
		}
		return Action{}
	case s.Fail > 0 && attempt > s.Fail:
		return Action{}
	}
	return s.Base
}

// String returns a in spec syntax, directives in a fixed order separated by
// ';', or "" for the zero Action. For an action from Parse or Spec.For,
// Parse(a.String()) gives a back as the Base of the spec.
func (a Action) String() string {
	var b strings.Builder
	add := func(name, value string) {
		if b.Len() > 0 {
			b.WriteByte(';')
		}
		b.WriteString(name)
		if value != "" {
			b.WriteByte('=')
			b.WriteString(value)
		}
	}
	if a.Delay != 0 {
		add("delay", a.Delay.String())
	}
	if a.BodyDelay != 0 {
		add("body-delay", a.BodyDelay.String())
	}
	if a.Chunks != 0 {
		add("chunks", strconv.Itoa(a.Chunks))
	}
	if a.Messages != 0 {
		add("messages", strconv.Itoa(a.Messages))
	}
	if a.Interval != 0 {
		add("interval", a.Interval.String())
	}
	if a.Status != 0 {
		add("status", strconv.Itoa(a.Status))
	}
	if a.HasGRPCStatus {
		add("grpc-status", GRPCCodeName(a.GRPCStatus))
	}
	if a.Reset != ResetNone {
		add("reset", a.Reset.String())
	}
	if a.GoAway {
		add("goaway", "")
	}
	if (a.Reset != ResetNone || a.GoAway) && a.ResetCode != DefaultCode(a) ||
		a.Reset == ResetNone && !a.GoAway && a.ResetCode != 0 {
		add("reset-code", ResetCodeName(a.ResetCode))
	}
	if a.Close {
		add("close", "")
	}
	for _, t := range a.Trailers {
		add("trailer", t.Name+":"+escape(t.Value))
	}
	if a.GRPCMessage != "" {
		add("grpc-message", escape(a.GRPCMessage))
	}
	return b.String()
}

// escape percent-encodes the bytes of s that would end or confuse a text
// value: the separators ; , | + and %, bytes outside printable ASCII, and
// leading or trailing spaces (which Parse would trim).
func escape(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		edge := c == ' ' && (i == 0 || i == len(s)-1)
		if c < 0x20 || c > 0x7e || edge || strings.IndexByte(";,|+%", c) >= 0 {
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&0xf])
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}
