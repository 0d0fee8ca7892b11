package h2tap

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"golang.org/x/net/http2/hpack"
)

// HTTP/2 frame types and flags used by the tap (RFC 9113, section 6).
const (
	frameData         = 0x0
	frameHeaders      = 0x1
	framePriority     = 0x2
	frameRSTStream    = 0x3
	frameSettings     = 0x4
	framePushPromise  = 0x5
	frameGoAway       = 0x7
	frameWindowUpdate = 0x8
	frameContinuation = 0x9

	flagEndStream  = 0x1
	flagAck        = 0x1
	flagEndHeaders = 0x4
	flagPadded     = 0x8
	flagPriority   = 0x20

	settingHeaderTableSize = 0x1

	frameHeaderLen = 9
	// maxFragment is the largest header block fragment the tap puts in one
	// frame: the smallest SETTINGS_MAX_FRAME_SIZE a peer may advertise.
	maxFragment = 16384
	// defaultTableSize is the HPACK dynamic table size every peer starts with.
	defaultTableSize = 4096
)

// Limits on what one connection can make the tap hold in memory.
const (
	// maxInboundFrame bounds a buffered (non-DATA) frame from the client.
	// It matches the largest SETTINGS_MAX_FRAME_SIZE net/http advertises.
	maxInboundFrame = 1 << 20
	// maxOutboundFrame bounds a frame from the server: the protocol limit.
	maxOutboundFrame = 1<<24 - 1
	// maxHeaderBlock bounds a compressed header block (HEADERS plus its
	// CONTINUATION frames), twice net/http's default MaxHeaderBytes.
	maxHeaderBlock = 2 << 20
	// maxHeaderList bounds a decoded header list, counted as RFC 7541 does
	// (name + value + 32 per field).
	maxHeaderList = 4 << 20
)

// frameHeader is the fixed 9-byte prefix of every frame.
type frameHeader struct {
	length uint32
	typ    uint8
	flags  uint8
	stream uint32
}

func parseFrameHeader(b []byte) frameHeader {
	return frameHeader{
		length: uint32(b[0])<<16 | uint32(b[1])<<8 | uint32(b[2]),
		typ:    b[3],
		flags:  b[4],
		stream: binary.BigEndian.Uint32(b[5:9]) & (1<<31 - 1),
	}
}

func appendFrameHeader(dst []byte, length int, typ, flags uint8, stream uint32) []byte {
	return append(dst, byte(length>>16), byte(length>>8), byte(length), typ, flags,
		byte(stream>>24), byte(stream>>16), byte(stream>>8), byte(stream))
}

// appendFrame appends a frame unchanged (a reserved bit is cleared).
func appendFrame(dst []byte, h frameHeader, payload []byte) []byte {
	dst = appendFrameHeader(dst, len(payload), h.typ, h.flags, h.stream)
	return append(dst, payload...)
}

func appendRSTStream(dst []byte, stream, code uint32) []byte {
	dst = appendFrameHeader(dst, 4, frameRSTStream, 0, stream)
	return binary.BigEndian.AppendUint32(dst, code)
}

func appendGoAway(dst []byte, last, code uint32) []byte {
	dst = appendFrameHeader(dst, 8, frameGoAway, 0, 0)
	dst = binary.BigEndian.AppendUint32(dst, last&(1<<31-1))
	return binary.BigEndian.AppendUint32(dst, code)
}

func appendWindowUpdate(dst []byte, stream, incr uint32) []byte {
	dst = appendFrameHeader(dst, 4, frameWindowUpdate, 0, stream)
	return binary.BigEndian.AppendUint32(dst, incr)
}

// headerTableSizes returns the SETTINGS_HEADER_TABLE_SIZE values in a
// SETTINGS payload, in order.
func headerTableSizes(payload []byte) ([]uint32, error) {
	if len(payload)%6 != 0 {
		return nil, fmt.Errorf("SETTINGS payload length %d is not a multiple of 6", len(payload))
	}
	var sizes []uint32
	for ; len(payload) > 0; payload = payload[6:] {
		if binary.BigEndian.Uint16(payload) == settingHeaderTableSize {
			sizes = append(sizes, binary.BigEndian.Uint32(payload[2:]))
		}
	}
	return sizes, nil
}

// frameParser splits a byte stream into frames. Complete frames are handed
// to onFrame; DATA frames are either buffered like the rest or, with
// streamData, copied to the output as they arrive so no byte is delayed.
type frameParser struct {
	streamData bool
	maxPayload uint32

	hdr       [frameHeaderLen]byte
	nhdr      int
	h         frameHeader
	inFrame   bool
	streaming bool // inFrame and the frame's bytes go straight to the output
	remain    uint32
	payload   []byte
}

