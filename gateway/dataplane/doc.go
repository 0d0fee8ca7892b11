// Package dataplane is the reference gateway's data plane: it serves the
// listeners of every programmed Gateway and routes requests by the routing
// snapshot (an ir.Config) the controller builds from the API objects.
//
// The snapshot's types are the gateway/ir package, the contract between
// the controller and the data plane. Apply compiles a snapshot once
// (compile.go, action.go, filters.go, match.go): matching order, filters,
// weights, retries and timeouts are checked and prepared there, so that
// serving a request only reads them. The data plane never reads the API
// server.
//
// Apart from what the snapshot says, the data plane bounds each request
// by limits of its own (Options.Limits, limits.go): at most 100 header
// fields (431), a request body that keeps 1 KiB/s after its first 10 s
// (408; gRPC exempt), at most 1,024 requests in flight to one backend
// (503; a request whose write to the client stalls for 1 s frees its
// place), 60 s for a response write that makes no progress, at most 1,024
// tunnels; and an HTTP/1.1 connection is closed after a request whose
// framing is in doubt (Content-Length with Transfer-Encoding, a repeated
// or folded Transfer-Encoding) or a request body that failed or was left
// unread.
// docs/semantics/request-limits.md compares each with Envoy, nginx and
// HAProxy.
package dataplane
