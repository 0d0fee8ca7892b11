package tests

// Evidence that the data plane serves a configuration step. A status
// (Accepted, Programmed) says what the controller decided, not what every
// replica of the data plane serves: a data plane fed asynchronously, or
// one of several replicas behind the Gateway's address that reloads late,
// answers from its older configuration for a while after the status is
// written. So a step that added routes ends when requests that only the
// new configuration answers that way (a pod of the route's backend
// echoes them) come back servedInARow times in a row, each on a
// connection of its own; a step that deleted routes ends when as many in
// a row are no longer answered by that backend. Until then the step holds
// timing windows off (schedule.go).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/gateway-api/conformance/utils/kubernetes"
	"sigs.k8s.io/gateway-api/conformance/utils/suite"

	"github.com/gatewitness/gatewitness/conformance/tests/internal/testclient"
	"github.com/gatewitness/gatewitness/contract/observe"
	"github.com/gatewitness/gatewitness/echo-backend/echopb"
)

// minServedInARow is the fewest answers in a row a step's evidence needs.
// Upstream's consistency checks need RequiredConsecutiveSuccesses (3 by
// default) and the suite takes more when it is set higher, but 3 do not
// cross replicas: with two replicas behind one address and connections
// spread at random, 3 fresh connections all reach the same replica one
// time in four, and a check that polls a lagging replica for seconds has
// dozens of chances at it. 20 in a row all reach one of two replicas
// with a chance of 2^-19 per run of answers (one of three replicas:
// (2/3)^20, 3e-4); in-process they take a few milliseconds.
const minServedInARow = 20

// servedInARow is how many answers in a row a step's evidence needs.
func servedInARow(s *suite.ConformanceTestSuite) int {
	return max(s.TimeoutConfig.RequiredConsecutiveSuccesses, minServedInARow)
}

// evidencePoll is how long a check waits after an answer that does not
// count, before it asks again; answers that count follow each other at
// once, as upstream's AwaitConvergence does.
const evidencePoll = 50 * time.Millisecond

// answer is what one request of a check came to.
type answer struct {
	// served: a pod of the route's backend answered.
	served bool
	// what says what answered, for messages: "a pod of X (pod Y)", "the
	// data plane itself: status 404", "no answer: ...".
	what string
	// timedOut: the request ran out of time, at the client or at the
	// gateway (a 504, a DEADLINE_EXCEEDED). That says nothing of which
	// configuration answered (a route's own short timeout, a loaded
	// machine), so such an answer neither counts in a row nor ends it.
	timedOut bool
}

// timedOutAnswer is the answer of a request that ran out of time.
func timedOutAnswer(what string) answer {
	return answer{what: what + " (a timeout, which says nothing of the configuration that answered)", timedOut: true}
}

// isTimeout reports whether err is a request's deadline or a network
// timeout.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}

// echoPod is the pod an echo-backend's JSON answer names, or "".
func echoPod(body []byte) string {
	var echo struct {
		Pod string `json:"pod"`
	}
	if json.Unmarshal(body, &echo) != nil {
		return ""
	}
	return echo.Pod
}

// httpAnswer says who answered x: a pod of backend (the route's), another
// backend, the data plane itself (no echo in the body), or no one.
func httpAnswer(x testclient.Exchange, backend string) answer {
	switch pod := echoPod(x.Body); {
	case x.Err != nil && isTimeout(x.Err):
		return timedOutAnswer(fmt.Sprintf("no answer: %v", x.Err))
	case x.Err != nil:
		return answer{what: fmt.Sprintf("no answer: %v", x.Err)}
	case pod == "" && x.Status == http.StatusGatewayTimeout:
		return timedOutAnswer(fmt.Sprintf("status 504 from the data plane itself: %q", bodyStart(x.Body)))
	case pod != "" && strings.HasPrefix(pod, backend):
		return answer{served: x.Status == http.StatusOK, what: fmt.Sprintf("status %d from a pod of %s (%s)", x.Status, backend, pod)}
	case pod != "":
		return answer{what: fmt.Sprintf("status %d from pod %s, which is not %s's: another route's backend", x.Status, pod, backend)}
	default:
		return answer{what: fmt.Sprintf("status %d from the data plane itself (no backend's echo in the body): %q", x.Status, bodyStart(x.Body))}
	}
}

// bodyStart is the first line of body, at most 120 bytes, for messages:
// a data plane's own answer usually says why it made it.
func bodyStart(body []byte) string {
	line, _, _ := strings.Cut(string(body[:min(len(body), 120)]), "\n")
	return strings.TrimSpace(line)
}

