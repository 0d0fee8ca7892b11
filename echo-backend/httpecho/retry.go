package httpecho

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/gatewitness/gatewitness/echo-backend/fault"
)

// retrySim is echo-basic's flaky backend:
//
//	/retry?uuid=U&succeedAfter=N[&responseCode=C][&delayRetry=D][&delay=D2]
//
// The first N attempts of uuid U fail, each after waiting D: with status C
// and no body when responseCode is given, otherwise with a TCP RST (an
// RST_STREAM on HTTP/2). Later attempts are echoed (after ?delay=, if any).
//
// Unlike echo-basic, which holds one lock over every uuid and its sleeps,
// the attempts are counted in the ledger under the id "retry/"+U, so uuids
// never wait on each other, and the attempts can be read back from
// /_gatewitness/ledger/retry/U. The fault vocabulary does not apply here.
type retrySim struct {
	h *handler
}

func (s retrySim) serve(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	uuid := q.Get("uuid")
	if uuid == "" {
		writeError(w, http.StatusBadRequest, "query parameter uuid: required: any non-empty text naming the simulated request")
		return
	}
	succeedAfter, err := strconv.Atoi(q.Get("succeedAfter"))
	if err != nil || succeedAfter < 0 {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("query parameter succeedAfter=%q: required: a whole number of attempts to fail, 0 or more", q.Get("succeedAfter")))
		return
	}
	fail := fault.Action{Reset: fault.ResetBeforeHeaders, ResetCode: fault.DefaultResetCode}
	if v := q.Get("responseCode"); v != "" {
		code, err := strconv.Atoi(v)
		if err != nil || code < 200 || code > 599 {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("query parameter responseCode=%q: accepted: an HTTP status from 200 to 599, or none for a connection reset", v))
			return
		}
		fail = fault.Action{Status: code}
	}
	if v := q.Get("delayRetry"); v != "" {
		d, err := parseDelay("delayRetry", v, s.h.opts.Limits)
		if err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
		fail.Delay = d
	}
	s.h.serveAttempt(w, r, route{
		status: http.StatusOK,
		id:     "retry/" + uuid,
		choose: func(n int) (fault.Action, bool) {
			if n <= succeedAfter {
				return fail, true
			}
			return fault.Action{}, false
		},
	})
}