// frameFunc handles one complete frame and returns out with whatever the
// frame becomes appended.
type frameFunc func(out []byte, h frameHeader, payload []byte) ([]byte, error)

// atBoundary reports whether the output so far ends at a frame boundary.
func (p *frameParser) atBoundary() bool { return !p.streaming }

// feed parses b, appending to out.
func (p *frameParser) feed(out, b []byte, onFrame frameFunc) ([]byte, error) {
	var err error
	for len(b) > 0 {
		if !p.inFrame {
			if p.nhdr == 0 && len(b) >= frameHeaderLen {
				// Fast path: a whole frame within b needs no copy.
				h := parseFrameHeader(b)
				if end := frameHeaderLen + int(h.length); len(b) >= end && !(p.streamData && h.typ == frameData) {
					if h.length > p.maxPayload {
						return out, fmt.Errorf("frame of type %d is %d bytes, over the limit of %d", h.typ, h.length, p.maxPayload)
					}
					if out, err = onFrame(out, h, b[frameHeaderLen:end]); err != nil {
						return out, err
					}
					b = b[end:]
					continue
				}
			}
			k := copy(p.hdr[p.nhdr:], b)
			p.nhdr += k
			b = b[k:]
			if p.nhdr < frameHeaderLen {
				break
			}
			p.nhdr = 0
			p.h = parseFrameHeader(p.hdr[:])
			p.inFrame = true
			p.remain = p.h.length
			p.payload = p.payload[:0]
			if p.streamData && p.h.typ == frameData {
				p.streaming = true
				out = append(out, p.hdr[:]...)
			} else if p.h.length > p.maxPayload {
				return out, fmt.Errorf("frame of type %d is %d bytes, over the limit of %d", p.h.typ, p.h.length, p.maxPayload)
			}
		}
		k := min(int(p.remain), len(b))
		if p.streaming {
			out = append(out, b[:k]...)
		} else {
			p.payload = append(p.payload, b[:k]...)
		}
		p.remain -= uint32(k)
		b = b[k:]
		if p.remain > 0 {
			break
		}
		p.inFrame = false
		if p.streaming {
			p.streaming = false
			continue
		}
		if out, err = onFrame(out, p.h, p.payload); err != nil {
			return out, err
		}
		if cap(p.payload) > 64<<10 {
			p.payload = nil // do not keep a rare huge frame's buffer alive
		}
	}
	return out, nil
}

// headerBlock collects one header block: a HEADERS or PUSH_PROMISE frame and
// its CONTINUATION frames.
type headerBlock struct {
	active    bool
	typ       uint8
	stream    uint32
	endStream bool
	priority  []byte // the 5 priority bytes of a HEADERS frame with PRIORITY
	promised  []byte // the 4 promised-stream bytes of a PUSH_PROMISE
	frag      []byte
}

// start begins a block with a HEADERS or PUSH_PROMISE frame. It reports
// whether the block is already complete.
func (hb *headerBlock) start(h frameHeader, payload []byte) (bool, error) {
	if h.stream == 0 {
		return false, fmt.Errorf("frame of type %d on stream 0", h.typ)
	}
	if h.flags&flagPadded != 0 {
		if len(payload) < 1 {
			return false, errors.New("padded frame without a pad length")
		}
		pad := int(payload[0])
		payload = payload[1:]
		if pad > len(payload) {
			return false, fmt.Errorf("pad length %d exceeds the %d-byte payload", pad, len(payload))
		}
		payload = payload[:len(payload)-pad]
	}
	hb.priority, hb.promised = nil, nil
	switch h.typ {
	case frameHeaders:
		if h.flags&flagPriority != 0 {
			if len(payload) < 5 {
				return false, errors.New("HEADERS with PRIORITY shorter than 5 bytes")
			}
			hb.priority = append([]byte(nil), payload[:5]...)
			payload = payload[5:]
		}
	case framePushPromise:
		if len(payload) < 4 {
			return false, errors.New("PUSH_PROMISE shorter than 4 bytes")
		}
		hb.promised = append([]byte(nil), payload[:4]...)
		payload = payload[4:]
	}
	hb.active = true
	hb.typ = h.typ
	hb.stream = h.stream
	hb.endStream = h.typ == frameHeaders && h.flags&flagEndStream != 0
	hb.frag = append(hb.frag[:0], payload...)
	if len(hb.frag) > maxHeaderBlock {
		return false, fmt.Errorf("header block over %d bytes", maxHeaderBlock)
	}
	return h.flags&flagEndHeaders != 0, nil
}

