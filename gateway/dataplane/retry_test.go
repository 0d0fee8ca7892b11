package dataplane_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatewitness/gatewitness/contract/echowire"
	echobackend "github.com/gatewitness/gatewitness/echo-backend"
	"github.com/gatewitness/gatewitness/echo-backend/ledger"
	"github.com/gatewitness/gatewitness/gateway/dataplane"
	"github.com/gatewitness/gatewitness/gateway/ir"
)

// startEcho starts an in-process echo-backend serving HTTP/1.1 and h2c on
// loopback ports.
func startEcho(t testing.TB) *echobackend.Backend {
	t.Helper()
	eb, err := echobackend.Start(echobackend.Config{Host: "127.0.0.1", HTTPPort: "0", H2CPort: "0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eb.Close() })
	return eb
}

// echoRef is a weight-1 Backend for the echo-backends' HTTP/1.1 ports, or
// their h2c ports with appProtocol kubernetes.io/h2c.
func echoRef(name string, h2c bool, ebs ...*echobackend.Backend) ir.Backend {
	ref := ir.Backend{Name: "default/" + name + ":8080", Weight: 1}
	for _, eb := range ebs {
		if h2c {
			ref.Endpoints = append(ref.Endpoints, eb.Addr(echobackend.ListenerH2C))
		} else {
			ref.Endpoints = append(ref.Endpoints, eb.Addr(echobackend.ListenerHTTP))
		}
	}
	if h2c {
		ref.AppProtocol = "kubernetes.io/h2c"
	}
	return ref
}

// retryRule is a PathPrefix rule with a retry stanza; a negative attempts
// and an empty backoff leave those fields unset.
func retryRule(prefix string, codes []int, attempts int, backoff string, backends ...ir.Backend) ir.HTTPRule {
	r := prefixRule(prefix, nil, backends...)
	r.Retry = &gwv1.HTTPRouteRetry{}
	for _, c := range codes {
		r.Retry.Codes = append(r.Retry.Codes, gwv1.HTTPRouteRetryStatusCode(c))
	}
	if attempts >= 0 {
		r.Retry.Attempts = ptr(attempts)
	}
	if backoff != "" {
		r.Retry.Backoff = ptr(gwv1.Duration(backoff))
	}
	return r
}

// withTimeouts sets a rule's timeouts; "" leaves a field unset.
func withTimeouts(r ir.HTTPRule, request, backendRequest string) ir.HTTPRule {
	r.Timeouts = &gwv1.HTTPRouteTimeouts{}
	if request != "" {
		r.Timeouts.Request = ptr(gwv1.Duration(request))
	}
	if backendRequest != "" {
		r.Timeouts.BackendRequest = ptr(gwv1.Duration(backendRequest))
	}
	return r
}

// send sends one request carrying a request id and a fault spec and returns
// the status; a nil body sends none, a body of unknown length is sent
// chunked.
func send(t *testing.T, method, addr, path, id, spec string, body io.Reader) int {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+addr+path, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = "gw.test"
	req.Header.Set(echowire.IDHeader, id)
	if spec != "" {
		req.Header.Set(echowire.FaultHeader, spec)
	}
	resp, _ := do(t, req)
	return resp.StatusCode
}

// ledgerAttempts waits until the backends' ledgers hold at least want
// attempts of id, all ended, and returns them (of several backends, in
// arrival order). It fails the test when they do not show up in time or
// when there are more than want.
func ledgerAttempts(t *testing.T, id string, want int, ebs ...*echobackend.Backend) []ledger.Attempt {
	t.Helper()
	deadline := time.Now().Add(tolerance)
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for {
		var all []ledger.Attempt
		ended := true
		for _, eb := range ebs {
			e, _ := eb.Ledger().Get(id)
			for _, a := range e.Attempts {
				ended = ended && a.Ended != nil
				all = append(all, a)
			}
		}
		if len(all) >= want && ended {
			sortByArrival(all)
			if len(all) != want {
				t.Errorf("id %s: the backends saw %d attempts, want %d: %s", id, len(all), want, describe(all))
			}
			return all
		}
		if time.Now().After(deadline) {
			t.Fatalf("id %s: after %v the backends hold %s, want %d ended attempts", id, tolerance, describe(all), want)
		}
		<-tick.C
	}
}

func sortByArrival(as []ledger.Attempt) {
	for i := 1; i < len(as); i++ {
		for j := i; j > 0 && as[j].Arrived.Before(as[j-1].Arrived); j-- {
			as[j], as[j-1] = as[j-1], as[j]
		}
	}
}

func describe(as []ledger.Attempt) string {
	var parts []string
	for _, a := range as {
		parts = append(parts, fmt.Sprintf("#%d %s status %d", a.Number, a.Outcome, a.Status))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// gaps returns, for each attempt after the first, the time from the end of
// the attempt before it to its arrival, by the backend's clock.
func gaps(as []ledger.Attempt) []time.Duration {
	var gs []time.Duration
	for i := 1; i < len(as); i++ {
		gs = append(gs, as[i].Arrived.Sub(*as[i-1].Ended))
	}
	return gs
}

// TestRetryCodes: only the listed codes are retried, as often as attempts
// allows, and the client gets the backend's last status; unlisted codes,
// 404 and rules without a retry stanza make one attempt.
func TestRetryCodes(t *testing.T) {
	for _, h2c := range []bool{false, true} {
		t.Run(map[bool]string{false: "h1", true: "h2c"}[h2c], func(t *testing.T) {
			eb := startEcho(t)
			ref := echoRef("echo", h2c, eb)
			addr := mustAddr(t, startGateway(t, oneListener(route("r", 0, nil,
				retryRule("/gateway-errors", []int{500, 502, 503, 504}, 2, "0s", ref),
				retryRule("/only-500", []int{500}, 2, "0s", ref),
				prefixRule("/no-retry", nil, ref),
			))), 80)
			tests := []struct {
				path     string
				status   int // the fault's status on every attempt
				attempts int
			}{
				{"/gateway-errors", 500, 3},
				{"/gateway-errors", 502, 3},
				{"/gateway-errors", 503, 3},
				{"/gateway-errors", 504, 3},
				{"/gateway-errors", 501, 1},
				{"/gateway-errors", 404, 1},
				{"/gateway-errors", 429, 1},
				{"/only-500", 500, 3},
				{"/only-500", 503, 1},
				{"/no-retry", 500, 1},
				{"/no-retry", 503, 1},
			}
			for i, tc := range tests {
				id := fmt.Sprintf("codes-%d", i)
				got := send(t, http.MethodGet, addr, tc.path, id, fmt.Sprintf("status=%d", tc.status), nil)
				if got != tc.status {
					t.Errorf("%s status %d: the client got %d, want %d", tc.path, tc.status, got, tc.status)
				}
				for _, a := range ledgerAttempts(t, id, tc.attempts, eb) {
					if a.Status != tc.status || a.Outcome != ledger.Answered {
						t.Errorf("%s status %d: attempt %d %s with %d, want answered with %d", tc.path, tc.status, a.Number, a.Outcome, a.Status, tc.status)
					}
				}
			}
		})
	}
}

// TestRetryAttempts: attempts N recovers when the backend fails N times and
// fails after N+1 attempts with the status of the last one.
func TestRetryAttempts(t *testing.T) {
	eb := startEcho(t)
	ref := echoRef("echo", false, eb)
	addr := mustAddr(t, startGateway(t, oneListener(route("r", 0, nil,
		retryRule("/three", []int{500, 502, 503, 504}, 3, "0s", ref),
		retryRule("/zero", []int{503}, 0, "0s", ref),
		retryRule("/default", []int{503}, -1, "0s", ref),
	))), 80)
	tests := []struct {
		path, spec string
		status     int
		attempts   int
	}{
		{"/three", "fail=3;status=503", 200, 4},
		{"/three", "fail=4;status=503", 503, 4},
		// The answer is the last attempt's, not the first's.
		{"/three", "script=500|502|503|504|ok", 504, 4},
		{"/three", "script=503|ok", 200, 2},
		{"/zero", "fail=1;status=503", 503, 1},
		// Without attempts the reference gateway retries once.
		{"/default", "fail=1;status=503", 200, 2},
		{"/default", "fail=2;status=503", 503, 2},
	}
	for i, tc := range tests {
		id := fmt.Sprintf("attempts-%d", i)
		if got := send(t, http.MethodGet, addr, tc.path, id, tc.spec, nil); got != tc.status {
			t.Errorf("%s %q: status %d, want %d", tc.path, tc.spec, got, tc.status)
		}
		ledgerAttempts(t, id, tc.attempts, eb)
	}
}

// TestRetryBackoff: under parallel load, no retry reaches the backend
// before the backoff has passed since the previous attempt ended there,
// and the backoff grows (at most doubling) from one retry to the next.
func TestRetryBackoff(t *testing.T) {
	const backoff = time.Second
	eb := startEcho(t)
	ref := echoRef("echo", false, eb)
	h2cRef := echoRef("echo-h2c", true, eb)
	addr := mustAddr(t, startGateway(t, oneListener(route("r", 0, nil,
		retryRule("/h1", []int{503}, 2, "1s", ref),
		retryRule("/h2c", []int{503}, 2, "1s", h2cRef),
		retryRule("/default", []int{503}, 1, "", ref),
	))), 80)

	const parallel = 20
	var wg sync.WaitGroup
	statuses := make([]int, parallel)
	for i := range parallel {
		path := []string{"/h1", "/h2c"}[i%2]
		wg.Go(func() {
			// Two failures: a reset (a connection error), then a 503.
			statuses[i] = send(t, http.MethodGet, addr, path, fmt.Sprintf("backoff-%d", i), "script=reset|503|ok", nil)
		})
	}
	wg.Wait()
	for i := range parallel {
		if statuses[i] != http.StatusOK {
			t.Errorf("request %d: status %d, want 200 after two retries", i, statuses[i])
		}
		as := ledgerAttempts(t, fmt.Sprintf("backoff-%d", i), 3, eb)
		for k, g := range gaps(as) {
			// Retry k+1 waits the backoff doubled k times, plus up to
			// 10% of jitter.
			lo := backoff
			hi := (backoff << k) + (backoff<<k)/10 + tolerance
			if g < lo || g > hi {
				t.Errorf("request %d: retry %d reached the backend %v after the previous attempt ended, want within [%v, %v]", i, k+1, g, lo, hi)
			}
		}
	}

	// A retry stanza without backoff waits the default, 25ms. Against so
	// short a wait the backend's clock of when an attempt ended is not
	// precise enough; arrivals are: the first attempt arrived before the
	// gateway saw it fail.
	if got := send(t, http.MethodGet, addr, "/default", "backoff-default", "fail=1;status=503", nil); got != http.StatusOK {
		t.Errorf("/default: status %d, want 200", got)
	}
	as := ledgerAttempts(t, "backoff-default", 2, eb)
	const defaultBackoff = 25 * time.Millisecond
	if g := as[1].Arrived.Sub(as[0].Arrived); g < defaultBackoff || g > defaultBackoff+tolerance {
		t.Errorf("/default: the retry arrived %v after the first attempt, want within [%v, %v]", g, defaultBackoff, defaultBackoff+tolerance)
	}
}

// TestRetryConnectionErrors: with a retry stanza (even without codes),
// refused connections, resets before the response headers and connections
// closed without an answer are retried; without one they answer 502 after
// exactly one attempt, also on a reused connection, where net/http's
// transport would otherwise resend by itself.
func TestRetryConnectionErrors(t *testing.T) {
	eb := startEcho(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refusedAddr := ln.Addr().String()
	ln.Close() // closed again: connections are refused
	refusing := echoRef("half-down", false, eb)
	refusing.Endpoints = []string{refusedAddr, eb.Addr(echobackend.ListenerHTTP)}
	h1, h2c := echoRef("echo", false, eb), echoRef("echo-h2c", true, eb)

	addr := mustAddr(t, startGateway(t, oneListener(route("r", 0, nil,
		retryRule("/refused-retry", nil, 1, "0s", refusing),
		prefixRule("/refused-once", nil, refusing),
		retryRule("/h1-retry", nil, 1, "0s", h1),
		prefixRule("/h1-once", nil, h1),
		retryRule("/h2c-retry", nil, 1, "0s", h2c),
		prefixRule("/h2c-once", nil, h2c),
	))), 80)

	// Round robin puts every other first attempt on the refused endpoint;
	// the retry goes to the next endpoint, which answers.
	for i := range 4 {
		id := fmt.Sprintf("refused-retry-%d", i)
		if got := send(t, http.MethodGet, addr, "/refused-retry", id, "", nil); got != http.StatusOK {
			t.Errorf("/refused-retry request %d: status %d, want 200", i, got)
		}
		ledgerAttempts(t, id, 1, eb)
	}
	failed := 0
	for i := range 4 {
		switch got := send(t, http.MethodGet, addr, "/refused-once", fmt.Sprintf("refused-once-%d", i), "", nil); got {
		case http.StatusBadGateway:
			failed++
		case http.StatusOK:
		default:
			t.Errorf("/refused-once request %d: status %d, want 200 or 502", i, got)
		}
	}
	if failed != 2 {
		t.Errorf("/refused-once: %d of 4 requests failed, want 2 (every other one goes to the refused endpoint)", failed)
	}

	tests := []struct {
		proto, spec string
	}{
		{"h1", "fail=1;reset"},
		{"h1", "fail=1;close"},
		{"h2c", "fail=1;reset"},
		{"h2c", "fail=1;reset;reset-code=REFUSED_STREAM"},
		{"h2c", "fail=1;goaway"},
	}
	for i, tc := range tests {
		// Warm a connection so the failing attempt goes on a reused one.
		send(t, http.MethodGet, addr, "/"+tc.proto+"-once", fmt.Sprintf("warm-%d", i), "", nil)

		id := fmt.Sprintf("conn-retry-%d", i)
		if got := send(t, http.MethodGet, addr, "/"+tc.proto+"-retry", id, tc.spec, nil); got != http.StatusOK {
			t.Errorf("%s %q with a retry stanza: status %d, want 200", tc.proto, tc.spec, got)
		}
		if as := ledgerAttempts(t, id, 2, eb); len(as) == 2 && as[1].Outcome != ledger.Answered {
			t.Errorf("%s %q: the retry ended %s, want answered", tc.proto, tc.spec, as[1].Outcome)
		}

		send(t, http.MethodGet, addr, "/"+tc.proto+"-once", fmt.Sprintf("warm-again-%d", i), "", nil)
		id = fmt.Sprintf("conn-once-%d", i)
		if got := send(t, http.MethodGet, addr, "/"+tc.proto+"-once", id, tc.spec, nil); got != http.StatusBadGateway {
			t.Errorf("%s %q without a retry stanza: status %d, want 502", tc.proto, tc.spec, got)
		}
		ledgerAttempts(t, id, 1, eb)
	}
}

// TestRetryGoesToAnotherEndpoint: consecutive attempts of one request go to
// distinct endpoints, cycling through them.
func TestRetryGoesToAnotherEndpoint(t *testing.T) {
	e1, e2 := startEcho(t), startEcho(t)
	addr := mustAddr(t, startGateway(t, oneListener(route("r", 0, nil,
		retryRule("/", []int{503}, 3, "0s", echoRef("pair", false, e1, e2)),
	))), 80)
	for i := range 3 {
		id := fmt.Sprintf("spread-%d", i)
		if got := send(t, http.MethodGet, addr, "/", id, "status=503", nil); got != http.StatusServiceUnavailable {
			t.Errorf("request %d: status %d, want 503", i, got)
		}
		ledgerAttempts(t, id, 4, e1, e2)
		n1, _ := e1.Ledger().Get(id)
		n2, _ := e2.Ledger().Get(id)
		if len(n1.Attempts) != 2 || len(n2.Attempts) != 2 {
			t.Errorf("request %d: endpoints saw %d and %d attempts, want 2 each", i, len(n1.Attempts), len(n2.Attempts))
		}
	}
}

// TestBackendRequestTimeoutRetried: an attempt exceeding
// timeouts.backendRequest is cancelled (the backend sees the cancel in
// time) and retried after the backoff whatever the codes; when every
// attempt times out the client gets 504.
func TestBackendRequestTimeoutRetried(t *testing.T) {
	const perTry = 300 * time.Millisecond
	const backoff = time.Second
	for _, h2c := range []bool{false, true} {
		t.Run(map[bool]string{false: "h1", true: "h2c"}[h2c], func(t *testing.T) {
			t.Parallel()
			eb := startEcho(t)
			ref := echoRef("echo", h2c, eb)
			addr := mustAddr(t, startGateway(t, oneListener(route("r", 0, nil,
				withTimeouts(retryRule("/with-retry", []int{500}, 1, "1s", ref), "", "300ms"),
				withTimeouts(prefixRule("/without-retry", nil, ref), "", "300ms"),
			))), 80)

			start := time.Now()
			if got := send(t, http.MethodGet, addr, "/with-retry", "slow-first", "script=delay:1m|ok", nil); got != http.StatusOK {
				t.Errorf("/with-retry, first attempt slow: status %d, want 200", got)
			}
			as := ledgerAttempts(t, "slow-first", 2, eb)
			checkCancelled(t, "/with-retry first attempt", as[0], start.Add(perTry), perTry)
			if g := gaps(as)[0]; g < backoff || g > backoff+backoff/10+tolerance {
				t.Errorf("/with-retry: the retry came %v after the timed-out attempt was cancelled, want within [%v, %v]", g, backoff, backoff+backoff/10+tolerance)
			}
			if as[1].Outcome != ledger.Answered {
				t.Errorf("/with-retry: the retry ended %s, want answered", as[1].Outcome)
			}

			start = time.Now()
			got := send(t, http.MethodGet, addr, "/with-retry", "always-slow", "delay=1m", nil)
			elapsed := time.Since(start)
			if got != http.StatusGatewayTimeout {
				t.Errorf("/with-retry, every attempt slow: status %d, want 504", got)
			}
			if lo := 2*perTry + backoff; elapsed < lo || elapsed > lo+tolerance {
				t.Errorf("/with-retry, every attempt slow: answered after %v, want within [%v, %v]", elapsed, lo, lo+tolerance)
			}
			as = ledgerAttempts(t, "always-slow", 2, eb)
			checkCancelled(t, "/with-retry, every attempt slow", as[0], start.Add(perTry), perTry)
			checkCancelled(t, "/with-retry, every attempt slow", as[1], start.Add(2*perTry+backoff), perTry)

			start = time.Now()
			if got := send(t, http.MethodGet, addr, "/without-retry", "once-slow", "script=delay:1m|ok", nil); got != http.StatusGatewayTimeout {
				t.Errorf("/without-retry: status %d, want 504", got)
			}
			checkCancelled(t, "/without-retry", ledgerAttempts(t, "once-slow", 1, eb)[0], start.Add(perTry), perTry)
		})
	}
}

// checkCancelled checks that the backend saw attempt a cancelled, not
// before notBefore (the earliest time the gateway can have given up on it,
// by the client's clock) and not later than timeout+tolerance after the
// attempt arrived.
func checkCancelled(t *testing.T, what string, a ledger.Attempt, notBefore time.Time, timeout time.Duration) {
	t.Helper()
	if a.Outcome != ledger.Cancelled || a.CancelledAt == nil {
		t.Errorf("%s: attempt %d ended %s, want cancelled", what, a.Number, a.Outcome)
		return
	}
	if a.CancelledAt.Before(notBefore) {
		t.Errorf("%s: attempt %d was cancelled %v too early", what, a.Number, notBefore.Sub(*a.CancelledAt))
	}
	if d := a.CancelledAt.Sub(a.Arrived); d > timeout+tolerance {
		t.Errorf("%s: attempt %d was cancelled %v after it arrived, want at most %v", what, a.Number, d, timeout+tolerance)
	}
}

// TestRequestTimeoutCoversRetries: timeouts.request bounds all attempts and
// backoffs; at expiry the client gets 504 and the attempt in flight is
// cancelled. A retry whose backoff would end after the deadline is not
// made: the client gets the last answer at once.
func TestRequestTimeoutCoversRetries(t *testing.T) {
	const requestTimeout = time.Second
	eb := startEcho(t)
	ref := echoRef("echo", false, eb)
	addr := mustAddr(t, startGateway(t, oneListener(route("r", 0, nil,
		withTimeouts(retryRule("/covered", []int{503}, 5, "100ms", ref), "1s", ""),
		withTimeouts(retryRule("/long-backoff", []int{503}, 5, "20s", ref), "10s", ""),
	))), 80)

	start := time.Now()
	got := send(t, http.MethodGet, addr, "/covered", "covered", "script=503|503|delay:1m", nil)
	elapsed := time.Since(start)
	if got != http.StatusGatewayTimeout {
		t.Errorf("/covered: status %d, want 504", got)
	}
	if elapsed < requestTimeout || elapsed > requestTimeout+tolerance {
		t.Errorf("/covered: answered after %v, want within [%v, %v]", elapsed, requestTimeout, requestTimeout+tolerance)
	}
	as := ledgerAttempts(t, "covered", 3, eb)
	if last := as[len(as)-1]; last.Outcome != ledger.Cancelled || last.CancelledAt == nil {
		t.Errorf("/covered: the attempt in flight at the deadline ended %s, want cancelled", last.Outcome)
	} else if d := last.CancelledAt.Sub(start); d < requestTimeout || d > requestTimeout+tolerance {
		t.Errorf("/covered: the attempt in flight was cancelled %v after the request started, want within [%v, %v]", d, requestTimeout, requestTimeout+tolerance)
	}

	if got := send(t, http.MethodGet, addr, "/long-backoff", "long-backoff", "status=503", nil); got != http.StatusServiceUnavailable {
		t.Errorf("/long-backoff: status %d, want the backend's 503 without waiting for a retry past the deadline", got)
	}
	ledgerAttempts(t, "long-backoff", 1, eb)
}

// TestRetryReplaysBody: every attempt carries the same body (the backend's
// digest of each matches); bodies over the replay limit, or of unknown
// length, go to one attempt only.
func TestRetryReplaysBody(t *testing.T) {
	small := bytes.Repeat([]byte("gatewitness retry body "), 2700) // 62100 bytes, under the 64 KiB replay limit
	large := bytes.Repeat([]byte("x"), 64<<10+1)
	for _, h2c := range []bool{false, true} {
		t.Run(map[bool]string{false: "h1", true: "h2c"}[h2c], func(t *testing.T) {
			eb := startEcho(t)
			addr := mustAddr(t, startGateway(t, oneListener(route("r", 0, nil,
				retryRule("/", []int{503}, 2, "0s", echoRef("echo", h2c, eb)),
			))), 80)

			if got := send(t, http.MethodPost, addr, "/", "small", "fail=2;status=503", bytes.NewReader(small)); got != http.StatusOK {
				t.Errorf("small body: status %d, want 200", got)
			}
			sum := sha256.Sum256(small)
			for _, a := range ledgerAttempts(t, "small", 3, eb) {
				if a.BodyBytes != int64(len(small)) || a.BodySHA256 != hex.EncodeToString(sum[:]) {
					t.Errorf("small body: attempt %d got %d bytes with digest %s, want %d bytes with digest %x", a.Number, a.BodyBytes, a.BodySHA256, len(small), sum)
				}
			}

			if got := send(t, http.MethodPost, addr, "/", "large", "fail=2;status=503", bytes.NewReader(large)); got != http.StatusServiceUnavailable {
				t.Errorf("body over the replay limit: status %d, want 503 (not retried)", got)
			}
			if as := ledgerAttempts(t, "large", 1, eb); as[0].BodyBytes != int64(len(large)) {
				t.Errorf("body over the replay limit: the attempt got %d bytes, want %d", as[0].BodyBytes, len(large))
			}

			unknown := io.MultiReader(bytes.NewReader(small[:100])) // no length: sent chunked
			if got := send(t, http.MethodPost, addr, "/", "unknown-length", "fail=2;status=503", unknown); got != http.StatusServiceUnavailable {
				t.Errorf("body of unknown length: status %d, want 503 (not retried)", got)
			}
			ledgerAttempts(t, "unknown-length", 1, eb)
		})
	}
}

func negativeAttempts(r ir.HTTPRule) ir.HTTPRule {
	r.Retry.Attempts = ptr(-1)
	return r
}

func TestBadRetryIsReported(t *testing.T) {
	b := startBackend(t, "b")
	tests := []struct {
		rule ir.HTTPRule
		want string
	}{
		{retryRule("/", []int{503, 302}, 1, "", b.ref()), `retry.codes[1]: 302 cannot be retried; accepted: an HTTP status from 400 to 599`},
		{retryRule("/", nil, -2, "", b.ref()), ""}, // unset attempts: valid
		{retryRule("/", nil, 101, "", b.ref()), `retry.attempts: 101 is out of range; accepted: a number of retries from 0 to 100`},
		{negativeAttempts(retryRule("/", nil, 1, "", b.ref())), `retry.attempts: -1 is out of range`},
		{retryRule("/", nil, 1, "1x", b.ref()), `retry.backoff: "1x" is not a Gateway API duration`},
	}
	for _, tc := range tests {
		s := dataplane.New(dataplane.Options{})
		err := s.Apply(oneListener(route("r", 0, nil, tc.rule)))
		resp, body := get(t, mustAddr(t, s, 80), "gw.test", "/")
		if tc.want == "" {
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Errorf("valid retry stanza: Apply error %v, status %d", err, resp.StatusCode)
			}
		} else {
			if err == nil || !strings.Contains(err.Error(), "HTTPRoute default/r rule 0: "+tc.want) {
				t.Errorf("Apply error %v, want one containing %q", err, tc.want)
			}
			if resp.StatusCode != http.StatusInternalServerError {
				t.Errorf("rule with a bad retry stanza (%s): %d %q, want 500", tc.want, resp.StatusCode, body)
			}
		}
		s.Close()
	}
}
