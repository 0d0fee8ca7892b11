package calibration

import (
	"slices"

	"github.com/gatewitness/gatewitness/reports"
)

// Row is one expected verdict: the test, the verdict, and the directive
// or documented behaviour that decides it, with the documentation's
// section. A verdict that rests on a behaviour no directive changes, and
// that was measured rather than read, says so in Doc.
type Row struct {
	Test    string
	Verdict reports.Result
	Why     string
	Doc     string
}

// Where the rows' documentation is.
const (
	haproxyManual = "HAProxy 2.6 Configuration Manual, "
	haproxyMgmt   = "HAProxy 2.6 Management Guide, "
	nginxProxy    = "nginx ngx_http_proxy_module, "
	nginxCore     = "nginx ngx_http_core_module, "
	measured      = "measured on Debian 12's package (issue #34); no directive changes it"
)

func pass(test, why, doc string) Row { return Row{test, reports.Pass, why, doc} }
func fail(test, why, doc string) Row { return Row{test, reports.Fail, why, doc} }
func skip(test, why, doc string) Row { return Row{test, reports.Skip, why, doc} }

// Reasons shared by both proxies' rows.
var (
	noGRPCRoute = "GRPCRoute not claimed: the adapter writes no GRPCRoutes (the profile's gRPC tests route with them)"
	noTLSRoute  = "TLSRoute not claimed: the adapter writes no TLS passthrough listener"
)