// add appends a CONTINUATION frame and reports whether the block is complete.
func (hb *headerBlock) add(h frameHeader, payload []byte) (bool, error) {
	if !hb.active {
		return false, fmt.Errorf("CONTINUATION on stream %d without a header block", h.stream)
	}
	if h.stream != hb.stream {
		return false, fmt.Errorf("CONTINUATION on stream %d inside the header block of stream %d", h.stream, hb.stream)
	}
	if len(hb.frag)+len(payload) > maxHeaderBlock {
		return false, fmt.Errorf("header block over %d bytes", maxHeaderBlock)
	}
	hb.frag = append(hb.frag, payload...)
	return h.flags&flagEndHeaders != 0, nil
}

// finish ends the block and returns its encoded fields.
func (hb *headerBlock) finish() []byte {
	hb.active = false
	f := hb.frag
	if cap(hb.frag) > 64<<10 {
		hb.frag = nil
	}
	return f
}

// appendFrames appends the block, re-encoded as block, as a HEADERS (or
// PUSH_PROMISE) frame and as many CONTINUATION frames as it needs. Padding
// is dropped; END_STREAM and priority are kept.
func (hb *headerBlock) appendFrames(out, block []byte) []byte {
	prefix := hb.priority
	if hb.typ == framePushPromise {
		prefix = hb.promised
	}
	var flags uint8
	if hb.endStream {
		flags |= flagEndStream
	}
	if hb.priority != nil {
		flags |= flagPriority
	}
	typ := hb.typ
	room := maxFragment - len(prefix)
	for first := true; first || len(block) > 0; first = false {
		n := min(room, len(block))
		f := flags
		if n == len(block) {
			f |= flagEndHeaders
		}
		out = appendFrameHeader(out, len(prefix)+n, typ, f, hb.stream)
		out = append(out, prefix...)
		out = append(out, block[:n]...)
		block = block[n:]
		typ, flags, prefix, room = frameContinuation, 0, nil, maxFragment
	}
	return out
}

// transcoder decodes header blocks in one peer's compression context and
// re-encodes them for the other peer. Its encoder never uses the dynamic
// table, so whatever table size the receiving peer allows is respected.
type transcoder struct {
	dec      *hpack.Decoder
	allowed  uint32 // the decoder's current allowed table size
	fields   []hpack.HeaderField
	size     int
	overflow bool

	enc    *hpack.Encoder
	encBuf bytes.Buffer
}

func newTranscoder() *transcoder {
	t := &transcoder{allowed: defaultTableSize}
	t.dec = hpack.NewDecoder(defaultTableSize, t.emit)
	t.dec.SetMaxStringLength(maxHeaderList)
	t.enc = hpack.NewEncoder(&t.encBuf)
	t.enc.SetMaxDynamicTableSizeLimit(0)
	return t
}

func (t *transcoder) emit(f hpack.HeaderField) {
	t.size += int(f.Size())
	if t.size > maxHeaderList {
		t.overflow = true
		return
	}
	t.fields = append(t.fields, f)
}

// allow lets the decoder accept dynamic table size updates up to v: the
// peer whose blocks it decodes may use any size its own peer advertised.
func (t *transcoder) allow(v uint32) {
	if v > t.allowed {
		t.allowed = v
		t.dec.SetAllowedMaxDynamicTableSize(v)
	}
}

// decode decodes one complete header block. The result is valid until the
// next call.
func (t *transcoder) decode(block []byte) ([]hpack.HeaderField, error) {
	t.fields, t.size, t.overflow = t.fields[:0], 0, false
	if _, err := t.dec.Write(block); err != nil {
		return nil, fmt.Errorf("decoding header block: %w", err)
	}
	if err := t.dec.Close(); err != nil {
		return nil, fmt.Errorf("decoding header block: %w", err)
	}
	if t.overflow {
		return nil, fmt.Errorf("decoded header list over %d bytes", maxHeaderList)
	}
	return t.fields, nil
}

// encode encodes fields; the result is valid until the next call.
func (t *transcoder) encode(fields []hpack.HeaderField) []byte {
	t.encBuf.Reset()
	for _, f := range fields {
		t.enc.WriteField(f) // writes to a bytes.Buffer cannot fail
	}
	return t.encBuf.Bytes()
}

// dataLen is the length of a DATA frame's data: its payload less padding.
func dataLen(h frameHeader, payload []byte) int {
	if h.flags&flagPadded == 0 || len(payload) == 0 {
		return len(payload)
	}
	return max(len(payload)-1-int(payload[0]), 0)
}

// informational reports whether a response header block is a 1xx
// response, which a final response follows.
func informational(fields []hpack.HeaderField) bool {
	for _, f := range fields {
		if f.Name == ":status" {
			return len(f.Value) == 3 && f.Value[0] == '1'
		}
	}
	return false
}

// held returns the bytes the parser holds back (a partial frame).
func (p *frameParser) held() []byte {
	if p.inFrame {
		return append(bytes.Clone(p.hdr[:]), p.payload...)
	}
	return bytes.Clone(p.hdr[:p.nhdr])
}
