// Package httpecho is the echo-backend's HTTP side: one http.Handler served
// on the HTTP (3000), h2c (3001) and HTTPS (8443) ports.
//
// It answers as echo-basic does, so the upstream conformance helpers work
// unchanged: a JSON echo of the request (Echo), "?delay=", "/status/N",
// "/retry", "/health", "/ws" and the X-Echo-Set-Header request header. On
// top of that it speaks the fault vocabulary of package fault and records
// every attempt of a request id in the ledger:
//
//	X-Gatewitness-Id: <id>             or ?gatewitness-id=<id>
//	X-Gatewitness-Fault: <directives>  or ?gatewitness-fault=<directives>
//
// For each attempt the handler records the arrival, reads the request body
// (up to MaxBodyBytes; a larger body is answered 413), looks up the action
// for the attempt's number and carries it out in this order: delay, then a
// reset, GOAWAY or close "before headers", then the response headers with
// the chosen status, body-delay, the body (in Chunks flushed writes spaced
// by Interval, or cut short by a mid-body reset) and the trailers. Every
// delay and write stops as soon as the client or proxy goes away, and the
// attempt is then recorded as cancelled.
//
// Resets, GOAWAY and closes act on the transport: on HTTP/1.1 the handler
// hijacks the connection and closes it, with SO_LINGER 0 for a reset (the
// peer sees a TCP RST) or gracefully for a close; on HTTP/2 it goes through
// the h2tap connection the request came on (RST_STREAM with the chosen code,
// GOAWAY, or closing the connection). HTTP/2 ports must therefore be served
// through h2tap: NewServer and ServeTLS do that.
//
// The ledger and the run-time switches are served under /_gatewitness/:
//
//	GET    /_gatewitness/ledger/{id}    the id's ledger.Entry as JSON (404 if unknown)
//	DELETE /_gatewitness/ledger/{id}    forget the id
//	POST   /_gatewitness/admin/health?status=503
//	POST   /_gatewitness/admin/grpc-health?service=foo&status=NOT_SERVING
//	POST   /_gatewitness/admin/tcp?open=false
//	POST   /_gatewitness/admin/refuse?connections=1   reset the next connection (backend.go's listeners)
//	GET    /_gatewitness/admin/state    the current switches as JSON
//
// "/ws?gatewitness-ws=halfclose" and "/ws?gatewitness-ws=hold" are WebSockets
// that half-close, or outlast their peer's half-close, for the connection
// timeout tests (see wscontrol.go).
package httpecho

import (
	"io"
	"net/http"
	"strings"

	"golang.org/x/net/websocket"

	"github.com/gatewitness/gatewitness/echo-backend/control"
	"github.com/gatewitness/gatewitness/echo-backend/fault"
	"github.com/gatewitness/gatewitness/echo-backend/ledger"
	"github.com/gatewitness/gatewitness/echo-backend/podinfo"
)

// MaxBodyBytes bounds the request body the handler reads (and digests) per
// attempt. A larger body is answered 413 and recorded as rejected.
const MaxBodyBytes = 10 << 20

// Options configure the handler of one port.
type Options struct {
	Pod      podinfo.Info
	HTTPPort string // echoed as httpPort, like echo-basic

	// Ledger records the attempts; nil gets a private ledger with default
	// bounds that lives as long as the process.
	Ledger *ledger.Ledger
	// Controls are the run-time switches (/health and the admin
	// endpoints); nil gets private controls.
	Controls *control.Controls
	// Limits bound what a fault spec may ask for; zero fields take
	// fault.DefaultLimits.
	Limits fault.Limits

	// Listener is the ledger name of this port: "http", "h2c" or "https".
	Listener string
	// RequireH2C makes the handler answer 400 to requests that are neither
	// HTTP/2 nor an h2c upgrade, as echo-basic's h2c port does.
	RequireH2C bool

	// Log, when set, gets echo-basic's line for every echoed request,
	// "Echoing back request made to <RequestURI> to client (<RemoteAddr>)",
	// in one Write per request; upstream's mirror tests look for it in the
	// pod's log. It must be safe for concurrent use (an *os.File is). Nil
	// logs nothing.
	Log io.Writer

	// Timeouts bound slow and silent clients; zero fields take their
	// defaults (Timeouts.WithDefaults). The handler applies Read; NewServer
	// the others.
	Timeouts Timeouts
	// ErrorLog gets the server's own errors (NewServer): io.Discard
	// silences them; nil leaves net/http's default, the standard logger.
	ErrorLog io.Writer
}