// check is one evidence check of a step: what it waits for, for messages,
// and a request that says whether the new configuration answered it.
type check struct {
	what string
	try  func() answer
	// oneAtATime sends the row's requests one after the other, never
	// together: for a check whose answers each end the data plane's
	// connection to the backend (attachRoutesQuietly's "Connection:
	// close", which an HTTP/2 backend turns into a GOAWAY), requests sent
	// together race that GOAWAY on one connection and are refused.
	oneAtATime bool
}

// awaitInARow sends c.try until want (served, or not served) comes
// servedInARow times in a row, waiting evidencePoll after any other
// answer. Once one answer counts, the rest of the row follows at once, in
// waves of rowWave requests sent together, each on a connection of its
// own: a row is as good evidence sent a few at a time as one after the
// other (every connection is spread on its own), and on a loaded machine
// 20 handshakes one after the other take seconds. A wave with an answer
// that does not count ends the row, so a replica that lags costs a wave,
// not a row, per poll; an answer that timed out neither counts nor ends
// it (rowOf). It returns the times, from start, of the first
// answer that counted and of the last, or, after the suite's
// MaxTimeToConsistency, an error that says what answered last.
func awaitInARow(s *suite.ConformanceTestSuite, c check, want bool, start time.Time) (first, all time.Duration, err error) {
	need := servedInARow(s)
	deadline := time.Now().Add(s.TimeoutConfig.MaxTimeToConsistency)
	first = -1
	for {
		last := c.try()
		if last.served == want && !last.timedOut {
			if first < 0 {
				first = time.Since(start)
			}
			miss, ok := rowOf(c, want, need-1)
			if ok {
				return first, time.Since(start), nil
			}
			last = miss
		}
		if time.Now().After(deadline) {
			state, verb := "not yet served", "served"
			if !want {
				state, verb = "still served after its deletion", "no longer served"
			}
			return first, time.Since(start), fmt.Errorf("%s: %s: not %s %d times in a row, each on a connection of its own, within %v; last answer: %s",
				state, c.what, verb, need, s.TimeoutConfig.MaxTimeToConsistency, last.what)
		}
		time.Sleep(evidencePoll) // polling interval, not synchronisation
	}
}

// rowWave is how many requests of a row go at once.
const rowWave = 4

// rowOf sends tries of c, rowWave at a time, until n of them came to want,
// and reports whether they did, or else the answer that did not. An answer
// that timed out is sent again, up to n times in one row: one more, and
// the row ends on it.
func rowOf(c check, want bool, n int) (miss answer, ok bool) {
	wave := rowWave
	if c.oneAtATime {
		wave = 1
	}
	timeouts := 0
	for counted := 0; counted < n; {
		answers := make([]answer, min(wave, n-counted))
		var wg sync.WaitGroup
		for i := range answers {
			wg.Go(func() { answers[i] = c.try() })
		}
		wg.Wait()
		for _, a := range answers {
			switch {
			case a.timedOut && timeouts < n:
				timeouts++
			case a.timedOut || a.served != want:
				return a, false
			default:
				counted++
			}
		}
	}
	return answer{}, true
}

// stepStarts is when each registered test's current configuration step
// began, by test name (ConfigStep, EndWindows).
var stepStarts sync.Map

// stepStart returns when the configuration step t (or the test it is a
// subtest of) is in began, or fallback when no step is known (a test run
// by upstream's runner).
func stepStart(t *testing.T, fallback time.Time) time.Time {
	if name, ok := sched.holder(t); ok {
		if v, ok := stepStarts.Load(name); ok {
			return v.(time.Time)
		}
	}
	return fallback
}

// statusSeen is when a step's status was seen: its Gateway Programmed,
// its routes Accepted.
type statusSeen struct {
	start, programmed, accepted time.Time
}

// gatewayProgrammed waits until the Gateway gw is Programmed and returns
// when it was seen.
func gatewayProgrammed(t *testing.T, s *suite.ConformanceTestSuite, gw types.NamespacedName) time.Time {
	t.Helper()
	kubernetes.GatewayMustHaveCondition(t, s.Client, s.TimeoutConfig, gw, metav1.Condition{
		Type: string(gwv1.GatewayConditionProgrammed), Status: metav1.ConditionTrue,
	})
	return time.Now()
}

// served is the evidence of a step that added routes: it waits until c is
// served servedInARow times in a row and records the step's times, each
// from the step's start.
func served(t *testing.T, s *suite.ConformanceTestSuite, c check, routes string, seen statusSeen) {
	t.Helper()
	from := stepStart(t, seen.start)
	first, all, err := awaitInARow(s, c, true, from)
	if err != nil {
		t.Fatal(err)
	}
	since := func(at time.Time) time.Duration { // zero for a status not waited for
		if at.IsZero() {
			return 0
		}
		return max(at.Sub(from), 0)
	}
	observe.Record(t, "consistency", observe.Consistency{
		Step: "served", Routes: routes,
		Accepted: since(seen.accepted), Programmed: since(seen.programmed),
		FirstServed: first, Served: all,
	})
}

