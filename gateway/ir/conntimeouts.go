package ir

import "time"

// ConnectionTimeouts are a Gateway's connection-level timeouts. A zero field
// disables that timeout.
type ConnectionTimeouts struct {
	// Client bounds how long a client connection may stay silent while the
	// gateway waits for it: before the first request, between requests on
	// a kept-alive connection, and in the middle of a request's headers.
	Client time.Duration
	// ClientFin replaces Client and Tunnel on a tunnel's client side once
	// the gateway has shut its writes to the client (the backend
	// half-closed): the client then has this long to close or send.
	ClientFin time.Duration
	// Server bounds how long a backend may stay silent during an HTTP
	// exchange: before the response headers, and between body reads. A
	// backend silent before the headers gets the client 504.
	Server time.Duration
	// ServerFin replaces Server and Tunnel on a tunnel's backend side once
	// the gateway has shut its writes to the backend (the client
	// half-closed): the backend then has this long to close or send.
	ServerFin time.Duration
	// Tunnel replaces Client and Server once a connection is upgraded
	// (WebSocket) or passed through (TLS passthrough): the tunnel is
	// closed after this long without a byte in either direction.
	Tunnel time.Duration
	// TLSInspectDelay bounds how long a TLS passthrough listener waits for
	// the ClientHello it routes by; a client that sends none in time is
	// closed without a backend connection.
	TLSInspectDelay time.Duration
}