// honest are the verdicts of each data plane's honest configuration and
// claims: every test of the calibrated profiles (Profiles).
var honest = map[string][]Row{
	"haproxy": {
		pass("HTTPRouteRetryCodesAndAttempts", "retry.codes become \"retry-on <codes>\" and retry.attempts \"retries N\"; a code not listed is not retried",
			haproxyManual+"4.2 \"retry-on\", \"retries\""),
		skip("HTTPRouteRetryBackoffGaps", "HTTPRouteRetryBackoff not claimed: HAProxy has no retry backoff (only a turn-around of at most 1s after a connection failure)",
			haproxyManual+"4.2 \"retries\""),
		pass("HTTPRouteRetryBackendTimeoutCancels", "timeouts.backendRequest is \"timeout server\", which closes the server connection, and \"retry-on response-timeout\" retries it",
			haproxyManual+"4.2 \"timeout server\", \"retry-on\""),
		pass("HTTPRouteRetryConnectionErrors", "\"retry-on conn-failure empty-response junk-response\" retries a connection refused, reset or closed before the headers; \"option redispatch 1\" sends each retry to another server",
			haproxyManual+"4.2 \"retry-on\", \"option redispatch\""),
		pass("HTTPRouteRetryRefusedOnce", "a connection the server resets as it accepts it, before the request is sent, is a connection failure or an empty response to \"retry-on conn-failure empty-response\"; the retry opens a new connection",
			haproxyManual+"4.2 \"retry-on\""),
		skip("HTTPRouteRetryRequestTimeoutBudget", "HTTPRouteRetryWithRequestTimeout not claimed: \"timeout server\" restarts with each attempt and each read; no timer spans the retries",
			haproxyManual+"4.2 \"timeout server\""),
		pass("HTTPRouteRetryBodyReplay", "\"option http-buffer-request\" waits for the whole body before the first attempt, so it is still in the buffer for the retries",
			haproxyManual+"4.2 \"option http-buffer-request\", \"retry-on\""),
		pass("HTTPRouteRetryStreamReset", "the h2c backend is \"server ... proto h2\"; a stream reset before the response headers is an empty response to \"retry-on\"",
			haproxyManual+"5.2 \"proto\"; 4.2 \"retry-on\""),
		skip("HTTPRouteTimeoutsWithoutRetry", "HTTPRouteTimeoutDeadlines not claimed: \"timeout server\" is an inactivity timer, not a deadline over the response",
			haproxyManual+"4.2 \"timeout server\""),
		pass("FaultFidelityHTTP1Truncation", "a server that aborts mid-response gets the client connection closed short of the length or the last chunk",
			measured),
		fail("FaultFidelityHTTP2Truncation", "HAProxy 2.6 ends an h2 stream whose server aborted mid-body with a clean END_STREAM, so the client cannot tell it from a complete answer",
			measured),
		pass("FaultFidelitySingleAttempt", "a rule without a retry stanza gets \"retries 0\": the failed request is not sent again",
			haproxyManual+"4.2 \"retries\""),
		pass("FaultFidelityStreamedResponses", "\"option http-no-delay\" sends each chunk as it arrives instead of merging writes for up to 200 ms",
			haproxyManual+"4.2 \"option http-no-delay\""),
		skip("FaultFidelityGRPCFailure", noGRPCRoute, ""),
		skip("FaultFidelityGRPCStreaming", noGRPCRoute, ""),
		pass("ConnectionServerTimeout", "the Gateway's server timeout is \"timeout server\": a server silent that long gets the client 504",
			haproxyManual+"4.2 \"timeout server\""),
		pass("ConnectionClientTimeout", "the client timeout is \"timeout client\", \"timeout http-request\" and \"timeout http-keep-alive\"",
			haproxyManual+"4.2 \"timeout client\", \"timeout http-request\", \"timeout http-keep-alive\""),
		pass("ConnectionTunnelTimeout", "the tunnel timeout is \"timeout tunnel\", which replaces the client and server timeouts once a WebSocket is upgraded",
			haproxyManual+"4.2 \"timeout tunnel\""),
		pass("ConnectionClientFinTimeout", "the client-fin timeout is \"timeout client-fin\"; HAProxy closes the tunnel at once when the server half-closes, which the test allows",
			haproxyManual+"4.2 \"timeout client-fin\""),
		skip("ConnectionClientFinHalfOpen", "ConnectionClientFinHalfOpen not claimed: HAProxy closes a tunnel once the server half-closes it, keeping no half-open side",
			measured),
		pass("ConnectionServerFinTimeout", "the server-fin timeout is \"timeout server-fin\"",
			haproxyManual+"4.2 \"timeout server-fin\""),
		skip("ConnectionTLSInspectDelay", noTLSRoute, ""),
	},
	"nginx": {
		pass("HTTPRouteRetryCodesAndAttempts", "retry.codes become \"proxy_next_upstream http_<code>\" and retry.attempts \"proxy_next_upstream_tries\"; nginx retries on the next server only, so each endpoint is listed once per attempt",
			nginxProxy+"\"proxy_next_upstream\", \"proxy_next_upstream_tries\""),
		skip("HTTPRouteRetryBackoffGaps", "HTTPRouteRetryBackoff not claimed: nginx passes a request to the next server at once; it has no retry backoff",
			nginxProxy+"\"proxy_next_upstream\""),
		pass("HTTPRouteRetryBackendTimeoutCancels", "timeouts.backendRequest is \"proxy_read_timeout\", and \"proxy_next_upstream timeout\" retries it on the next server",
			nginxProxy+"\"proxy_read_timeout\", \"proxy_next_upstream\""),
		pass("HTTPRouteRetryConnectionErrors", "\"proxy_next_upstream error invalid_header\" retries a connection refused, reset or closed before the headers",
			nginxProxy+"\"proxy_next_upstream\""),
		pass("HTTPRouteRetryRefusedOnce", "\"proxy_next_upstream error\" covers an error while establishing a connection or passing the request, which a connection reset as it is accepted is",
			nginxProxy+"\"proxy_next_upstream\""),
		skip("HTTPRouteRetryRequestTimeoutBudget", "HTTPRouteRetryWithRequestTimeout not claimed: \"proxy_read_timeout\" is set between two reads, per attempt; no timer spans the retries and the response",
			nginxProxy+"\"proxy_read_timeout\""),
		pass("HTTPRouteRetryBodyReplay", "\"proxy_request_buffering on\" (the default) reads the whole body before the first attempt, and \"non_idempotent\" lets a POST be retried",
			nginxProxy+"\"proxy_request_buffering\", \"proxy_next_upstream\""),
		skip("HTTPRouteRetryStreamReset", "HTTPRouteBackendProtocolH2C not claimed: nginx proxies HTTP/1.0 and 1.1 only",
			nginxProxy+"\"proxy_http_version\""),
		skip("HTTPRouteTimeoutsWithoutRetry", "HTTPRouteTimeoutDeadlines not claimed: \"proxy_read_timeout\" is an inactivity timer between two reads, not a deadline",
			nginxProxy+"\"proxy_read_timeout\""),
		pass("FaultFidelityHTTP1Truncation", "an upstream that closes mid-response gets the client connection closed short of the length or the last chunk",
			measured),
		pass("FaultFidelityHTTP2Truncation", "on an HTTPS listener with \"listen ... http2\", an upstream that fails mid-body gets the client's stream reset (the plaintext listener offers no h2c: the test takes the TLS path)",
			measured+"; "+nginxCore+"\"listen\""),
		pass("FaultFidelitySingleAttempt", "a rule without a retry stanza gets \"proxy_next_upstream off\"",
			nginxProxy+"\"proxy_next_upstream\""),
		pass("FaultFidelityStreamedResponses", "with \"proxy_http_version 1.1\" a streamed upstream response is chunked, and \"proxy_buffering on\" still passes each complete chunk at once",
			nginxProxy+"\"proxy_http_version\", \"proxy_buffering\"; "+measured),
		skip("FaultFidelityGRPCFailure", noGRPCRoute, ""),
		skip("FaultFidelityGRPCStreaming", noGRPCRoute, ""),
		pass("ConnectionServerTimeout", "the Gateway's server timeout is \"proxy_read_timeout\": an upstream silent that long gets the client 504",
			nginxProxy+"\"proxy_read_timeout\""),
		pass("ConnectionClientTimeout", "the client timeout is \"keepalive_timeout\" (idle) and \"client_header_timeout\" (mid-request)",
			nginxCore+"\"keepalive_timeout\", \"client_header_timeout\""),
		skip("ConnectionTunnelTimeout", "HTTPRouteBackendProtocolWebSocket not claimed: an upgraded connection has the location's proxy_read_timeout, so no tunnel timeout apart from the server timeout",
			nginxProxy+"\"proxy_read_timeout\"; \"WebSocket proxying\""),
		skip("ConnectionClientFinTimeout", "not claimed: nginx has no timer for a half-closed tunnel", nginxProxy+"\"WebSocket proxying\""),
		skip("ConnectionClientFinHalfOpen", "not claimed: nginx has no timer for a half-closed tunnel", nginxProxy+"\"WebSocket proxying\""),
		skip("ConnectionServerFinTimeout", "not claimed: nginx has no timer for a half-closed tunnel", nginxProxy+"\"WebSocket proxying\""),
		skip("ConnectionTLSInspectDelay", noTLSRoute, ""),
	},
}

