package grpcecho

import (
	"context"

	"github.com/gatewitness/gatewitness/echo-backend/echopb"
	upstreampb "github.com/gatewitness/gatewitness/echo-backend/grpcechopb"
)

// upstreamService serves upstream's GrpcEcho with echo-basic's contract,
// under echo-basic's service name (grpcechopb.UpstreamServiceName).
// Its calls are recorded and faulted like our Echo's; the attempt number
// reaches the client only in the x-gatewitness-attempt trailer, since
// upstream's response has no field for it. EchoThree stays unimplemented.
type upstreamService struct {
	upstreampb.UnimplementedGrpcEchoServer
	s *server
}

// Echo echoes the call.
func (u *upstreamService) Echo(ctx context.Context, req *upstreampb.EchoRequest) (*upstreampb.EchoResponse, error) {
	return serveUnary(u.s, ctx, &echopb.EchoRequest{}, u.respond)
}

// EchoTwo echoes the call, as Echo does.
func (u *upstreamService) EchoTwo(ctx context.Context, req *upstreampb.EchoRequest) (*upstreampb.EchoResponse, error) {
	return serveUnary(u.s, ctx, &echopb.EchoRequest{}, u.respond)
}

// respond builds echo-basic's response: every metadata value as a header
// (keys in order), the :authority, the method, the pod and the TLS facts.
func (u *upstreamService) respond(c *call) *upstreampb.EchoResponse {
	var headers []*upstreampb.Header
	for _, k := range sortedKeys(c.md) {
		for _, v := range c.md[k] {
			headers = append(headers, &upstreampb.Header{Key: k, Value: v})
		}
	}
	p := u.s.opts.Pod
	resp := &upstreampb.EchoResponse{
		Assertions: &upstreampb.Assertions{
			FullyQualifiedMethod: c.method,
			Headers:              headers,
			Authority:            c.authority(),
			Context: &upstreampb.Context{
				Namespace:   p.Namespace,
				Ingress:     p.Ingress,
				ServiceName: p.Service,
				Pod:         p.Pod,
			},
		},
		Request: &upstreampb.EchoRequest{},
	}
	if t := tlsInfo(c.tls); t != nil {
		resp.Assertions.TlsAssertions = &upstreampb.TLSAssertions{
			Version:            t.Version,
			NegotiatedProtocol: t.NegotiatedProtocol,
			ServerName:         t.ServerName,
			CipherSuite:        t.CipherSuite,
			PeerCertificates:   t.PeerCertificates,
		}
	}
	return resp
}
