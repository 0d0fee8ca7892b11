package httpecho

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/gatewitness/gatewitness/contract/echowire"
	"github.com/gatewitness/gatewitness/echo-backend/control"
)

const (
	gatewitnessPrefix = "/_gatewitness/"
	ledgerPrefix      = echowire.LedgerPath
)

// State is the answer of GET /_gatewitness/admin/state and of every admin
// POST: the switches as they are after it (the wire contract's type).
type State = echowire.AdminState

// TCPState is the TCP echo listener's switch.
type TCPState = echowire.AdminTCPState

// serveGatewitness routes /_gatewitness/.
func (h *handler) serveGatewitness(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	switch {
	case strings.HasPrefix(p, ledgerPrefix):
		h.serveLedger(w, r, strings.TrimPrefix(p, ledgerPrefix))
	case p == echowire.AdminHealthPath:
		if allow(w, r, http.MethodPost) {
			h.setHealth(w, r)
		}
	case p == echowire.AdminGRPCHealthPath:
		if allow(w, r, http.MethodPost) {
			h.setGRPCHealth(w, r)
		}
	case p == echowire.AdminTCPPath:
		if allow(w, r, http.MethodPost) {
			h.setTCP(w, r)
		}
	case p == echowire.AdminRefusePath:
		if allow(w, r, http.MethodPost) {
			h.setRefuse(w, r)
		}
	case p == echowire.AdminStatePath:
		if allow(w, r, http.MethodGet, http.MethodHead) {
			writeJSON(w, http.StatusOK, h.state(r))
		}
	default:
		writeError(w, http.StatusNotFound, fmt.Sprintf("path %q: accepted: /_gatewitness/ledger/{id}, "+
			"/_gatewitness/admin/health, /_gatewitness/admin/grpc-health, /_gatewitness/admin/tcp, /_gatewitness/admin/refuse or /_gatewitness/admin/state", p))
	}
}

// allow reports whether r's method is one of methods, and answers 405 if not.
func allow(w http.ResponseWriter, r *http.Request, methods ...string) bool {
	for _, m := range methods {
		if r.Method == m {
			return true
		}
	}
	w.Header().Set("Allow", strings.Join(methods, ", "))
	writeError(w, http.StatusMethodNotAllowed, fmt.Sprintf("method %s on %s: accepted: %s", r.Method, r.URL.Path, strings.Join(methods, " or ")))
	return false
}

// serveLedger answers GET (the entry) and DELETE (forget it) for one id.
func (h *handler) serveLedger(w http.ResponseWriter, r *http.Request, id string) {
	if !allow(w, r, http.MethodGet, http.MethodHead, http.MethodDelete) {
		return
	}
	if id == "" {
		writeError(w, http.StatusBadRequest, "ledger path: accepted: /_gatewitness/ledger/{id} with a non-empty request id")
		return
	}
	if r.Method == http.MethodDelete {
		h.opts.Ledger.Delete(id)
		w.WriteHeader(http.StatusNoContent)
		return
	}
	e, ok := h.opts.Ledger.Get(id)
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("request id %q: no attempt recorded (never seen, expired or deleted)", id))
		return
	}
	writeJSON(w, http.StatusOK, e)
}

func (h *handler) setHealth(w http.ResponseWriter, r *http.Request) {
	v := r.URL.Query().Get(echowire.AdminStatusQuery)
	code, err := strconv.Atoi(v)
	if err != nil {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("query parameter status=%q: accepted: an HTTP status code from 200 to 599", v))
		return
	}
	if err := h.opts.Controls.SetHTTPHealth(code); err != nil {
		writeError(w, http.StatusBadRequest, "query parameter status: "+err.Error())
		return
	}
	writeJSON(w, http.StatusOK, h.state(r))
}

func (h *handler) setGRPCHealth(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	v := q.Get(echowire.AdminStatusQuery)
	st, ok := healthpb.HealthCheckResponse_ServingStatus_value[strings.ToUpper(v)]
	if !ok {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("query parameter status=%q: accepted: SERVING, NOT_SERVING, UNKNOWN or SERVICE_UNKNOWN", v))
		return
	}
	if err := h.opts.Controls.SetGRPCHealth(q.Get(echowire.AdminServiceQuery), healthpb.HealthCheckResponse_ServingStatus(st)); err != nil {
		writeError(w, http.StatusBadRequest, "query parameters service and status: "+err.Error())
		return
	}
	writeJSON(w, http.StatusOK, h.state(r))
}

func (h *handler) setTCP(w http.ResponseWriter, r *http.Request) {
	v := r.URL.Query().Get(echowire.AdminOpenQuery)
	open, err := strconv.ParseBool(v)
	if err != nil {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("query parameter open=%q: accepted: true or false", v))
		return
	}
	if err := h.opts.Controls.SetTCPOpen(open); err != nil {
		code := http.StatusInternalServerError
		if errors.Is(err, control.ErrNoTCP) {
			code = http.StatusConflict
		}
		writeError(w, code, fmt.Sprintf("setting the TCP listener open=%t: %v", open, err))
		return
	}
	writeJSON(w, http.StatusOK, h.state(r))
}

func (h *handler) setRefuse(w http.ResponseWriter, r *http.Request) {
	v := r.URL.Query().Get(echowire.AdminConnectionsQuery)
	n, err := strconv.Atoi(v)
	if err != nil {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("query parameter connections=%q: accepted: a count from 0 to %d", v, control.MaxRefusals))
		return
	}
	if err := h.opts.Controls.RefuseConnections(n); err != nil {
		writeError(w, http.StatusBadRequest, "query parameter connections: "+err.Error())
		return
	}
	// A proxy must not send its next request on this connection: the
	// refusal is of the next connection it opens.
	w.Header().Set("Connection", "close")
	writeJSON(w, http.StatusOK, h.state(r))
}

// state reads the switches; the gRPC services reported are those the
// controls know and those named by r's service= parameters.
func (h *handler) state(r *http.Request) State {
	c := h.opts.Controls
	s := State{HTTPHealth: c.HTTPHealth(), GRPCHealth: c.GRPCServices()}
	s.TCP.Open, s.TCP.Present = c.TCPOpen()
	s.Refuse.Pending, s.Refuse.Refused = c.Refusals()
	for _, name := range r.URL.Query()[echowire.AdminServiceQuery] {
		if _, ok := s.GRPCHealth[name]; !ok {
			s.GRPCHealth[name] = c.GRPCStatus(name)
		}
	}
	return s
}
