package tests

import (
	"mime"
	"net/http"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"sigs.k8s.io/gateway-api/conformance/utils/suite"
	gwfeatures "sigs.k8s.io/gateway-api/pkg/features"

	"github.com/gatewitness/gatewitness/conformance/tests/internal/testclient"
	"github.com/gatewitness/gatewitness/contract/echowire"
	"github.com/gatewitness/gatewitness/echo-backend/echopb"
	"github.com/gatewitness/gatewitness/features"
)

// deadlineExceededLimit is the maxStreamDuration of the route in
// gatewitness/grpcroute-deadline-exceeded.yaml.
const deadlineExceededLimit = time.Second

// GRPCRouteMaxStreamDurationDeadlineExceeded checks the strict part of
// GEP-3139's expiry: a call that outlasts maxStreamDuration ends, in the
// timing window, with grpc-status 4 (DEADLINE_EXCEEDED), which the GEP
// requires, in a well-formed gRPC response:
//
//   - before the response headers, a trailers-only response: HTTP 200,
//     content-type application/grpc, grpc-status in the one HEADERS frame,
//     no body;
//   - after the response headers and some messages, every relayed message
//     whole, then trailers carrying grpc-status, and no reset.
//
// The client and bidirectional streams are checked by the status a gRPC
// client reports.
var GRPCRouteMaxStreamDurationDeadlineExceeded = suite.ConformanceTest{
	ShortName:   "GRPCRouteMaxStreamDurationDeadlineExceeded",
	Description: "A call that outlasts a GRPCRoute rule's maxStreamDuration ends with DEADLINE_EXCEEDED: trailers-only before response headers, trailers after whole messages once headers were sent",
	Features: []features.FeatureName{
		gwfeatures.SupportGateway,
		gwfeatures.SupportGRPCRoute,
		features.SupportGRPCRouteMaxStreamDuration,
		features.SupportGRPCRouteMaxStreamDurationDeadlineExceeded,
	},
	Manifests: []string{ManifestPrefix + "grpcroute-deadline-exceeded.yaml"},
	Parallel:  true,
	Test:      testGRPCRouteMaxStreamDurationDeadlineExceeded,
}

func testGRPCRouteMaxStreamDurationDeadlineExceeded(t *testing.T, s *suite.ConformanceTestSuite) {
	const host = "deadline-exceeded.grpc.gatewitness.example"
	g := newGRPCTarget(t, s, "grpcroute-deadline-exceeded")
	cc := g.conn(t, host)
	g.waitReady(t, cc)
	measure(t)
	limit := deadlineExceededLimit
	deadlineExceeded := "4"

	t.Run("before-headers/unary", func(t *testing.T) {
		t.Parallel()
		r := g.rawCall(t, grpcGiveUpAfter(limit), host, "Unary", "",
			echowire.IDMetadata, testclient.NewID(t), echowire.FaultMetadata, grpcOutlastFault["unary"])
		r.record(t)
		r.wantCut(t, limit)
		if r.gaveUp {
			return
		}
		if r.status != http.StatusOK {
			t.Errorf("HTTP status %d, want 200: gRPC clients read any other status as UNAVAILABLE or worse, not DEADLINE_EXCEEDED", r.status)
		}
		if ct, _, _ := mime.ParseMediaType(r.header.Get("Content-Type")); ct != "application/grpc" && !isGRPCSubtype(ct) {
			t.Errorf("content-type %q, want application/grpc", r.header.Get("Content-Type"))
		}
		if got := r.header.Get("Grpc-Status"); got != deadlineExceeded {
			t.Errorf("grpc-status in the response headers %s (trailer: %s), want a trailers-only response with %s (DEADLINE_EXCEEDED)",
				grpcCodeName(got), grpcCodeName(r.trailer.Get("Grpc-Status")), deadlineExceeded)
		}
		if len(r.messages) != 0 || r.partial != 0 || len(r.trailer) != 0 {
			t.Errorf("%d messages, %d bytes of a partial message, trailers %v; want a trailers-only response: no body, no trailers",
				len(r.messages), r.partial, r.trailer)
		}
		if r.bodyErr != nil {
			t.Errorf("reading the response: %v; want a clean end of stream", r.bodyErr)
		}
	})

	t.Run("after-headers/server-stream", func(t *testing.T) {
		t.Parallel()
		r := g.rawCall(t, grpcGiveUpAfter(limit), host, "ServerStream", "",
			echowire.IDMetadata, testclient.NewID(t), echowire.FaultMetadata, grpcOutlastFault["server-stream"])
		r.record(t)
		r.wantCut(t, limit)
		if r.gaveUp {
			return
		}
		if r.status != http.StatusOK || r.header.Get("Grpc-Status") != "" {
			t.Errorf("HTTP %d with grpc-status %s in the headers; want 200 and the status in the trailers, after the messages",
				r.status, grpcCodeName(r.header.Get("Grpc-Status")))
		}
		if got := r.trailer.Get("Grpc-Status"); got != deadlineExceeded {
			t.Errorf("grpc-status in the trailers %s, want %s (DEADLINE_EXCEEDED)", grpcCodeName(got), deadlineExceeded)
		}
		if r.bodyErr != nil {
			t.Errorf("reading the response: %v; want messages then trailers, not a reset", r.bodyErr)
		}
		if r.partial != 0 {
			t.Errorf("the body ends with %d bytes of an incomplete message; want whole messages only", r.partial)
		}
		if len(r.messages) == 0 {
			t.Errorf("no message before the status; the backend sends one every 50ms, so the response headers and messages should be through")
		}
		for i, m := range r.messages {
			e := &echopb.EchoResponse{}
			if err := proto.Unmarshal(m, e); err != nil || e.GetMessageIndex() != int32(i) {
				t.Errorf("message %d: index %d, %v; want index %d: a message was lost, split or altered", i, e.GetMessageIndex(), err, i)
				break
			}
		}
	})

	for _, kind := range []string{"client-stream", "bidi-stream"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			r := grpcRunKind(t, cc, kind, testclient.NewID(t), grpcOutlastFault[kind], grpcGiveUpAfter(limit))
			grpcWantCut(t, r, limit)
			if r.err != nil && !r.gaveUp && r.code() != codes.DeadlineExceeded {
				t.Errorf("status %v, want DeadlineExceeded", r.code())
			}
		})
	}
}

// isGRPCSubtype reports whether ct is application/grpc+codec, such as
// application/grpc+proto.
func isGRPCSubtype(ct string) bool {
	const prefix = "application/grpc+"
	return len(ct) > len(prefix) && ct[:len(prefix)] == prefix
}
