package grpcecho_test

import (
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"sigs.k8s.io/gateway-api/conformance/utils/config"
	upstreamgrpc "sigs.k8s.io/gateway-api/conformance/utils/grpc"

	"github.com/gatewitness/gatewitness/contract/echowire"
	"github.com/gatewitness/gatewitness/echo-backend/grpcecho"
	"github.com/gatewitness/gatewitness/echo-backend/grpcechopb"
	"github.com/gatewitness/gatewitness/echo-backend/ledger"
)

// newOf returns a new T for a *T of upstream's generated code, which this
// test does not import: its path differs between Gateway API releases
// (conformance/echo-basic up to v1.6, gateway-api-conformance-images from
// v1.7), while upstream's client package, which names it, is the same.
func newOf[T any](*T) *T { return new(T) }

// TestUpstreamClient runs upstream's conformance gRPC client, unchanged,
// against the server.
func TestUpstreamClient(t *testing.T) {
	b := startBackend(t, false)
	client := &upstreamgrpc.DefaultClient{}
	t.Cleanup(client.Close)
	const authority = "grpc.example.com"

	for _, method := range []string{"Echo", "EchoTwo"} {
		t.Run(method, func(t *testing.T) {
			exp := upstreamgrpc.ExpectedResponse{
				RequestMetadata: &upstreamgrpc.RequestMetadata{
					Authority: authority,
					Metadata:  map[string]string{"x-test": "v", echowire.IDMetadata: "up-" + method},
				},
				Backend:   "echo-7f9c",
				Namespace: testPod.Namespace,
			}
			want := grpcechopb.UpstreamEchoMethod
			if method == "Echo" {
				exp.EchoRequest = newOf(exp.EchoRequest)
			} else {
				exp.EchoTwoRequest = newOf(exp.EchoTwoRequest)
				want = grpcechopb.UpstreamEchoTwoMethod
			}
			// Upstream's own convergence check: method, namespace and pod.
			upstreamgrpc.MakeRequestAndExpectEventuallyConsistentResponse(t, client, config.DefaultTimeoutConfig(), b.addr, exp)

			resp, err := client.SendRPC(t, b.addr, exp, 30*time.Second)
			if err != nil || resp.Code != codes.OK {
				t.Fatalf("SendRPC: %v, code %v", err, resp.Code)
			}
			as := resp.Response.GetAssertions()
			if as.GetFullyQualifiedMethod() != want || as.GetAuthority() != authority {
				t.Errorf("method, authority = %q, %q; want %q, %q", as.GetFullyQualifiedMethod(), as.GetAuthority(), want, authority)
			}
			c := as.GetContext()
			if c.GetNamespace() != testPod.Namespace || c.GetIngress() != testPod.Ingress ||
				c.GetServiceName() != testPod.Service || c.GetPod() != testPod.Pod {
				t.Errorf("context = %v, want %+v", c, testPod)
			}
			headers := map[string]string{}
			for _, h := range as.GetHeaders() {
				headers[h.GetKey()] = h.GetValue()
			}
			if headers["x-test"] != "v" || headers[":authority"] != authority {
				t.Errorf("headers = %v; want x-test: v and :authority: %s", headers, authority)
			}
			if resp.Trailers.Get(grpcecho.AttemptTrailer) == nil {
				t.Errorf("trailers %v lack %s", resp.Trailers, grpcecho.AttemptTrailer)
			}
			e, ok := b.ledger.Get("up-" + method)
			if !ok || len(e.Attempts) < 4 || e.Attempts[0].Method != want || e.Attempts[0].Outcome != ledger.Answered {
				t.Errorf("ledger entry = %+v, %t; want every call recorded", e, ok)
			}
		})
	}

	t.Run("EchoThree", func(t *testing.T) {
		resp, err := client.SendRPC(t, b.addr, upstreamgrpc.ExpectedResponse{EchoThreeRequest: newOf(upstreamgrpc.ExpectedResponse{}.EchoThreeRequest)}, 30*time.Second)
		if err != nil || resp.Code != codes.Unimplemented {
			t.Fatalf("SendRPC(EchoThree): %v, code %v; want UNIMPLEMENTED", err, resp.Code)
		}
	})

	t.Run("fault through upstream metadata", func(t *testing.T) {
		resp, err := client.SendRPC(t, b.addr, upstreamgrpc.ExpectedResponse{
			EchoRequest: newOf(upstreamgrpc.ExpectedResponse{}.EchoRequest),
			RequestMetadata: &upstreamgrpc.RequestMetadata{Metadata: map[string]string{
				echowire.IDMetadata: "up-fault", echowire.FaultMetadata: "grpc-status=UNAVAILABLE",
			}},
		}, 30*time.Second)
		if err != nil || resp.Code != codes.Unavailable {
			t.Fatalf("SendRPC: %v, code %v; want UNAVAILABLE", err, resp.Code)
		}
	})
}

// TestOwnUpstreamClient calls the server with grpcechopb's client of
// upstream's GrpcEcho, and checks that the service is served under
// echo-basic's name only: the generated client's own name is not served.
func TestOwnUpstreamClient(t *testing.T) {
	b := startBackend(t, false)
	ctx := withFault(timeout(t, 30*time.Second), "own-up", "")
	resp, err := grpcechopb.NewUpstreamGrpcEchoClient(b.conn).EchoTwo(ctx, &grpcechopb.EchoRequest{})
	if err != nil {
		t.Fatalf("EchoTwo: %v", err)
	}
	if got := resp.GetAssertions().GetFullyQualifiedMethod(); got != grpcechopb.UpstreamEchoTwoMethod {
		t.Errorf("fully qualified method %q, want %q", got, grpcechopb.UpstreamEchoTwoMethod)
	}
	if got := resp.GetAssertions().GetContext().GetPod(); got != testPod.Pod {
		t.Errorf("pod %q, want %q", got, testPod.Pod)
	}
	_, err = grpcechopb.NewUpstreamGrpcEchoClient(b.conn).EchoThree(ctx, &grpcechopb.EchoRequest{})
	if status.Code(err) != codes.Unimplemented {
		t.Errorf("EchoThree: %v; want UNIMPLEMENTED", err)
	}
	_, err = grpcechopb.NewGrpcEchoClient(b.conn).Echo(ctx, &grpcechopb.EchoRequest{})
	if status.Code(err) != codes.Unimplemented {
		t.Errorf("Echo under %s: %v; want UNIMPLEMENTED (only %s is served)", grpcechopb.GrpcEcho_ServiceDesc.ServiceName, err, grpcechopb.UpstreamServiceName)
	}
}
