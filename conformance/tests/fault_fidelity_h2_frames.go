package tests

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/gatewitness/gatewitness/contract/echowire"
	"github.com/gatewitness/gatewitness/internal/rawgrpc"
)

// h2StreamEnd is how one HTTP/2 response stream ended, as the frames on
// the wire said: what the Go client's body reader reports (it checks a
// Content-Length itself) is not what is checked.
type h2StreamEnd struct {
	Status string // the :status of the response HEADERS, "" if none came
	// ContentLength is the response's content-length header, "" if none.
	ContentLength string
	DataBytes     int // DATA payload bytes received on the stream
	// How the stream ended: "END_STREAM" (the response complete), "RST_STREAM <code>",
	// "GOAWAY <code>" or "connection closed" (the stream cut), or "" if the test gave up.
	End string
}

// complete reports whether the stream ended with END_STREAM, as a
// complete response does (RFC 9113 section 8.1).
func (e h2StreamEnd) complete() bool { return e.End == "END_STREAM" }

func (e h2StreamEnd) String() string {
	end := e.End
	if end == "" {
		end = "not ended when the test gave up"
	}
	status := e.Status
	if status == "" {
		status = "no HEADERS"
	}
	length := "no content-length"
	if e.ContentLength != "" {
		length = "content-length " + e.ContentLength
	}
	return fmt.Sprintf("frames: :status %s, %s, %d DATA bytes, stream %s", status, length, e.DataBytes, end)
}

// streamEnd sends GET path (with the fault spec) through via (viaH2C or
// viaTLS with ALPN h2) on a connection of its own, written frame by frame,
// and reads the frames of its stream until the stream ends or limit
// passes. ok is false when via offers no HTTP/2 (ALPN chose otherwise).
func (g *ffTarget) streamEnd(t *testing.T, via, path, id, fault string, limit time.Duration) (end h2StreamEnd, ok bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	addr, scheme := g.httpAddr, "http"
	if via == viaTLS {
		addr, scheme = g.httpsAddr, "https"
	}
	nc, err := g.dial(ctx, "tcp", addr)
	if err != nil {
		t.Fatalf("dialling %s for the frame-level request: %v", addr, err)
	}
	defer nc.Close()
	if via == viaTLS {
		tc := tls.Client(nc, &tls.Config{ServerName: g.host, InsecureSkipVerify: true, NextProtos: []string{"h2"}})
		if err := tc.HandshakeContext(ctx); err != nil {
			t.Fatalf("TLS handshake with %s: %v", addr, err)
		}
		if tc.ConnectionState().NegotiatedProtocol != "h2" {
			return end, false
		}
		nc = tc
	}
	deadline, _ := ctx.Deadline()
	_ = nc.SetDeadline(deadline)
	fr := http2.NewFramer(nc, nc)
	fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	var block bytes.Buffer
	enc := hpack.NewEncoder(&block)
	for _, f := range []hpack.HeaderField{{Name: ":method", Value: "GET"}, {Name: ":scheme", Value: scheme},
		{Name: ":authority", Value: g.host}, {Name: ":path", Value: path},
		{Name: strings.ToLower(echowire.IDHeader), Value: id}, {Name: strings.ToLower(echowire.FaultHeader), Value: fault}} {
		if err := enc.WriteField(f); err != nil {
			t.Fatalf("encoding %s: %v", f.Name, err)
		}
	}
	const stream = 1
	err = errors.Join(
		func() error { _, err := io.WriteString(nc, http2.ClientPreface); return err }(),
		fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1 << 30}),
		fr.WriteWindowUpdate(0, 1<<30),
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: stream, BlockFragment: block.Bytes(), EndHeaders: true, EndStream: true}))
	if err != nil {
		t.Fatalf("writing the frame-level request to %s: %v", addr, err)
	}
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			var ne net.Error
			if !errors.As(err, &ne) || !ne.Timeout() {
				end.End = "connection closed"
			}
			return end, true
		}
		if rawgrpc.AckControl(fr, f) {
			continue
		}
		switch f := f.(type) {
		case *http2.GoAwayFrame:
			if f.LastStreamID < stream || f.ErrCode != http2.ErrCodeNo {
				end.End = "GOAWAY " + f.ErrCode.String()
				return end, true
			}
		case *http2.MetaHeadersFrame:
			if f.StreamID == stream {
				if s := f.PseudoValue("status"); s != "" && end.Status == "" {
					end.Status, end.ContentLength = s, headerValue(f, "content-length")
				}
				if f.StreamEnded() {
					end.End = "END_STREAM"
					return end, true
				}
			}
		case *http2.DataFrame:
			if f.StreamID == stream {
				end.DataBytes += len(f.Data())
				if f.StreamEnded() {
					end.End = "END_STREAM"
					return end, true
				}
			}
		case *http2.RSTStreamFrame:
			if f.StreamID == stream {
				end.End = "RST_STREAM " + f.ErrCode.String()
				return end, true
			}
		}
	}
}

// headerValue is the value of the regular header field name in f, "" if
// none.
func headerValue(f *http2.MetaHeadersFrame, name string) string {
	for _, hf := range f.RegularFields() {
		if hf.Name == name {
			return hf.Value
		}
	}
	return ""
}
