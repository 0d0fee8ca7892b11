package runner

import (
	"testing"
	"time"

	grpcutil "sigs.k8s.io/gateway-api/conformance/utils/grpc"
)

// freshConnGRPC is the gRPC client a run through a kubeconfig gives
// upstream's tests (suite.ConformanceOptions.GRPCClient): upstream's
// DefaultClient, a new one, so a connection of its own, for every RPC.
// Left nil, upstream's consistency checks make one DefaultClient per check
// and send every try over its one connection, which stays with one of a
// data plane's replicas: its RequiredConsecutiveSuccesses answers in a row
// then say nothing of the others. Through localcp, with one of two
// replicas behind each address applying changes 3 s late, GRPCRouteWeight
// passed its check on the up-to-date replica and then got Unimplemented
// from the late one on its own per-request connections. Upstream's weight
// samplers already use a connection a request; this gives its checks the
// same, as the HTTP round tripper's new connection a request does.
type freshConnGRPC struct{}

// SendRPC sends one RPC over a connection opened for it and closed after.
func (freshConnGRPC) SendRPC(t *testing.T, address string, expected grpcutil.ExpectedResponse, timeout time.Duration) (*grpcutil.Response, error) {
	t.Helper()
	c := &grpcutil.DefaultClient{}
	defer c.Close()
	return c.SendRPC(t, address, expected, timeout)
}

// Close implements grpcutil.Client; each RPC's connection is closed with
// it.
func (freshConnGRPC) Close() {}
