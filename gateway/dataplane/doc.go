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
package dataplane
