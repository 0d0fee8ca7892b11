// The parser of the directive grammar described in the package doc.

package fault

import (
	"fmt"
	"math/bits"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

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
