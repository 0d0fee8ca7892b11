// Package fault parses and evaluates the echo-backend's fault vocabulary: the
// `;`-separated directives carried by the X-Gatecheck-Fault header, the
// gatecheck-fault query parameter or the x-gatecheck-fault gRPC metadata key.
//
// A Spec says what each attempt of one request id does. Attempt numbers come
// from the ledger, so a spec such as "fail=2;status=503" answers 503 twice and
// then answers normally.
//
// # Directives
//
// Directives are separated by ';'. Inside one ';' element ',' separates them
// too ("chunks=3,interval=100ms"), except that the text directives
// grpc-message, trailer and script take the rest of the element, commas
// included. Names are case-insensitive and spaces around directives are
// ignored. Text values may be percent-encoded (%3B for ';').
//
//	delay=D            wait D before the response headers
//	body-delay=D       wait D after the headers, before the body
//	chunks=N           HTTP: write the body in N parts
//	messages=N         gRPC server streams: send N messages
//	interval=D         wait D between chunks or messages
//	status=N           HTTP status, 200..599 (a 1xx is not an answer)
//	grpc-status=C      gRPC code: 0..16 or a name such as UNAVAILABLE (any case)
//	grpc-message=TEXT  gRPC status message (with grpc-status)
//	trailer=NAME:VALUE extra trailer; repeatable
//	reset[=P]          reset the stream at P: before-headers (the default),
//	                   after-headers or mid-body
//	reset-code=C       RST_STREAM / GOAWAY error code: a number or a name such
//	                   as CANCEL; with reset or goaway. Default: INTERNAL_ERROR
//	                   with reset, NO_ERROR with goaway alone
//	goaway             send GOAWAY, then close the connection
//	close              close the connection without a response
//	fail=N             apply the directives to the first N attempts only
//	script=A|B|...     attempt i takes action i; later attempts answer normally
//
// Durations use time.ParseDuration syntax. Limits bounds delays (each, and the
// total of delay + body-delay + chunks (or messages) * interval), chunks,
// messages and attempts; MaxSpecLen, MaxMessageLen, MaxTrailers and
// MaxTrailerBytes bound the text.
//
// # Scripts
//
// A script action is atoms joined by '+'. An atom is one of
//
//	ok                        no change: the attempt gets the base directives
//	503                       a 3-digit HTTP status, 200..599
//	reset, reset:after-headers, reset:mid-body
//	close, goaway
//	UNAVAILABLE               a gRPC code name (not a number; "ok" is the atom above)
//	key:value                 any directive but fail and script: delay:2s,
//	                          grpc-status:14, reset-code:CANCEL, trailer:x-a:1
//
// The directives outside script= apply to every scripted attempt; a directive
// given in an atom replaces the base's (trailers replace the base's list), and
// may set it back to zero (delay:0s). For example
// "script=delay:2s+503|reset|ok" delays the first attempt 2s and answers 503,
// resets the second before its headers and answers the third normally.
package fault

import (
	"fmt"
	"math/bits"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/gatecheck/gatecheck/contract/echowire"
)

