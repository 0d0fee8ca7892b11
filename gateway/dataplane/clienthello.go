package dataplane

// Reading a TLS ClientHello without terminating TLS, for passthrough
// listeners: the record layer (RFC 8446 §5.1; the same framing in TLS 1.0
// to 1.2), the ClientHello message (RFC 8446 §4.1.2, RFC 5246 §7.4.1.2) and
// its server_name extension (RFC 6066 §3).
//
// The parser is written out rather than borrowed from crypto/tls (whose
// GetConfigForClient hook would also reveal the SNI, on a connection whose
// reads are recorded and whose writes are thrown away): it reads exactly the
// records that carry the ClientHello and no byte more, so whatever the
// client sends next (TLS 1.3 early data) stays in the socket for the
// tunnel, and its limits are explicit.

import (
	"errors"
	"fmt"
	"io"
	"strings"
)

const (
	recordHeaderLen          = 5
	recordTypeHandshake      = 22
	handshakeTypeClientHello = 1
	extensionServerName      = 0
	serverNameTypeHostName   = 0

	// maxRecordLen is the largest plaintext record (2^14 bytes).
	maxRecordLen = 1 << 14
	// maxClientHelloLen bounds the ClientHello message assembled from its
	// records. Real ones are a few hundred bytes to a few KiB (post-quantum
	// key shares included).
	maxClientHelloLen = 64 << 10
	// maxServerNameLen is the longest DNS name.
	maxServerNameLen = 253
)

// errNotClientHello marks input that is not the start of a TLS handshake.
var errNotClientHello = errors.New("not a TLS ClientHello")

// readClientHello reads TLS records from r until they hold a complete
// ClientHello and returns every byte it read (to be replayed to the
// backend) and the SNI host name, lower case and without a trailing dot
// ("" when the ClientHello has no server_name). It reads nothing past the
// last record of the ClientHello. An error says what was wrong or why
// reading stopped (wrapping r's error, such as a deadline); raw then holds
// exactly the bytes read.
func readClientHello(r io.Reader) (raw []byte, serverName string, err error) {
	var msg []byte // the handshake message, from the records' fragments
	for {
		start := len(raw)
		raw = append(raw, make([]byte, recordHeaderLen)...)
		if n, err := io.ReadFull(r, raw[start:]); err != nil {
			return raw[:start+n], "", fmt.Errorf("reading a TLS record header after %d bytes: %w", start, err)
		}
		hdr := raw[start:]
		if hdr[0] != recordTypeHandshake {
			return raw, "", fmt.Errorf("%w: record type %d, want a handshake record (22)", errNotClientHello, hdr[0])
		}
		if hdr[1] != 3 {
			return raw, "", fmt.Errorf("%w: record version %d.%d, want 3.x", errNotClientHello, hdr[1], hdr[2])
		}
		n := int(hdr[3])<<8 | int(hdr[4])
		if n == 0 || n > maxRecordLen {
			return raw, "", fmt.Errorf("%w: record length %d, want 1 to %d", errNotClientHello, n, maxRecordLen)
		}
		if len(msg)+n > maxClientHelloLen+4 {
			return raw, "", fmt.Errorf("%w: more than %d bytes of handshake without a complete ClientHello", errNotClientHello, maxClientHelloLen)
		}
		start = len(raw)
		raw = append(raw, make([]byte, n)...)
		if got, err := io.ReadFull(r, raw[start:]); err != nil {
			return raw[:start+got], "", fmt.Errorf("reading a TLS record of %d bytes: %w", n, err)
		}
		msg = append(msg, raw[start:]...)
		if len(msg) < 4 {
			continue
		}
		if msg[0] != handshakeTypeClientHello {
			return raw, "", fmt.Errorf("%w: handshake message type %d, want ClientHello (1)", errNotClientHello, msg[0])
		}
		bodyLen := int(msg[1])<<16 | int(msg[2])<<8 | int(msg[3])
		if bodyLen > maxClientHelloLen {
			return raw, "", fmt.Errorf("%w: ClientHello of %d bytes, limit %d", errNotClientHello, bodyLen, maxClientHelloLen)
		}
		if len(msg) < 4+bodyLen {
			continue
		}
		serverName, err := parseServerName(msg[4 : 4+bodyLen])
		return raw, serverName, err
	}
}

// helloReader reads the big-endian fields of a handshake message. A read
// past the end yields zeros and clears ok, so a parse checks ok once.
type helloReader struct {
	b  []byte
	ok bool
}

func (r *helloReader) next(n int) []byte {
	if !r.ok || n > len(r.b) {
		r.ok = false
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *helloReader) uint(n int) int {
	v := 0
	for _, c := range r.next(n) {
		v = v<<8 | int(c)
	}
	return v
}

// vector reads a length-prefixed field whose length takes lenBytes bytes.
func (r *helloReader) vector(lenBytes int) *helloReader {
	n := r.uint(lenBytes)
	return &helloReader{b: r.next(n), ok: r.ok}
}

// parseServerName returns the host name of the server_name extension of a
// ClientHello body, "" when there is none.
func parseServerName(body []byte) (string, error) {
	r := &helloReader{b: body, ok: true}
	r.next(2)  // legacy_version
	r.next(32) // random
	r.vector(1)
	r.vector(2) // cipher_suites
	r.vector(1) // compression_methods
	if !r.ok {
		return "", fmt.Errorf("%w: ClientHello truncated before its extensions", errNotClientHello)
	}
	if len(r.b) == 0 {
		return "", nil // no extensions (TLS 1.2 and earlier allow it)
	}
	exts := r.vector(2)
	for exts.ok && len(exts.b) > 0 {
		typ := exts.uint(2)
		data := exts.vector(2)
		if typ != extensionServerName {
			continue
		}
		names := data.vector(2)
		for names.ok && len(names.b) > 0 {
			nameType := names.uint(1)
			name := names.vector(2)
			if nameType == serverNameTypeHostName && name.ok {
				return checkServerName(string(name.b))
			}
		}
		if !names.ok || !data.ok {
			return "", fmt.Errorf("%w: malformed server_name extension", errNotClientHello)
		}
		return "", nil
	}
	if !exts.ok {
		return "", fmt.Errorf("%w: malformed extensions", errNotClientHello)
	}
	return "", nil
}

// checkServerName validates an SNI host name (ASCII letters, digits, '-',
// '_' and '.', at most 253 bytes, no IP literal by RFC 6066 but that is not
// enforced) and returns it lower case without a trailing dot.
func checkServerName(name string) (string, error) {
	name = strings.TrimSuffix(name, ".")
	if name == "" || len(name) > maxServerNameLen {
		return "", fmt.Errorf("%w: server_name of %d bytes, want 1 to %d", errNotClientHello, len(name), maxServerNameLen)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return "", fmt.Errorf("%w: server_name %q has byte 0x%02x; accepted: a DNS name (letters, digits, '-', '_', '.')", errNotClientHello, name, c)
		}
	}
	return strings.ToLower(name), nil
}