// handler serves one port.
type handler struct {
	opts  Options
	mux   *http.ServeMux
	retry retrySim
}

// NewHandler returns the handler for one port.
func NewHandler(opts Options) http.Handler {
	if opts.Ledger == nil {
		opts.Ledger = ledger.New(ledger.Options{})
	}
	if opts.Controls == nil {
		opts.Controls = control.New()
	}
	opts.Timeouts = opts.Timeouts.WithDefaults(opts.Limits)
	h := &handler{opts: opts, mux: http.NewServeMux()}
	h.retry = retrySim{h: h}

	// The routes echo-basic registers, plus "/retry" without the slash
	// (echo-basic would redirect it) and ours under /_gatewitness/.
	h.mux.HandleFunc("/health", h.serveHealth)
	h.mux.HandleFunc("/status/", h.serveStatus)
	h.mux.HandleFunc("/retry", h.retry.serve)
	h.mux.HandleFunc("/retry/", h.retry.serve)
	ws := websocket.Handler(serveWebSocket)
	h.mux.HandleFunc("/ws", func(w http.ResponseWriter, r *http.Request) {
		if mode := r.URL.Query().Get(WSModeQuery); mode != "" {
			h.serveWSControl(w, r, mode) // wscontrol.go
			return
		}
		ws.ServeHTTP(w, r)
	})
	h.mux.HandleFunc("/_gatewitness/", h.serveGatewitness)
	h.mux.HandleFunc("/", h.serveEcho)
	return h
}

// ServeHTTP folds "//" in the path to "/" as echo-basic does and routes the
// request.
func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.opts.RequireH2C && r.ProtoMajor != 2 && r.Header.Get("Upgrade") != "h2c" {
		w.WriteHeader(http.StatusBadRequest)
		w.Write([]byte("Expected h2c request"))
		return
	}
	r.URL.Path = strings.ReplaceAll(r.URL.Path, "//", "/")
	if echoesDirectly(r) {
		h.serveEcho(w, r) // what the mux would do, without its lookup
		return
	}
	h.mux.ServeHTTP(w, r)
}

// routePrefixes start every path that NewHandler's mux sends elsewhere than
// to serveEcho (its patterns other than "/", without the trailing slash),
// or redirects to such a pattern.
var routePrefixes = []string{"/health", "/status", "/retry", "/ws", "/_gatewitness"}

// echoesDirectly reports whether the mux would hand r to serveEcho as is:
// not a CONNECT (which the mux routes by r.Host), a path in its plain
// encoding that the mux would not clean and redirect (no "//", "/." or
// "/.." in it), and that starts with none of routePrefixes. Anything else
// goes through the mux; TestEchoesDirectlyAgreesWithMux holds the two
// together. The mux's lookup cost two allocations per echo.
func echoesDirectly(r *http.Request) bool {
	p := r.URL.Path
	if r.Method == http.MethodConnect || r.URL.RawPath != "" || !strings.HasPrefix(p, "/") ||
		strings.Contains(p, "//") || strings.Contains(p, "/.") {
		return false
	}
	for _, prefix := range routePrefixes {
		if strings.HasPrefix(p, prefix) {
			return false
		}
	}
	return true
}

// serveHealth answers /health with the status the controls hold.
func (h *handler) serveHealth(w http.ResponseWriter, r *http.Request) {
	code := h.opts.Controls.HTTPHealth()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	if code >= 200 && code < 300 {
		w.Write([]byte("OK"))
	} else {
		w.Write([]byte(http.StatusText(code)))
	}
}

// serveWebSocket echoes every frame back until the client goes away.
func serveWebSocket(ws *websocket.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := ws.Read(buf)
		if n > 0 {
			if _, werr := ws.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
