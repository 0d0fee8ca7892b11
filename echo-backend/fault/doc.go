// Package fault parses and evaluates the echo-backend's fault vocabulary: the
// `;`-separated directives carried by the X-Gatewitness-Fault header, the
// gatewitness-fault query parameter or the x-gatewitness-fault gRPC metadata key.
//
// A Spec says what each attempt of one request id does. Attempt numbers come
// from the ledger, so a spec such as "fail=2;status=503" answers 503 twice and
// then answers normally.
//
// # Directives
//
// Directives are separated by ';'. Inside one ';' element ',' separates them
// too ("chunks=3,interval=100ms"), except that the text directives
// grpc-message, trailer and script take the rest of the element, commas
// included. Names are case-insensitive and spaces around directives are
// ignored. Text values may be percent-encoded (%3B for ';').
//
//	delay=D            wait D before the response headers
//	body-delay=D       wait D after the headers, before the body
//	chunks=N           HTTP: write the body in N parts
//	messages=N         gRPC server streams: send N messages
//	interval=D         wait D between chunks or messages
//	status=N           HTTP status, 200..599 (a 1xx is not an answer)
//	grpc-status=C      gRPC code: 0..16 or a name such as UNAVAILABLE (any case)
//	grpc-message=TEXT  gRPC status message (with grpc-status)
//	trailer=NAME:VALUE extra trailer; repeatable
//	reset[=P]          reset the stream at P: before-headers (the default),
//	                   after-headers or mid-body
//	reset-code=C       RST_STREAM / GOAWAY error code: a number or a name such
//	                   as CANCEL; with reset or goaway. Default: INTERNAL_ERROR
//	                   with reset, NO_ERROR with goaway alone
//	goaway             send GOAWAY, then close the connection
//	close              close the connection without a response
//	fail=N             apply the directives to the first N attempts only
//	script=A|B|...     attempt i takes action i; later attempts answer normally
//
// Durations use time.ParseDuration syntax. Limits bounds delays (each, and the
// total of delay + body-delay + chunks (or messages) * interval), chunks,
// messages and attempts; MaxSpecLen, MaxMessageLen, MaxTrailers and
// MaxTrailerBytes bound the text.
//
// # Scripts
//
// A script action is atoms joined by '+'. An atom is one of
//
//	ok                        no change: the attempt gets the base directives
//	503                       a 3-digit HTTP status, 200..599
//	reset, reset:after-headers, reset:mid-body
//	close, goaway
//	UNAVAILABLE               a gRPC code name (not a number; "ok" is the atom above)
//	key:value                 any directive but fail and script: delay:2s,
//	                          grpc-status:14, reset-code:CANCEL, trailer:x-a:1
//
// The directives outside script= apply to every scripted attempt; a directive
// given in an atom replaces the base's (trailers replace the base's list), and
// may set it back to zero (delay:0s). For example
// "script=delay:2s+503|reset|ok" delays the first attempt 2s and answers 503,
// resets the second before its headers and answers the third normally.
package fault
