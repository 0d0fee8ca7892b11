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
//
// # Parts
//
// The request path is built from a few named parts, chosen when the
// Server is constructed, in the manner of net/http/httputil.ReverseProxy's
// Rewrite, Transport, ModifyResponse and ErrorHandler. Their interfaces
// are in internal/part; the data plane's own parts are in parts.go, and
// they are the behaviour this reference implementation specifies:
//
//   - Retries (retry.go calls it): how many attempts a request may make,
//     which endpoint each goes to, which attempt errors are retried, how
//     a refusal of the retry budget is answered, and how the request body
//     is held to be sent again;
//   - Relay (proxy.go, grpc_proxy.go, tunnel.go): how a response body is
//     framed and read, how a response or gRPC stream whose backend failed
//     mid-way ends, and how a tunnel passes a half-close on;
//   - Timer (handler.go, retry.go, grpc_proxy.go): how timeouts.request,
//     timeouts.backendRequest and a gRPC call's budget are kept;
//   - Transport (proxy.go, retry.go): how a request goes upstream, and
//     that the transport resends nothing the retry policy did not ask for;
//   - Calls (grpc_proxy.go): how a GRPCRoute call's budget is chosen, told
//     to the backend in grpc-timeout, and ended (GEP-3139);
//   - Reload (server.go, tunnel.go): what a new snapshot does to the
//     connections the data plane holds.
//
// The request path calls its parts and asks nothing else: it holds no
// switch for a data plane broken on purpose. Such a data plane (package
// dataplanetest, for gatewitness's negative checks) is built by NewBroken
// with some parts replaced or wrapped; the alternatives live in
// internal/breakage, one file per part. A new kind of breakage is a field
// of breakage.Set (dataplanetest.Hooks), a type in the file of the part
// it breaks that wraps the part and changes one method, and a line in
// breakage.Build; a part's interface grows a method only when no existing
// one can say the new behaviour.
package dataplane
