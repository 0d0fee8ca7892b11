package dataplane

// Reading a TLS ClientHello without terminating TLS, for passthrough
// listeners: the record layer (RFC 8446 §5.1; the same framing in TLS 1.0
// to 1.2), the ClientHello message (RFC 8446 §4.1.2, RFC 5246 §7.4.1.2) and
// its server_name extension (RFC 6066 §3).
//
// The record reader is written out rather than borrowed from crypto/tls
// (whose GetConfigForClient hook would also reveal the SNI, on a connection
// whose reads are recorded and whose writes are thrown away): it reads
// exactly the records that carry the ClientHello and no byte more, so
// whatever the client sends next (TLS 1.3 early data) stays in the socket
// for the tunnel, and its limits are explicit. The message's
// length-prefixed fields are read with golang.org/x/crypto/cryptobyte.

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"golang.org/x/crypto/cryptobyte"
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

// parseServerName returns the host name of the server_name extension of a
// ClientHello body, "" when there is none. The length-prefixed fields are
// read with cryptobyte, whose reads fail (rather than panic or read past
// the end) on a length that overruns its vector.
func parseServerName(body []byte) (string, error) {
	s := cryptobyte.String(body)
	var sessionID, cipherSuites, compression cryptobyte.String
	if !s.Skip(2) || // legacy_version
		!s.Skip(32) || // random
		!s.ReadUint8LengthPrefixed(&sessionID) ||
		!s.ReadUint16LengthPrefixed(&cipherSuites) ||
		!s.ReadUint8LengthPrefixed(&compression) {
		return "", fmt.Errorf("%w: ClientHello truncated before its extensions", errNotClientHello)
	}
	if s.Empty() {
		return "", nil // no extensions (TLS 1.2 and earlier allow it)
	}
	var exts cryptobyte.String
	if !s.ReadUint16LengthPrefixed(&exts) {
		return "", fmt.Errorf("%w: malformed extensions", errNotClientHello)
	}
	for !exts.Empty() {
		var typ uint16
		var data cryptobyte.String
		if !exts.ReadUint16(&typ) || !exts.ReadUint16LengthPrefixed(&data) {
			return "", fmt.Errorf("%w: malformed extensions", errNotClientHello)
		}
		if typ != extensionServerName {
			continue
		}
		var names cryptobyte.String
		if !data.ReadUint16LengthPrefixed(&names) {
			return "", fmt.Errorf("%w: malformed server_name extension", errNotClientHello)
		}
		for !names.Empty() {
			var nameType uint8
			var name cryptobyte.String
			if !names.ReadUint8(&nameType) || !names.ReadUint16LengthPrefixed(&name) {
				return "", fmt.Errorf("%w: malformed server_name extension", errNotClientHello)
			}
			if nameType == serverNameTypeHostName {
				return checkServerName(string(name))
			}
		}
		return "", nil
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
