package httpecho

import (
	"slices"
	"strconv"
	"unicode/utf8"
)

// The echo is the body of nearly every answer, so it has its own encoder:
// encoding/json's MarshalIndent encodes through reflection and then indents
// in a second pass, which made it the largest cost of an echo. appendJSON
// writes the same bytes in one pass; TestEchoJSONMatchesEncodingJSON and
// FuzzEchoJSON hold it to MarshalIndent's output.

// appendJSON appends e as json.MarshalIndent(e, "", " ") encodes it, with
// e.TLS nil (the caller falls back to encoding/json otherwise). Header names
// for which skip returns true are left out of "headers".
func (e *Echo) appendJSON(dst []byte, skip func(string) bool) []byte {
	dst = append(dst, "{\n"...)
	dst = appendField(dst, "path", e.Path)
	dst = appendField(dst, "host", e.Host)
	dst = appendField(dst, "method", e.Method)
	dst = appendField(dst, "proto", e.Proto)
	dst = append(dst, ` "headers": `...)
	dst = appendHeaders(dst, e.Headers, skip)
	dst = append(dst, ",\n"...)
	dst = appendField(dst, "httpPort", e.HTTPPort)
	dst = appendField(dst, "namespace", e.Namespace)
	dst = appendField(dst, "ingress", e.Ingress)
	dst = appendField(dst, "service", e.Service)
	last := e.RequestID == "" && e.Attempt == 0
	dst = appendLastField(dst, "pod", e.Pod, last)
	if e.RequestID != "" {
		dst = appendLastField(dst, "requestId", e.RequestID, e.Attempt == 0)
	}
	if e.Attempt != 0 {
		dst = append(dst, ` "attempt": `...)
		dst = strconv.AppendInt(dst, int64(e.Attempt), 10)
		dst = append(dst, '\n')
	}
	return append(dst, '}')
}

// appendField appends ` "name": "value",` and a newline; name needs no
// escaping.
func appendField(dst []byte, name, value string) []byte {
	return appendLastField(dst, name, value, false)
}

// appendLastField is appendField without the comma when last is set.
func appendLastField(dst []byte, name, value string, last bool) []byte {
	dst = append(dst, ` "`...)
	dst = append(dst, name...)
	dst = append(dst, `": `...)
	dst = appendJSONString(dst, value)
	if !last {
		dst = append(dst, ',')
	}
	return append(dst, '\n')
}

// appendHeaders appends h, nested one level below the echo's fields, with
// its names sorted as encoding/json sorts map keys (by bytes).
func appendHeaders(dst []byte, h map[string][]string, skip func(string) bool) []byte {
	if h == nil {
		return append(dst, "null"...)
	}
	var buf [32]string
	names := buf[:0]
	for k := range h {
		if skip == nil || !skip(k) {
			names = append(names, k)
		}
	}
	if len(names) == 0 {
		return append(dst, "{}"...)
	}
	slices.Sort(names)
	dst = append(dst, "{\n"...)
	for i, k := range names {
		dst = append(dst, "  "...)
		dst = appendJSONString(dst, k)
		dst = append(dst, ": "...)
		switch vv := h[k]; {
		case vv == nil:
			dst = append(dst, "null"...)
		case len(vv) == 0:
			dst = append(dst, "[]"...)
		default:
			dst = append(dst, "[\n"...)
			for j, v := range vv {
				dst = append(dst, "   "...)
				dst = appendJSONString(dst, v)
				if j < len(vv)-1 {
					dst = append(dst, ',')
				}
				dst = append(dst, '\n')
			}
			dst = append(dst, "  ]"...)
		}
		if i < len(names)-1 {
			dst = append(dst, ',')
		}
		dst = append(dst, '\n')
	}
	return append(dst, " }"...)
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string the way encoding/json writes
// it by default: '"' and '\\' escaped with a backslash; \b, \f, \n, \r and
// \t in their short forms; other control bytes, '<', '>' and '&' as \u00XX;
// each byte of invalid UTF-8 as \ufffd; U+2028 and U+2029 as \u2028 and
// \u2029. Everything else is copied as is.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	plain := 0 // start of the run of bytes not yet copied
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			esc := ""
			switch {
			case c == '"':
				esc = `\"`
			case c == '\\':
				esc = `\\`
			case c == '\b':
				esc = `\b`
			case c == '\f':
				esc = `\f`
			case c == '\n':
				esc = `\n`
			case c == '\r':
				esc = `\r`
			case c == '\t':
				esc = `\t`
			case c < 0x20 || c == '<' || c == '>' || c == '&':
				dst = append(dst, s[plain:i]...)
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
				i++
				plain = i
				continue
			default:
				i++
				continue
			}
			dst = append(dst, s[plain:i]...)
			dst = append(dst, esc...)
			i++
			plain = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[plain:i]...)
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[plain:i]...)
			dst = append(dst, `\u202`...)
			dst = append(dst, hexDigits[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		plain = i
	}
	dst = append(dst, s[plain:]...)
	return append(dst, '"')
}
