package tests

import (
	"context"
	"net"

	"sigs.k8s.io/gateway-api/conformance/utils/roundtripper"
	"sigs.k8s.io/gateway-api/conformance/utils/suite"
)

// DialFunc dials a network address, like net.Dialer.DialContext.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// DialContext returns the dialer a test uses for connections of its own (a
// plain http.Client that must read a response body, a grpc.ClientConn to
// gatewitness's echo service) to the Gateway addresses of suite s. It follows
// the suite's RoundTripper, so such connections go where the suite's own
// requests go:
//
//   - a RoundTripper with a DialContext method (the in-process cluster's,
//     where Gateway addresses exist only through that dialer) lends it;
//   - upstream's DefaultRoundTripper lends its CustomDialContext, if set;
//   - otherwise a plain net.Dialer, which reaches a real cluster's Gateway
//     addresses directly.
func DialContext(s *suite.ConformanceTestSuite) DialFunc {
	switch rt := s.RoundTripper.(type) {
	case interface {
		DialContext(ctx context.Context, network, addr string) (net.Conn, error)
	}:
		return rt.DialContext
	case *roundtripper.DefaultRoundTripper:
		if rt.CustomDialContext != nil {
			return rt.CustomDialContext
		}
	}
	var d net.Dialer
	return d.DialContext
}