// retire makes the routes of c a part of t's clean-up as evidence: when
// t's timing windows end (EndWindows, before the objects of its manifests
// are deleted), del deletes the routes, if given; when its clean-up's
// configuration step ends, after every deletion, c must be no longer
// served servedInARow times in a row before the step lets timing windows
// open. Under upstream's runner, which has no schedule, it does nothing.
func retire(t *testing.T, s *suite.ConformanceTestSuite, c check, routes string, del func() error) {
	t.Helper()
	name, ok := sched.holder(t)
	if !ok {
		return
	}
	var from time.Time
	sched.atStepEnd(name, func() {
		if del != nil {
			from = time.Now()
			if err := del(); err != nil {
				t.Errorf("deleting %s before the rest of the test's objects: %v", routes, err)
			}
		}
	}, func() {
		if from.IsZero() {
			from = stepStart(t, time.Now())
		}
		first, all, err := awaitInARow(s, c, false, from)
		if err != nil {
			// The test's behaviour passed or failed on its own; a route
			// still served after its deletion is a defect of its own,
			// and the windows that open next are not free of it.
			t.Errorf("after the test: %v", err)
			return
		}
		observe.Record(t, "consistency", observe.Consistency{Step: "deleted", Routes: routes, FirstServed: first, Served: all})
	})
}

// deleteRoutes returns a function that deletes the routes named in
// infraNamespace, as objects like obj (an empty HTTPRoute or GRPCRoute):
// the route first, so that no later deletion of its backend changes what
// the data plane serves after the route is gone. A route already gone is
// no error.
func deleteRoutes(s *suite.ConformanceTestSuite, obj func() client.Object, routes ...string) func() error {
	return func() error {
		for _, r := range routes {
			o := obj()
			o.SetNamespace(infraNamespace)
			o.SetName(r)
			ctx, cancel := context.WithTimeout(context.Background(), s.TimeoutConfig.DeleteTimeout)
			err := client.IgnoreNotFound(s.Client.Delete(ctx, o))
			cancel()
			if err != nil {
				return fmt.Errorf("%s %s/%s: %w", o.GetObjectKind().GroupVersionKind().Kind, infraNamespace, r, err)
			}
		}
		return nil
	}
}

func newHTTPRoute() client.Object { return &gwv1.HTTPRoute{} }
func newGRPCRoute() client.Object { return &gwv1.GRPCRoute{} }

// httpCheck is the check of path on host through the Gateway at gwAddr,
// answered by a pod of backend, one connection per request (c's client
// keeps none).
func httpCheck(t *testing.T, c *testclient.Route, path, backend string) check {
	return check{
		what: fmt.Sprintf("%s%s through the Gateway %s, by a pod of %s", c.Host(), path, c.Addr(), backend),
		try: func() answer {
			return httpAnswer(c.Do(t, testclient.Request{Path: path, Limit: 5 * time.Second}), backend)
		},
	}
}

// grpcCheck is the check of an Echo.Unary call with authority through the
// Gateway of g, answered by a pod of backend (any echo-backend when
// backend is ""), on a connection of its own each time.
func grpcCheck(g *grpcTarget, authority, backend string) check {
	by := "an echo-backend"
	if backend != "" {
		by = "a pod of " + backend
	}
	return check{
		what: fmt.Sprintf("Echo.Unary for %s through the Gateway %s, by %s", authority, g.addr, by),
		try: func() answer {
			cc, err := grpc.NewClient("passthrough:///"+g.addr,
				grpc.WithTransportCredentials(insecure.NewCredentials()),
				grpc.WithAuthority(authority),
				grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) { return g.dial(ctx, "tcp", addr) }),
			)
			if err != nil {
				return answer{what: fmt.Sprintf("no connection: %v", err)}
			}
			defer cc.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			resp, err := echopb.NewEchoClient(cc).Unary(ctx, &echopb.EchoRequest{})
			if status.Code(err) == codes.DeadlineExceeded {
				return timedOutAnswer(fmt.Sprintf("the call failed: %v", err))
			}
			if err != nil {
				return answer{what: fmt.Sprintf("the call failed: %v", err)}
			}
			pod := resp.GetPod().GetPod()
			if !strings.HasPrefix(pod, backend) {
				return answer{what: fmt.Sprintf("answered by pod %q, which is not %s's: another route's backend", pod, backend)}
			}
			return answer{served: true, what: by + " (" + pod + ")"}
		},
	}
}

// routeNames is how a step's routes are named in observations.
func routeNames(kind string, routes []string) string {
	nns := make([]string, len(routes))
	for i, r := range routes {
		nns[i] = types.NamespacedName{Namespace: infraNamespace, Name: r}.String()
	}
	return kind + " " + strings.Join(nns, ", ")
}