// Names of the carriers of a fault spec and of the request id: the
// backend's wire contract, in contract/echowire.
const (
	HeaderName   = echowire.FaultHeader   // HTTP request header
	QueryName    = echowire.FaultQuery    // HTTP query parameter
	MetadataName = echowire.FaultMetadata // gRPC metadata key

	IDHeaderName   = echowire.IDHeader   // HTTP request header
	IDQueryName    = echowire.IDQuery    // HTTP query parameter
	IDMetadataName = echowire.IDMetadata // gRPC metadata key
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

// grpcCodeNames are the canonical gRPC code names, indexed by code.
var grpcCodeNames = [...]string{
	"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED",
	"NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED",
	"FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED",
	"INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED",
}

// resetCodeNames are the HTTP/2 error code names, indexed by code.
var resetCodeNames = [...]string{
	"NO_ERROR", "PROTOCOL_ERROR", "INTERNAL_ERROR", "FLOW_CONTROL_ERROR",
	"SETTINGS_TIMEOUT", "STREAM_CLOSED", "FRAME_SIZE_ERROR", "REFUSED_STREAM",
	"CANCEL", "COMPRESSION_ERROR", "CONNECT_ERROR", "ENHANCE_YOUR_CALM",
	"INADEQUATE_SECURITY", "HTTP_1_1_REQUIRED",
}

// GRPCCodeName returns the canonical upper-snake name of c, such as
// "UNAVAILABLE", or its number for a code outside 0..16.
func GRPCCodeName(c codes.Code) string {
	if int(c) < len(grpcCodeNames) {
		return grpcCodeNames[c]
	}
	return strconv.FormatUint(uint64(c), 10)
}

// ResetCodeName returns the name of an HTTP/2 error code, such as
// "INTERNAL_ERROR", or its number for an unnamed code.
func ResetCodeName(code uint32) string {
	if int(code) < len(resetCodeNames) {
		return resetCodeNames[code]
	}
	return strconv.FormatUint(uint64(code), 10)
}

// field is a set of directives, to find duplicates and to merge a script
// action over the base.
type field uint32

const (
	fDelay field = 1 << iota
	fBodyDelay
	fChunks
	fMessages
	fInterval
	fStatus
	fGRPCStatus
	fGRPCMessage
	fTrailer
	fReset
	fResetCode
	fGoAway
	fClose
	fFail
	fScript

	numFields = iota
)

// index is the bit number of a single field.
func (f field) index() int { return bits.TrailingZeros32(uint32(f)) }

// directives maps each directive name to its field.
var directives = map[string]field{
	"delay":        fDelay,
	"body-delay":   fBodyDelay,
	"chunks":       fChunks,
	"messages":     fMessages,
	"interval":     fInterval,
	"status":       fStatus,
	"grpc-status":  fGRPCStatus,
	"grpc-message": fGRPCMessage,
	"trailer":      fTrailer,
	"reset":        fReset,
	"reset-code":   fResetCode,
	"goaway":       fGoAway,
	"close":        fClose,
	"fail":         fFail,
	"script":       fScript,
}

const directiveList = "one of delay, body-delay, chunks, messages, interval, status, grpc-status, " +
	"grpc-message, trailer, reset, reset-code, goaway, close, fail, script, separated by ';' (or ',')"

const scriptAccepted = "actions separated by '|', each made of atoms joined by '+'; an atom is ok, " +
	"a 3-digit HTTP status such as 503, reset, reset:after-headers, reset:mid-body, close, goaway, " +
	"a gRPC code name such as UNAVAILABLE, or key:value for a directive such as delay:2s"

// isText reports whether a directive's value is text that runs to the next
// ';' (commas included) rather than to the next ','.
func isText(name string) bool {
	return name == "grpc-message" || name == "trailer" || name == "script"
}

// parser holds the limits and builds errors.
type parser struct {
	lim   Limits
	given [numFields]string // raw value of each directive of the action being parsed, by bit
}

func (p *parser) accepted(name string) string {
	switch name {
	case "delay", "body-delay", "interval":
		return fmt.Sprintf("a Go duration such as 1500ms, from 0 to %v", p.lim.MaxDelay)
	case "chunks":
		return fmt.Sprintf("a whole number from 1 to %d", p.lim.MaxChunks)
	case "messages":
		return fmt.Sprintf("a whole number from 1 to %d", p.lim.MaxMessages)
	case "status":
		return "an HTTP status code from 200 to 599"
	case "grpc-status":
		return "a gRPC code: a number from 0 to 16 or a name such as UNAVAILABLE (any case)"
	case "grpc-message":
		return fmt.Sprintf("text up to the next ';', percent-encoding allowed, at most %d bytes decoded, "+
			"with grpc-status", MaxMessageLen)
	case "trailer":
		return fmt.Sprintf("name:value, the name a header token such as x-retry-info (not grpc-* or a "+
			"connection or framing header), the value printable ASCII without leading or trailing "+
			"spaces, percent-encoding allowed; at most %d per attempt, of at most %d bytes together",
			MaxTrailers, MaxTrailerBytes)
	case "reset":
		return "reset alone (before-headers), or reset=before-headers, reset=after-headers or reset=mid-body"
	case "reset-code":
		return "an HTTP/2 error code: a number from 0 to 4294967295 or a name such as INTERNAL_ERROR " +
			"or CANCEL (any case), with reset or goaway"
	case "goaway":
		return "goaway alone, without a value"
	case "close":
		return "close alone, without a value"
	case "fail":
		return fmt.Sprintf("a whole number from 1 to %d, not together with script", p.lim.MaxAttempts)
	case "script":
		return fmt.Sprintf("%s; at most %d actions, not together with fail", scriptAccepted, p.lim.MaxAttempts)
	}
	return directiveList
}

func (p *parser) errorf(name, value, format string, args ...any) *Error {
	return &Error{Directive: name, Value: value, Reason: fmt.Sprintf(format, args...), Accepted: p.accepted(name)}
}

// withLimits fills the zero or negative fields of lim from DefaultLimits.
func withLimits(lim Limits) Limits {
	if lim.MaxDelay <= 0 {
		lim.MaxDelay = DefaultLimits.MaxDelay
	}
	if lim.MaxChunks <= 0 {
		lim.MaxChunks = DefaultLimits.MaxChunks
	}
	if lim.MaxMessages <= 0 {
		lim.MaxMessages = DefaultLimits.MaxMessages
	}
	if lim.MaxAttempts <= 0 {
		lim.MaxAttempts = DefaultLimits.MaxAttempts
	}
	return lim
}

// Parse parses a spec. An empty string yields an empty Spec and no error.
// A zero field of lim takes its value from DefaultLimits. Every error is an
// *Error.
//
// Directives are separated by ';'; inside one ';' element, ',' also
// separates them, except that the text directives grpc-message, trailer and
// script take the rest of the element, commas included. Directive names and
// the names of codes and reset points are case-insensitive; spaces around
// directives are ignored and empty directives are skipped.
func Parse(s string, lim Limits) (*Spec, error) {
	spec, err := parse(s, withLimits(lim))
	if err != nil {
		return nil, err
	}
	return spec, nil
}

func parse(s string, lim Limits) (*Spec, *Error) {
	p := &parser{lim: lim}
	spec := &Spec{Raw: s}
	if len(s) > MaxSpecLen {
		return nil, &Error{Directive: "spec", Value: s[:32] + "...",
			Reason: fmt.Sprintf("too long (%d bytes)", len(s)), Accepted: fmt.Sprintf("at most %d bytes", MaxSpecLen)}
	}
	var mask field
	var script string
	for elem := range strings.SplitSeq(s, ";") {
		elem = strings.Trim(elem, " \t")
		for elem != "" {
			var piece string
			i := strings.IndexAny(elem, "=,")
			switch {
			case i < 0:
				piece, elem = elem, ""
			case elem[i] == ',':
				piece, elem = elem[:i], elem[i+1:]
			case isText(strings.ToLower(strings.Trim(elem[:i], " \t"))):
				piece, elem = elem, ""
			default:
				if j := strings.IndexByte(elem[i:], ','); j >= 0 {
					piece, elem = elem[:i+j], elem[i+j+1:]
				} else {
					piece, elem = elem, ""
				}
			}
			piece = strings.TrimLeft(piece, " \t")
			if piece == "" {
				continue
			}
			name, value, hasValue := strings.Cut(piece, "=")
			name = strings.ToLower(strings.Trim(name, " \t"))
			if !isText(name) {
				value = strings.Trim(value, " \t")
			}
			if name == "" {
				return nil, &Error{Directive: piece, Value: value, Reason: "missing directive name", Accepted: directiveList}
			}
			f, ok := directives[name]
			if !ok {
				return nil, &Error{Directive: name, Value: value, Reason: "unknown directive", Accepted: directiveList}
			}
			if mask&f != 0 && f != fTrailer {
				return nil, p.errorf(name, value, "given more than once")
			}
			mask |= f
			switch f {
			case fFail:
				n, ok := parseNumber(value, uint64(lim.MaxAttempts))
				if !ok || n < 1 {
					return nil, p.errorf(name, value, "not a whole number from 1 to %d", lim.MaxAttempts)
				}
				spec.Fail = int(n)
			case fScript:
				script = value
			default:
				if err := p.set(&spec.Base, name, f, value, hasValue); err != nil {
					return nil, err
				}
			}
		}
	}
	if mask&fFail != 0 && mask&fScript != 0 {
		return nil, p.errorf("fail", strconv.Itoa(spec.Fail), "fail and script exclude each other")
	}
	if mask&fScript == 0 {
		if err := p.check(&spec.Base, mask, ""); err != nil {
			return nil, err
		}
		spec.Base = finish(spec.Base, mask)
		return spec, nil
	}
	base := mask &^ fScript
	baseGiven := p.given
	if err := p.parseScript(spec, script, base); err != nil {
		return nil, err
	}
	// A dependent directive in the base must be of use to some attempt.
	for _, dep := range []struct {
		f    field
		uses func(Action) bool
	}{
		{fResetCode, func(a Action) bool { return a.Reset != ResetNone || a.GoAway }},
		{fGRPCMessage, func(a Action) bool { return a.HasGRPCStatus }},
	} {
		if base&dep.f == 0 || slices.ContainsFunc(spec.Script, dep.uses) {
			continue
		}
		name := describe(dep.f)
		return nil, p.errorf(name, baseGiven[dep.f.index()], "no scripted attempt uses it")
	}
	return spec, nil
}

// parseScript fills spec.Script with each action of script merged over
// spec.Base, whose directives are baseMask.
func (p *parser) parseScript(spec *Spec, script string, baseMask field) *Error {
	if strings.Trim(script, " \t") == "" {
		return p.errorf("script", script, "empty")
	}
	n := strings.Count(script, "|") + 1
	if n > p.lim.MaxAttempts {
		return p.errorf("script", script, "%d actions", n)
	}
	spec.Script = make([]Action, 0, n)
	for act := range strings.SplitSeq(script, "|") {
		i := len(spec.Script) + 1
		var a Action
		var mask field
		p.given = [numFields]string{}
		for atom := range strings.SplitSeq(act, "+") {
			atom = strings.Trim(atom, " \t")
			if atom == "" {
				return p.errorf("script", script, "action %d has an empty atom", i)
			}
			if err := p.atom(&a, &mask, atom); err != nil {
				err.Reason += fmt.Sprintf(" (script action %d)", i)
				return err
			}
		}
		merged := merge(spec.Base, a, mask)
		if err := p.check(&merged, mask, fmt.Sprintf(" (script action %d)", i)); err != nil {
			return err
		}
		spec.Script = append(spec.Script, finish(merged, baseMask|mask))
	}
	return nil
}

// atom applies one script atom to a.
func (p *parser) atom(a *Action, mask *field, atom string) *Error {
	low := strings.ToLower(atom)
	var name, value string
	hasValue := false
	switch {
	case low == "ok":
		return nil
	case low == "reset" || low == "close" || low == "goaway":
		name = low
	case len(atom) == 3 && isDigits(atom):
		name, value, hasValue = "status", atom, true
	case strings.Contains(atom, ":"):
		name, value, _ = strings.Cut(atom, ":")
		name = strings.ToLower(strings.Trim(name, " \t"))
		if !isText(name) {
			value = strings.Trim(value, " \t")
		}
		hasValue = true
	default:
		if _, ok := parseGRPCCode(atom); ok && !isDigits(atom) {
			name, value, hasValue = "grpc-status", atom, true
			break
		}
		return &Error{Directive: "script", Value: atom, Reason: "unknown atom", Accepted: scriptAccepted}
	}
	if name == "" {
		return &Error{Directive: "script", Value: atom, Reason: "atom has no directive name before ':'", Accepted: scriptAccepted}
	}
	f, ok := directives[name]
	if !ok {
		return &Error{Directive: name, Value: value, Reason: "unknown directive in a script atom", Accepted: scriptAccepted}
	}
	if f == fFail || f == fScript {
		return p.errorf(name, value, "not allowed inside script")
	}
	if *mask&f != 0 && f != fTrailer {
		return p.errorf(name, value, "given more than once in one action")
	}
	*mask |= f
	return p.set(a, name, f, value, hasValue)
}

// set parses the value of one directive into a.
func (p *parser) set(a *Action, name string, f field, value string, hasValue bool) *Error {
	p.given[f.index()] = value
	switch f {
	case fDelay, fBodyDelay, fInterval:
		d, err := time.ParseDuration(value)
		if err != nil {
			return p.errorf(name, value, "not a duration")
		}
		if d < 0 {
			return p.errorf(name, value, "negative")
		}
		if d > p.lim.MaxDelay {
			return p.errorf(name, value, "above the limit of %v", p.lim.MaxDelay)
		}
		switch f {
		case fDelay:
			a.Delay = d
		case fBodyDelay:
			a.BodyDelay = d
		default:
			a.Interval = d
		}
	case fChunks:
		n, ok := parseNumber(value, uint64(p.lim.MaxChunks))
		if !ok || n < 1 {
			return p.errorf(name, value, "not a whole number from 1 to %d", p.lim.MaxChunks)
		}
		a.Chunks = int(n)
	case fMessages:
		n, ok := parseNumber(value, uint64(p.lim.MaxMessages))
		if !ok || n < 1 {
			return p.errorf(name, value, "not a whole number from 1 to %d", p.lim.MaxMessages)
		}
		a.Messages = int(n)
	case fStatus:
		n, ok := parseNumber(value, 599)
		if !ok || n < 100 {
			return p.errorf(name, value, "not an HTTP status code")
		}
		if n < 200 {
			// The server would send it as an interim response and then
			// answer 200, so the client would not see it as the answer.
			return p.errorf(name, value, "an informational (1xx) status is not a final answer")
		}
		a.Status = int(n)
	case fGRPCStatus:
		c, ok := parseGRPCCode(value)
		if !ok {
			return p.errorf(name, value, "not a gRPC code")
		}
		a.HasGRPCStatus, a.GRPCStatus = true, c
	case fGRPCMessage:
		m, err := url.PathUnescape(value)
		if err != nil {
			return p.errorf(name, value, "bad percent-encoding")
		}
		if len(m) > MaxMessageLen {
			return p.errorf(name, value, "longer than %d bytes", MaxMessageLen)
		}
		a.GRPCMessage = m
	case fTrailer:
		t, reason := parseTrailer(value)
		if reason != "" {
			return p.errorf(name, value, "%s", reason)
		}
		if len(a.Trailers) >= MaxTrailers {
			return p.errorf(name, value, "more than %d trailers", MaxTrailers)
		}
		n := len(t.Name) + len(t.Value)
		for _, u := range a.Trailers {
			n += len(u.Name) + len(u.Value)
		}
		if n > MaxTrailerBytes {
			return p.errorf(name, value, "trailers longer than %d bytes together", MaxTrailerBytes)
		}
		a.Trailers = append(a.Trailers, t)
	case fReset:
		switch strings.ToLower(value) {
		case "before-headers":
			a.Reset = ResetBeforeHeaders
		case "after-headers":
			a.Reset = ResetAfterHeaders
		case "mid-body":
			a.Reset = ResetMidBody
		case "":
			if hasValue {
				return p.errorf(name, value, "empty reset point")
			}
			a.Reset = ResetBeforeHeaders
		default:
			return p.errorf(name, value, "not a reset point")
		}
	case fResetCode:
		c, ok := parseResetCode(value)
		if !ok {
			return p.errorf(name, value, "not an HTTP/2 error code")
		}
		a.ResetCode = c
	case fGoAway, fClose:
		if hasValue {
			return p.errorf(name, value, "takes no value")
		}
		if f == fGoAway {
			a.GoAway = true
		} else {
			a.Close = true
		}
	}
	return nil
}

// check validates a whole action: the dependent directives given in own
// must be of use in a, and a's total time must fit MaxDelay. where is added
// to the reason of an error.
func (p *parser) check(a *Action, own field, where string) *Error {
	if own&fResetCode != 0 && a.Reset == ResetNone && !a.GoAway {
		return p.errorf("reset-code", p.given[fResetCode.index()], "needs reset or goaway%s", where)
	}
	if own&fGRPCMessage != 0 && !a.HasGRPCStatus {
		return p.errorf("grpc-message", p.given[fGRPCMessage.index()], "needs grpc-status%s", where)
	}
	var names []string
	total := time.Duration(0)
	for _, d := range []struct {
		name string
		d    time.Duration
	}{{"delay", a.Delay}, {"body-delay", a.BodyDelay}} {
		if d.d > 0 {
			names = append(names, d.name)
			total += d.d // each is at most MaxDelay: no overflow
		}
	}
	n, what := a.Chunks, "chunks"
	if a.Messages > n {
		n, what = a.Messages, "messages"
	}
	over := false
	if n > 0 && a.Interval > 0 {
		names = append(names, what+"*interval")
		if time.Duration(n) > (p.lim.MaxDelay-min(total, p.lim.MaxDelay))/a.Interval {
			over = true
		} else {
			total += time.Duration(n) * a.Interval
		}
	}
	if over || total > p.lim.MaxDelay {
		value := total.String()
		if over {
			value = "more than " + p.lim.MaxDelay.String()
		}
		return &Error{Directive: strings.Join(names, "+"), Value: value,
			Reason:   "the attempt would take too long" + where,
			Accepted: fmt.Sprintf("delay + body-delay + chunks (or messages) * interval of at most %v", p.lim.MaxDelay)}
	}
	return nil
}

// describe returns the name of a dependent directive, for errors.
func describe(f field) string {
	if f == fResetCode {
		return "reset-code"
	}
	return "grpc-message"
}

// merge returns base with the directives in mask taken from over.
func merge(base, over Action, mask field) Action {
	a := base
	a.Trailers = slices.Clone(base.Trailers)
	if mask&fDelay != 0 {
		a.Delay = over.Delay
	}
	if mask&fBodyDelay != 0 {
		a.BodyDelay = over.BodyDelay
	}
	if mask&fChunks != 0 {
		a.Chunks = over.Chunks
	}
	if mask&fMessages != 0 {
		a.Messages = over.Messages
	}
	if mask&fInterval != 0 {
		a.Interval = over.Interval
	}
	if mask&fStatus != 0 {
		a.Status = over.Status
	}
	if mask&fGRPCStatus != 0 {
		a.HasGRPCStatus, a.GRPCStatus = over.HasGRPCStatus, over.GRPCStatus
	}
	if mask&fGRPCMessage != 0 {
		a.GRPCMessage = over.GRPCMessage
	}
	if mask&fTrailer != 0 {
		a.Trailers = slices.Clone(over.Trailers)
	}
	if mask&fReset != 0 {
		a.Reset = over.Reset
	}
	if mask&fResetCode != 0 {
		a.ResetCode = over.ResetCode
	}
	if mask&fGoAway != 0 {
		a.GoAway = over.GoAway
	}
	if mask&fClose != 0 {
		a.Close = over.Close
	}
	return a
}

// finish normalises an action whose directives are mask: a reset or goaway
// without reset-code gets DefaultCode, and a reset-code or grpc-message
// that nothing uses is dropped.
func finish(a Action, mask field) Action {
	if a.Reset != ResetNone || a.GoAway {
		if mask&fResetCode == 0 {
			a.ResetCode = DefaultCode(a)
		}
	} else {
		a.ResetCode = 0
	}
	if !a.HasGRPCStatus {
		a.GRPCMessage = ""
	}
	return a
}

// parseNumber parses 1 to 10 decimal digits (no sign) into a number at most max.
func parseNumber(s string, max uint64) (uint64, bool) {
	if len(s) == 0 || len(s) > 10 || !isDigits(s) {
		return 0, false
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || n > max {
		return 0, false
	}
	return n, true
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// parseGRPCCode accepts 0..16, the upper-snake names and grpc-go's
// CamelCase names (codes.Code.String), in any case.
func parseGRPCCode(s string) (codes.Code, bool) {
	if isDigits(s) {
		n, ok := parseNumber(s, uint64(len(grpcCodeNames)-1))
		return codes.Code(n), ok
	}
	for i, name := range grpcCodeNames {
		if strings.EqualFold(s, name) || strings.EqualFold(s, codes.Code(i).String()) {
			return codes.Code(i), true
		}
	}
	return 0, false
}

// parseResetCode accepts a 32-bit number or an HTTP/2 error code name.
func parseResetCode(s string) (uint32, bool) {
	if isDigits(s) {
		n, ok := parseNumber(s, 1<<32-1)
		return uint32(n), ok
	}
	for i, name := range resetCodeNames {
		if strings.EqualFold(s, name) {
			return uint32(i), true
		}
	}
	return 0, false
}

// forbiddenTrailers are names a trailer may not take: they describe the
// connection or the framing, or gRPC owns them (every grpc-* name).
var forbiddenTrailers = map[string]bool{
	"connection": true, "content-length": true, "content-type": true, "host": true,
	"keep-alive": true, "proxy-connection": true, "te": true, "trailer": true,
	"transfer-encoding": true, "upgrade": true,
}

// parseTrailer parses name:value; reason is "" when it is valid.
func parseTrailer(s string) (t Trailer, reason string) {
	name, value, ok := strings.Cut(s, ":")
	if !ok {
		return t, "missing ':' between name and value"
	}
	name = strings.ToLower(strings.Trim(name, " \t"))
	if name == "" {
		return t, "empty trailer name"
	}
	for i := 0; i < len(name); i++ {
		if !isTokenChar(name[i]) {
			return t, fmt.Sprintf("trailer name has the invalid character %q", name[i])
		}
	}
	if forbiddenTrailers[name] || strings.HasPrefix(name, "grpc-") {
		return t, fmt.Sprintf("trailer name %q is reserved", name)
	}
	v, err := url.PathUnescape(value)
	if err != nil {
		return t, "bad percent-encoding"
	}
	for i := 0; i < len(v); i++ {
		if v[i] < 0x20 || v[i] > 0x7e {
			return t, fmt.Sprintf("trailer value has the invalid byte %#02x", v[i])
		}
	}
	if v != strings.Trim(v, " ") {
		return t, "trailer value has leading or trailing spaces"
	}
	return Trailer{Name: name, Value: v}, ""
}

// isTokenChar reports whether c may appear in an HTTP token (RFC 9110).
func isTokenChar(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
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
