package dataplane

import "flag"

// AddFlags defines on fs a flag for each field of l, named "limit-" and
// the field's name in kebab case, its default the field's default; once
// fs is parsed, l holds the values. A negative value turns a bound off.
func (l *Limits) AddFlags(fs *flag.FlagSet) {
	fs.IntVar(&l.MaxRequestHeaders, "limit-max-request-headers", DefaultMaxRequestHeaders,
		"the most header fields a request may carry, Host included; more: 431 (gRPC: RESOURCE_EXHAUSTED)")
	fs.IntVar(&l.MaxRequestHeaderBytes, "limit-max-request-header-bytes", DefaultMaxRequestHeaderBytes,
		"the most bytes of a request's header block; more: 431")
	fs.DurationVar(&l.RequestHeaderTimeout, "limit-request-header-timeout", DefaultRequestHeaderTimeout,
		"the wait for a request's headers, where the Gateway's Client timeout sets none")
	fs.DurationVar(&l.IdleConnectionTimeout, "limit-idle-connection-timeout", DefaultIdleConnectionTimeout,
		"the wait for the next request on a kept-alive connection, where the Gateway's Client timeout sets none")
	fs.Int64Var(&l.MinRequestBodyRate, "limit-min-request-body-rate", DefaultMinRequestBodyRate,
		"bytes a second a request body must keep up after --limit-request-body-grace; slower: 408 (gRPC exempt)")
	fs.DurationVar(&l.RequestBodyGrace, "limit-request-body-grace", DefaultRequestBodyGrace,
		"the head start of a request body before --limit-min-request-body-rate applies")
	fs.IntVar(&l.MaxBackendRequests, "limit-max-backend-requests", DefaultMaxBackendRequests,
		"the most requests in flight to one backend (Service port) at once; more: 503 (gRPC: UNAVAILABLE)")
	fs.DurationVar(&l.WriteStallFreesSlot, "limit-write-stall-frees-slot", DefaultWriteStallFreesSlot,
		"how long a response write may wait on the client before its request stops counting against --limit-max-backend-requests")
	fs.DurationVar(&l.ResponseWriteTimeout, "limit-response-write-timeout", DefaultResponseWriteTimeout,
		"a response write that makes no progress this long resets the HTTP/2 stream or closes the HTTP/1.1 connection")
	fs.IntVar(&l.MaxTunnels, "limit-max-tunnels", DefaultMaxTunnels,
		"the most upgraded connections (WebSocket) open at once; more: 503")
	fs.DurationVar(&l.TunnelIdleTimeout, "limit-tunnel-idle-timeout", DefaultTunnelIdleTimeout,
		"closes a tunnel silent both ways this long when the Gateway's connection timeouts set no idle limit")
	fs.IntVar(&l.IdleFrameBurst, "limit-idle-frame-burst", DefaultIdleFrameBurst,
		"HTTP/2 frames that do no work (SETTINGS, PING, WINDOW_UPDATE, PRIORITY, RST_STREAM, empty DATA or CONTINUATION) a connection may send at once; more: GOAWAY ENHANCE_YOUR_CALM")
	fs.IntVar(&l.IdleFrameRate, "limit-idle-frame-rate", DefaultIdleFrameRate,
		"how many a second the --limit-idle-frame-burst bucket refills")
}
