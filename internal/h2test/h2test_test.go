package h2test_test

import (
	"bytes"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/gatewitness/gatewitness/internal/h2test"
)

// seen is what the test server read from the client.
type seen struct {
	fields []hpack.HeaderField
	data   []byte
	acked  bool // the client acknowledged the server's SETTINGS
	err    error
}

// serveOnce accepts one connection, reads the client's preface, SETTINGS,
// one HEADERS and, unless that ended the stream, one DATA frame; sends its
// own SETTINGS and waits for the acknowledgement; then lets answer write
// what the test wants and closes the connection.
func serveOnce(t *testing.T, answer func(*http2.Framer) error) (addr string, got <-chan seen) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	ch := make(chan seen, 1)
	go func() {
		var s seen
		defer func() { ch <- s }()
		nc, err := ln.Accept()
		if err != nil {
			s.err = err
			return
		}
		defer nc.Close()
		nc.SetDeadline(time.Now().Add(h2test.Timeout))
		preface := make([]byte, len(http2.ClientPreface))
		if _, err := io.ReadFull(nc, preface); err != nil || string(preface) != http2.ClientPreface {
			s.err = io.ErrUnexpectedEOF
			return
		}
		fr := http2.NewFramer(nc, nc)
		fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
		if err := fr.WriteSettings(); err != nil {
			s.err = err
			return
		}
		ended := false
		for !ended || !s.acked {
			f, err := fr.ReadFrame()
			if err != nil {
				s.err = err
				return
			}
			switch f := f.(type) {
			case *http2.SettingsFrame:
				if f.IsAck() {
					s.acked = true
				}
			case *http2.MetaHeadersFrame:
				s.fields = f.Fields
				ended = f.StreamEnded()
			case *http2.DataFrame:
				s.data = bytes.Clone(f.Data())
				ended = f.StreamEnded()
			}
		}
		s.err = answer(fr)
	}()
	return ln.Addr().String(), ch
}

func wait(t *testing.T, got <-chan seen) seen {
	t.Helper()
	select {
	case s := <-got:
		return s
	case <-time.After(h2test.Timeout):
		t.Fatal("the test server did not finish")
		return seen{}
	}
}

func TestReadGoAway(t *testing.T) {
	addr, got := serveOnce(t, func(fr *http2.Framer) error {
		return fr.WriteGoAway(0, http2.ErrCodeEnhanceYourCalm, nil)
	})
	c := h2test.Dial(t, addr)
	c.WriteHeaders(1, false, ":method", "POST", ":path", "/p", "x-id", "42")
	c.WriteData(1, true, []byte("body"))
	ga, err := c.ReadGoAway()
	if err != nil {
		t.Fatalf("ReadGoAway: %v", err)
	}
	if ga.ErrCode != http2.ErrCodeEnhanceYourCalm || ga.LastStreamID != 0 {
		t.Errorf("GOAWAY %v, last stream %d; want ENHANCE_YOUR_CALM, 0", ga.ErrCode, ga.LastStreamID)
	}
	s := wait(t, got)
	if s.err != nil {
		t.Fatalf("server: %v", s.err)
	}
	want := []hpack.HeaderField{{Name: ":method", Value: "POST"}, {Name: ":path", Value: "/p"}, {Name: "x-id", Value: "42"}}
	if len(s.fields) != len(want) {
		t.Fatalf("server read fields %v, want %v", s.fields, want)
	}
	for i := range want {
		if s.fields[i].Name != want[i].Name || s.fields[i].Value != want[i].Value {
			t.Errorf("field %d: %v, want %v", i, s.fields[i], want[i])
		}
	}
	if string(s.data) != "body" {
		t.Errorf("server read data %q, want %q", s.data, "body")
	}
}

func TestReadGoAwayRefusesOtherEndings(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer func(*http2.Framer) error
		want   string
	}{
		{"response headers", func(fr *http2.Framer) error {
			var b bytes.Buffer
			hpack.NewEncoder(&b).WriteField(hpack.HeaderField{Name: ":status", Value: "200"})
			return fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: b.Bytes(), EndHeaders: true})
		}, "stream 1 got response headers (status 200)"},
		{"reset", func(fr *http2.Framer) error {
			return fr.WriteRSTStream(1, http2.ErrCodeCancel)
		}, "stream 1 was reset with CANCEL"},
		{"close", func(*http2.Framer) error { return nil }, "reading frames: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr, got := serveOnce(t, tc.answer)
			c := h2test.Dial(t, addr)
			c.WriteHeaders(1, true, ":method", "GET", ":path", "/")
			ga, err := c.ReadGoAway()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("ReadGoAway = %v, %v; want an error saying %q", ga, err, tc.want)
			}
			if s := wait(t, got); s.err != nil {
				t.Errorf("server: %v", s.err)
			}
		})
	}
}