// The variants' rows, where they differ from their data plane's honest
// ones.
var (
	haproxyNoBuffer = []Row{
		fail("HTTPRouteRetryBodyReplay", "without \"option http-buffer-request\" the first attempt starts once the headers are in and the body streams to it; a request is retried only while it is still whole in the buffer, so the 503 of a body still arriving is relayed",
			haproxyManual+"4.2 \"option http-buffer-request\", \"retry-on\""),
	}
	haproxyOverClaim = []Row{
		fail("HTTPRouteRetryBackoffGaps", "claimed HTTPRouteRetryBackoff, but HAProxy retries at once", haproxyManual+"4.2 \"retries\""),
		fail("HTTPRouteRetryBackendTimeoutCancels", "claimed HTTPRouteRetryBackoff: the retry of a timed-out attempt comes at once, not retry.backoff later", haproxyManual+"4.2 \"retries\""),
		fail("HTTPRouteRetryRequestTimeoutBudget", "claimed HTTPRouteRetryWithRequestTimeout, but \"timeout server\" restarts with each attempt and read", haproxyManual+"4.2 \"timeout server\""),
		fail("HTTPRouteTimeoutsWithoutRetry", "claimed HTTPRouteTimeoutDeadlines, but \"timeout server\" is an inactivity timer: a trickling body outlives it", haproxyManual+"4.2 \"timeout server\""),
		fail("ConnectionClientFinHalfOpen", "claimed ConnectionClientFinHalfOpen, but HAProxy closes the tunnel once the server half-closes", measured),
	}
	nginxHTTP10 = []Row{
		fail("FaultFidelityStreamedResponses", "\"proxy_http_version\" defaults to 1.0: the streamed response comes back close-delimited, and \"proxy_buffering on\" holds it instead of passing its chunks",
			nginxProxy+"\"proxy_http_version\", \"proxy_buffering\"; "+measured),
	}
	nginxOverClaim = []Row{
		fail("HTTPRouteRetryBackoffGaps", "claimed HTTPRouteRetryBackoff, but nginx passes to the next server at once", nginxProxy+"\"proxy_next_upstream\""),
		fail("HTTPRouteRetryBackendTimeoutCancels", "claimed HTTPRouteRetryBackoff: the retry of a timed-out attempt comes at once", nginxProxy+"\"proxy_next_upstream\""),
		fail("HTTPRouteRetryRequestTimeoutBudget", "claimed HTTPRouteRetryWithRequestTimeout, but \"proxy_read_timeout\" is per read and per attempt", nginxProxy+"\"proxy_read_timeout\""),
		fail("HTTPRouteTimeoutsWithoutRetry", "claimed HTTPRouteTimeoutDeadlines, but \"proxy_read_timeout\" is an inactivity timer: a trickling body outlives it", nginxProxy+"\"proxy_read_timeout\""),
		fail("HTTPRouteRetryStreamReset", "claimed HTTPRouteBackendProtocolH2C, but nginx speaks HTTP/1.x to upstreams: the h2c backend cannot be reached", nginxProxy+"\"proxy_http_version\""),
		fail("FaultFidelityHTTP1Truncation", "claimed HTTPRouteBackendProtocolH2C: the test's h2c-backend cases cannot be reached over HTTP/1.x", nginxProxy+"\"proxy_http_version\""),
		fail("FaultFidelityHTTP2Truncation", "claimed HTTPRouteBackendProtocolH2C: the test wants h2c with prior knowledge on the HTTP listener, and nginx 1.22 cannot serve HTTP/1.1 and h2c on one plaintext port", nginxCore+"\"listen\" (http2); "+measured),
		fail("FaultFidelitySingleAttempt", "claimed HTTPRouteBackendProtocolH2C: the test wants h2c with prior knowledge on the HTTP listener, which nginx 1.22 cannot serve beside HTTP/1.1", nginxCore+"\"listen\" (http2); "+measured),
		fail("FaultFidelityStreamedResponses", "claimed HTTPRouteBackendProtocolH2C: the test's h2c-backend cases cannot be reached over HTTP/1.x", nginxProxy+"\"proxy_http_version\""),
	}
)

// Expected returns the verdicts expected of v, by test: its data plane's
// honest rows with v's own in their place; for a variant that runs only
// some tests (Tests), only theirs.
func Expected(v Variant) []Row {
	rows := slices.Clone(honest[v.DataPlane])
	for _, r := range v.Expect {
		if i := slices.IndexFunc(rows, func(h Row) bool { return h.Test == r.Test }); i >= 0 {
			rows[i] = r
		} else {
			rows = append(rows, r)
		}
	}
	if len(v.Tests) > 0 {
		rows = slices.DeleteFunc(rows, func(r Row) bool { return !slices.Contains(v.Tests, r.Test) })
	}
	return rows
}
