package tests

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/gateway-api/conformance/utils/suite"
	gwfeatures "sigs.k8s.io/gateway-api/pkg/features"

	"github.com/gatewitness/gatewitness/contract/observe"
	"github.com/gatewitness/gatewitness/features"
)

// ffStreamChunks is how many chunks (or events) the streaming backend
// sends, one interval apart.
const ffStreamChunks = 4

// ffStreamInterval is the gap between two chunks the backend flushes: the
// timing tolerance, so that a Gateway that holds the response until its
// end delivers the first chunk (ffStreamChunks-1) intervals late, twice
// the tolerance past its bound, at any tolerance.
func ffStreamInterval() time.Duration { return TimingTolerance() }

// FaultFidelityStreamedResponses checks that a streamed response is not
// buffered: the backend sends its answer in ffStreamChunks parts, each
// flushed, one interval (the timing tolerance) apart, and every part must
// reach the client no later than the tolerance after the backend sent it,
// counted from when the client had written the request (the backend
// cannot send part i earlier than i intervals after it got the request). Parts may
// arrive together (a Gateway may coalesce writes) as long as each is in
// time. Cases: a chunked HTTP/1.1 response, the same over h2c and TLS
// (HTTP/2 DATA frames when ALPN chooses h2), and server-sent events
// (text/event-stream, each event a part) over HTTP/1.1 and TLS. Holding a
// response until it ends delivers the first part two tolerances late, and
// fails at any tolerance.
var FaultFidelityStreamedResponses = suite.ConformanceTest{
	ShortName:   "FaultFidelityStreamedResponses",
	Description: "Each chunk a backend flushes (HTTP/1.1 chunked, HTTP/2, server-sent events) reaches the client within the timing tolerance of being sent: the Gateway does not hold a streamed response until it ends.",
	Features: []features.FeatureName{
		gwfeatures.SupportGateway,
		gwfeatures.SupportHTTPRoute,
		features.SupportFaultFidelityStreaming,
	},
	Manifests: []string{ManifestPrefix + "fault-fidelity-stream.yaml"},
	Parallel:  true,
	Test:      testFaultFidelityStreamedResponses,
}

func testFaultFidelityStreamedResponses(t *testing.T, s *suite.ConformanceTestSuite) {
	g := newFFTarget(t, s, "fault-fidelity-stream")
	measure(t) // from here the parts' arrival is timed: no route changes while it is
	spec := fmt.Sprintf("chunks=%d;interval=%v", ffStreamChunks, ffStreamInterval())
	limit := ffStreamChunks*ffStreamInterval() + ffGiveUp()
	cases := []struct {
		name string
		via  string
		sse  bool
	}{
		{"h1-chunked", viaH1, false},
		{"h2c", viaH2C, false},
		{"tls", viaTLS, false},
		{"sse-h1", viaH1, true},
		{"sse-tls", viaTLS, true},
	}
	for _, tc := range cases {
		for _, backend := range ffBackends {
			t.Run(tc.name+"/"+backend[1:len(backend)-1]+"-backend", func(t *testing.T) {
				t.Parallel()
				g.skipUnless(t, tc.via, backend)
				var h http.Header
				if tc.sse {
					h = http.Header{"Accept": {"text/event-stream"}}
				}
				x := g.get(t, g.client(t, tc.via, false), tc.via, backend+"stream", spec, h, limit)
				x.record(t)
				if x.Err != nil || x.BodyErr != nil || x.Status != http.StatusOK {
					t.Fatalf("%s: want the backend's 200 and its whole streamed body", x.describe())
				}
				observe.Record(t, "arrivals", fmt.Sprint(x.Arrivals))
				ends := chunkEnds(len(x.Body), ffStreamChunks)
				if tc.sse {
					if ct := x.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
						t.Fatalf("Content-Type %q; want the backend's text/event-stream", ct)
					}
					if ends = eventEnds(x.Body); len(ends) != ffStreamChunks {
						t.Fatalf("%d events in %q; want the backend's %d", len(ends), x.Body, ffStreamChunks)
					}
				}
				checkChunkArrivals(t, x, ends)
			})
		}
	}
}

// chunkEnds is where each of n parts of a body of size bytes ends, as the
// echo-backend splits it.
func chunkEnds(size, n int) []int {
	ends := make([]int, n)
	for i := range n {
		ends[i] = (i + 1) * size / n
	}
	return ends
}

// eventEnds is where each server-sent event of body ends (after its blank
// line).
func eventEnds(body []byte) []int {
	var ends []int
	for off := 0; ; {
		i := bytes.Index(body[off:], []byte("\n\n"))
		if i < 0 {
			return ends
		}
		off += i + 2
		ends = append(ends, off)
	}
}

// checkChunkArrivals fails t unless part i (ending at ends[i]) arrived no
// later than i intervals plus the tolerance after the request was written.
func checkChunkArrivals(t *testing.T, x ffExchange, ends []int) {
	t.Helper()
	tol, d := TimingTolerance(), ffStreamInterval()
	for i, end := range ends {
		at, ok := x.arrivedAt(end)
		bound := time.Duration(i)*d + tol
		observe.Record(t, fmt.Sprintf("part-%d", i+1), observe.Within(at, time.Duration(i)*d, 0, bound))
		if !ok || at > bound {
			t.Errorf("part %d of %d (bytes up to %d) arrived %v after the request was written; want by %v: the backend sent it %v after the request, and the tolerance is %v",
				i+1, len(ends), end, at.Round(time.Millisecond), bound, time.Duration(i)*d, tol)
		}
	}
}
