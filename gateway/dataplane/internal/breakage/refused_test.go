package breakage

import (
	"bytes"
	"net"
	"testing"

	"golang.org/x/net/http2"

	"github.com/gatewitness/gatewitness/gateway/dataplane/internal/part"
)

// passConn is a Relay whose Conn is the connection as accepted, as the
// data plane's own is.
type passConn struct{ part.Relay }

func (passConn) Conn(c net.Conn) net.Conn { return c }

// recordConn is a net.Conn that keeps what is written to it.
type recordConn struct {
	net.Conn
	out bytes.Buffer
}

func (c *recordConn) Write(p []byte) (int, error) { return c.out.Write(p) }

// TestRefusingConnRewritesHeaderlessResets writes a server's frames through
// refusingConn, whole and a byte at a time, and reads back the resets: an
// INTERNAL_ERROR reset of a stream that got no HEADERS leaves as
// REFUSED_STREAM; one of a stream that did, and any other code, unchanged.
func TestRefusingConnRewritesHeaderlessResets(t *testing.T) {
	var in bytes.Buffer
	fr := http2.NewFramer(&in, nil)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(fr.WriteSettings())
	must(fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: []byte{0x88}, EndHeaders: true}))
	must(fr.WriteData(1, false, []byte("message")))
	must(fr.WriteRSTStream(1, http2.ErrCodeInternal)) // answered: kept
	must(fr.WriteRSTStream(3, http2.ErrCodeInternal)) // no HEADERS: refused
	must(fr.WriteRSTStream(5, http2.ErrCodeCancel))   // another code: kept
	want := map[uint32]http2.ErrCode{1: http2.ErrCodeInternal, 3: http2.ErrCodeRefusedStream, 5: http2.ErrCodeCancel}

	for _, chunk := range []int{in.Len(), 1, 5} {
		rc := &recordConn{}
		c := refusesEarlyGRPCEnds{Relay: passConn{}}.Conn(rc)
		for p := in.Bytes(); len(p) > 0; {
			n := min(chunk, len(p))
			if _, err := c.Write(p[:n]); err != nil {
				t.Fatal(err)
			}
			p = p[n:]
		}
		if rc.out.Len() != in.Len() {
			t.Fatalf("chunks of %d: wrote %d bytes, want %d", chunk, rc.out.Len(), in.Len())
		}
		got := map[uint32]http2.ErrCode{}
		rd := http2.NewFramer(nil, &rc.out)
		for {
			f, err := rd.ReadFrame()
			if err != nil {
				break
			}
			if rst, ok := f.(*http2.RSTStreamFrame); ok {
				got[rst.StreamID] = rst.ErrCode
			}
		}
		for id, code := range want {
			if got[id] != code {
				t.Errorf("chunks of %d: stream %d reset with %v, want %v", chunk, id, got[id], code)
			}
		}
	}
}

// TestRefusingConnPassesHTTP1 leaves a connection that does not start with
// SETTINGS alone.
func TestRefusingConnPassesHTTP1(t *testing.T) {
	rc := &recordConn{}
	c := refusesEarlyGRPCEnds{Relay: passConn{}}.Conn(rc)
	msg := "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"
	if _, err := c.Write([]byte(msg)); err != nil || rc.out.String() != msg {
		t.Errorf("wrote %q (%v), want %q", rc.out.String(), err, msg)
	}
}
