package httpecho_test

import (
	"bytes"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/gatecheck/gatecheck/echo-backend/fault"
)

// goAwayCode sends one GET with the fault spec over a hand-driven h2c
// connection (Go's client does not show the code of a GOAWAY that excludes
// the request) and returns the code of the GOAWAY the server sends.
func goAwayCode(t *testing.T, addr, spec string) http2.ErrCode {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(c, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(c, c)
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	for _, f := range [][2]string{
		{":method", "GET"}, {":scheme", "http"}, {":path", "/goaway"}, {":authority", addr},
		{strings.ToLower(fault.HeaderName), spec},
	} {
		enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	if err := fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: hb.Bytes(), EndHeaders: true, EndStream: true}); err != nil {
		t.Fatal(err)
	}
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatalf("%s: reading frames: %v, want a GOAWAY", spec, err)
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				fr.WriteSettingsAck()
			}
		case *http2.GoAwayFrame:
			if f.LastStreamID != 0 {
				t.Errorf("%s: GOAWAY last stream %d, want 0 (stream 1 excluded)", spec, f.LastStreamID)
			}
			return f.ErrCode
		case *http2.MetaHeadersFrame, *http2.RSTStreamFrame:
			t.Fatalf("%s: got %v, want a GOAWAY", spec, f)
		}
	}
}

// goaway sends NO_ERROR unless reset-code names a code, INTERNAL_ERROR
// included.
func TestGoAwayCode(t *testing.T) {
	e := newEnv(t)
	addr := strings.TrimPrefix(e.h2cURL, "http://")
	for _, tc := range []struct {
		spec string
		want http2.ErrCode
	}{
		{"goaway", http2.ErrCodeNo},
		{"goaway;reset-code=INTERNAL_ERROR", http2.ErrCodeInternal},
		{"goaway;reset-code=ENHANCE_YOUR_CALM", http2.ErrCodeEnhanceYourCalm},
	} {
		if got := goAwayCode(t, addr, tc.spec); got != tc.want {
			t.Errorf("%s: GOAWAY %v, want %v", tc.spec, got, tc.want)
		}
	}
}
