package dataplane_test

import (
	"bytes"
	"io"
	"net/http"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/gatewitness/gatewitness/gateway/dataplane"
	"github.com/gatewitness/gatewitness/internal/h2test"
)

// floods are the frames that do no work, each sent by a client as fast
// as it can write them: the gateway must end the connection with GOAWAY
// ENHANCE_YOUR_CALM.
var floods = map[string]func(c *h2test.Conn, i int) error{
	"SETTINGS":      func(c *h2test.Conn, _ int) error { return c.Framer.WriteSettings() },
	"PING":          func(c *h2test.Conn, i int) error { return c.Framer.WritePing(false, [8]byte{byte(i)}) },
	"WINDOW_UPDATE": func(c *h2test.Conn, _ int) error { return c.Framer.WriteWindowUpdate(0, 1) },
	"PRIORITY": func(c *h2test.Conn, i int) error {
		return c.Framer.WritePriority(uint32(2*i+1), http2.PriorityParam{Weight: 15})
	},
	// On a stream whose request is still open (see the setup below).
	"empty DATA":         func(c *h2test.Conn, _ int) error { return c.Framer.WriteData(1, false, nil) },
	"empty CONTINUATION": func(c *h2test.Conn, _ int) error { return c.Framer.WriteContinuation(3, false, nil) },
	// Rapid reset: a request, then its reset at once.
	"rapid reset": func(c *h2test.Conn, i int) error {
		id := uint32(2*i + 5)
		p := http2.HeadersFrameParam{StreamID: id, BlockFragment: smallGET, EndStream: true, EndHeaders: true}
		if err := c.Framer.WriteHeaders(p); err != nil {
			return err
		}
		return c.Framer.WriteRSTStream(id, http2.ErrCodeCancel)
	},
}

// smallGET is the header block of GET http://gw.test/small.
var smallGET = func() []byte {
	var b bytes.Buffer
	enc := hpack.NewEncoder(&b)
	for _, f := range [][2]string{{":method", "GET"}, {":scheme", "http"}, {":authority", "gw.test"}, {":path", "/small"}} {
		_ = enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	return b.Bytes()
}()

func TestFramesThatDoNoWorkEndTheConnection(t *testing.T) {
	gw := stallGateway(t, dataplane.Limits{}, 1<<10)
	for name, send := range floods {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := h2test.Dial(t, gw)
			// Stream 1: a POST whose body is still to come (for empty
			// DATA); stream 3: a HEADERS frame without END_HEADERS (for
			// empty CONTINUATION).
			switch name {
			case "empty DATA":
				c.WriteHeaders(1, false, ":method", "POST", ":scheme", "http", ":authority", "gw.test", ":path", "/small")
			case "empty CONTINUATION":
				if err := c.Framer.WriteHeaders(http2.HeadersFrameParam{StreamID: 3, BlockFragment: []byte{0x82}}); err != nil {
					t.Fatal(err)
				}
			}
			const frames = 20 * dataplane.DefaultIdleFrameBurst
			go func() {
				for i := range frames {
					if send(c, i) != nil {
						return // the gateway closed the connection
					}
				}
			}()
			for {
				f, err := c.Framer.ReadFrame()
				if err != nil {
					t.Fatalf("the connection ended without a GOAWAY: %v", err)
				}
				if ga, ok := f.(*http2.GoAwayFrame); ok {
					if ga.ErrCode != http2.ErrCodeEnhanceYourCalm {
						t.Errorf("GOAWAY %v, want ENHANCE_YOUR_CALM", ga.ErrCode)
					}
					return
				}
			}
		})
	}
}

// TestFrameGuardSparesBusyClients: window updates answering a large
// download, and many requests on one connection, are work the guard
// credits, even with a small bucket.
func TestFrameGuardSparesBusyClients(t *testing.T) {
	gw := stallGateway(t, dataplane.Limits{IdleFrameBurst: 20, IdleFrameRate: 1}, 16<<20)
	p := new(http.Protocols)
	p.SetUnencryptedHTTP2(true)
	client := &http.Client{Transport: &http.Transport{Protocols: p}, Timeout: 30 * time.Second}
	defer client.CloseIdleConnections()
	get := func(path string) int64 {
		resp, err := client.Get("http://" + gw + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		n, err := io.Copy(io.Discard, resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: status %d, %d bytes, %v", path, resp.StatusCode, n, err)
		}
		return n
	}
	if n := get("/big"); n != 16<<20 {
		t.Errorf("the download got %d bytes, want %d", n, 16<<20)
	}
	for range 500 {
		get("/small")
	}
}

// TestFrameGuardOff: with IdleFrameBurst negative, a burst of SETTINGS
// far over the default leaves the connection serving.
func TestFrameGuardOff(t *testing.T) {
	gw := stallGateway(t, dataplane.Limits{IdleFrameBurst: -1}, 1<<10)
	c := h2test.Dial(t, gw)
	for range 3 * dataplane.DefaultIdleFrameBurst {
		if err := c.Framer.WriteSettings(); err != nil {
			t.Fatal(err)
		}
	}
	c.WriteHeaders(1, true, ":method", "GET", ":scheme", "http", ":authority", "gw.test", ":path", "/small")
	for {
		f, err := c.Framer.ReadFrame()
		if err != nil {
			t.Fatalf("the connection ended with the guard off: %v", err)
		}
		switch f := f.(type) {
		case *http2.GoAwayFrame:
			t.Fatalf("GOAWAY %v with the guard off", f.ErrCode)
		case *http2.MetaHeadersFrame:
			if got := f.PseudoValue("status"); got != "200" {
				t.Errorf("status %s, want 200", got)
			}
			return
		}
	}
}
