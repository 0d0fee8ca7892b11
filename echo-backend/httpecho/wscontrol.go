package httpecho

// WebSocket controls for the connection timeout tests: a /ws request with
// ?gatewitness-ws=<mode> is upgraded by hand, so the handler holds the TCP
// connection and can half-close it, and is recorded in the ledger under
// its request id:
//
//	gatewitness-ws=halfclose  right after the 101 the backend shuts its writes
//	                        (TCP FIN) and waits for its peer to close; the
//	                        attempt's headersSent is the moment of the
//	                        half-close and ended the moment the peer closed
//	gatewitness-ws=hold       the backend reads and drops what arrives and,
//	                        after its peer half-closes, keeps the connection
//	                        open without a byte for wsHoldAfterFin (a peer's
//	                        later close cannot be seen without writing);
//	                        ended is the peer's half-close
//
// Both modes end after wsHoldLimit at most. Without gatewitness-ws, /ws is
// echo-basic's echoing WebSocket.

import (
	"crypto/sha1"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/gatewitness/gatewitness/contract/echowire"
	"github.com/gatewitness/gatewitness/echo-backend/ledger"
)

// WSModeQuery is the query parameter that selects a WebSocket control mode
// (echowire.WSHalfClose or echowire.WSHold).
const WSModeQuery = echowire.WSModeQuery

// wsHoldLimit bounds how long a controlled WebSocket connection lives, and
// wsHoldAfterFin how long hold keeps it after the peer's half-close.
const (
	wsHoldLimit    = 2 * time.Minute
	wsHoldAfterFin = 30 * time.Second
)

// wsGUID is the key suffix of RFC 6455's Sec-WebSocket-Accept.
const wsGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

// serveWSControl serves a /ws request with a control mode.
func (h *handler) serveWSControl(w http.ResponseWriter, r *http.Request, mode string) {
	if mode != echowire.WSHalfClose && mode != echowire.WSHold {
		http.Error(w, fmt.Sprintf("%s=%q: accepted: %s or %s", WSModeQuery, mode, echowire.WSHalfClose, echowire.WSHold), http.StatusBadRequest)
		return
	}
	key := r.Header.Get("Sec-WebSocket-Key")
	if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") || key == "" {
		http.Error(w, "a WebSocket upgrade (Upgrade: websocket and Sec-WebSocket-Key) is required", http.StatusBadRequest)
		return
	}
	id := requestID(r)
	rec := h.opts.Ledger.Begin(id, ledger.Attempt{
		Arrived:  time.Now(),
		Listener: h.opts.Listener,
		Protocol: r.Proto,
		Method:   r.Method,
		Path:     r.RequestURI,
		Headers:  visibleHeaders(r.Header),
		Fault:    WSModeQuery + "=" + mode,
	})
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		rec.End(ledger.Rejected, time.Now())
		http.Error(w, "the connection cannot be taken over: "+err.Error(), http.StatusInternalServerError)
		return
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(wsHoldLimit))
	sum := sha1.Sum([]byte(key + wsGUID))
	fmt.Fprintf(brw, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n",
		base64.StdEncoding.EncodeToString(sum[:]))
	if err := brw.Flush(); err != nil {
		rec.End(ledger.Cancelled, time.Now())
		return
	}
	if mode == echowire.WSHalfClose {
		hc, ok := conn.(interface{ CloseWrite() error })
		if !ok || hc.CloseWrite() != nil {
			rec.End(ledger.Closed, time.Now())
			return
		}
	}
	rec.HeadersSent(time.Now())
	_, _ = io.Copy(io.Discard, brw.Reader)
	rec.End(ledger.Answered, time.Now())
	if mode == echowire.WSHold {
		// Stay open and silent: this is the behaviour under test, not a
		// wait for something to happen.
		t := time.NewTimer(wsHoldAfterFin)
		<-t.C
	}
}
