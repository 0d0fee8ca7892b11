// Package tests holds gatewitness's own conformance tests: values of the
// upstream suite.ConformanceTest type, so they run under gatewitness's runner
// next to the upstream Gateway API tests, and so an implementation that
// uses the upstream runner can add them with one line:
//
//	cSuite.Run(t, append(upstreamtests.ConformanceTests, gatewitness.ConformanceTests...))
//
// with gatewitness.Manifests added to ConformanceOptions.ManifestFS.
//
// # Adding a test
//
// A test touches at most six places, and a fast Go test (no cluster, no
// child run) fails when one is missed, naming the file and the missing
// item:
//
//  1. <stem>.go in this package: a package-level variable X of type
//     suite.ConformanceTest, whose ShortName is "X" (unique across
//     upstream's tests and ours), a Description that says exactly what the
//     test verifies, Manifests (ManifestPrefix + "<stem>.yaml") and
//     Test: testX, a function declared in the same file. Features lists
//     what the test needs: upstream names where the meaning matches, and at
//     least one of gatewitness's own (so the test never counts in an
//     upstream profile). Every assertion is gated on the feature whose
//     text requires it: a stricter reading is a finer feature the test
//     checks only when s.SupportedFeatures has it. Timing windows derive
//     their durations from TimingTolerance, and say beside each bound why
//     an earlier (or later) event fails. How a test talks to the
//     echo-backend (a route client that takes t per call, request ids,
//     ledger reads, admin switches, and Poll, the one way to wait) is
//     package internal/testclient; helpers shared by tests
//     (attachRoutesQuietly, expectRetriedOnFreshConnection) are in
//     httproute_helpers.go and beside the tests that first needed them.
//     (TestConformanceTestsAreWellFormed, TestTestFilesFollowTheRecipe)
//  2. gatewitness/<stem>.yaml (or <stem>-<more>.yaml): the routes, backends
//     and other objects the test needs, in the namespaces of the upstream
//     base manifests. The directory is part of the path, so it never
//     collides with an upstream manifest. (TestManifestsStayUnderPrefix,
//     TestTestFilesFollowTheRecipe)
//  3. ConformanceTests, below: the test's variable, in its area's group.
//     (TestEveryConformanceTestIsListed)
//  4. Its feature, if it needs a new one: an entry in its area's list in
//     features/gatewitness_<area>.go, which puts it in that area's
//     GATEWITNESS-* profile, with its Channels: for each supported Gateway
//     API release, standard when the manifests of the tests that check it
//     use only fields of that release's standard CRDs
//     (TestFeatureChannelsFollowTheManifests names the field otherwise); an upstream feature the profile lacks goes in
//     the profile's Extended list in features/gatewitness.go.
//     (TestEveryGatewitnessTestCountsInAGatewitnessProfile says which, for
//     the missing feature.) The reference gateway claims a feature in
//     conformance/runner/reference.go in the change that implements it in
//     gateway/, not in the test's change
//     (TestReferenceGatewayClaimsEveryGatewitnessFeature).
//  5. Its breakage, in breakages_test.go: a reference gateway broken the
//     way a real data plane goes wrong, which the test fails while every
//     other test of the same profiles passes, at the smallest and the
//     largest accepted timing tolerance. A breakage declares its scope
//     once: a Name, what real data plane it Models, the Gateway (a change
//     to the snapshot the data plane is handed, runnertest.ReferenceGateway's
//     MutateConfig, for a field the data plane ignores; else the hook
//     points it sets, dataplanetest.Hooks or probeproxytest.Hooks), its
//     Profiles, the features it Breaks (every test of its profiles that
//     needs one must fail), the further tests it Fails or Skips by name,
//     and Passes, one reason why the other tests of its profiles pass. A
//     new test of existing features therefore costs the table nothing
//     when a breakage already breaks one of its features or none must
//     fail it, and one name in one breakage's Fails otherwise.
//     (TestEveryBreakageAccountsForItsScope, fast, says which breakage
//     and what to write; then TestEveryGatewitnessTestHasABreakage runs
//     them.)
//  6. Its semantics doc: the prose in docs/semantics/<area>.md; the tables
//     of tests and breakages there are generated from the registries
//     (go generate ./conformance/tests). (TestSemanticsDocTables)
//
// A test that needs the backend to behave in a new way at run time (a
// mode, such as refusing its next connection) adds it to the echo-backend
// first, as echo-backend/README.md §9 says: control, contract/echowire, the
// admin route in echo-backend/httpecho/admin.go, and the README's table and
// example, which TestREADMEAdminTableIsWhatTheBackendServes and
// TestREADMEAdminExamplesAreWhatTheBackendAnswers check; the test then
// switches it with testclient.Route.Admin.
//
// Tests record what they saw with observe.Record, so reports show
// behaviour as well as verdicts.
package tests

//go:generate env GATEWITNESS_UPDATE_DOCS=1 go test -run TestSemanticsDocTables .

import (
	"embed"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"sigs.k8s.io/gateway-api/conformance/utils/suite"
)

// ManifestPrefix is the directory, within Manifests, that holds the
// manifests of gatewitness's tests. Tests name their manifests with it.
const ManifestPrefix = "gatewitness/"

// Manifests holds the manifests of gatewitness's tests, under
// ManifestPrefix. Pass it to the upstream suite in
// ConformanceOptions.ManifestFS next to upstream's own manifests.
//
//go:embed gatewitness
var Manifests embed.FS

// ConformanceTests lists gatewitness's conformance tests, in the order they
// run, grouped by profile. It is package-level data: no test registers
// itself.
var ConformanceTests = []suite.ConformanceTest{
	// GATEWITNESS-HTTP-RESILIENCE: HTTPRoute retries and timeouts.
	HTTPRouteRetryCodesAndAttempts,
	HTTPRouteRetryBackoffGaps,
	HTTPRouteRetryBackendTimeoutCancels,
	HTTPRouteRetryConnectionErrors,
	HTTPRouteRetryRefusedOnce,
	HTTPRouteRetryStreamReset,
	HTTPRouteRetryRequestTimeoutBudget,
	HTTPRouteRetryBodyReplay,
	HTTPRouteTimeoutsWithoutRetry,
	// GATEWITNESS-GRPC-DEADLINES: GRPCRoute timeouts (GEP-3139).
	GRPCRouteMaxStreamDuration,
	GRPCRouteStrictEnforcement,
	GRPCRouteMaxStreamDurationDeadlineExceeded,
	GRPCRouteTimeoutPropagation,
	GRPCRouteMaxStreamDurationCancelsBackend,
	// GATEWITNESS-CONNECTION-TIMEOUTS: connection-level proxy timeouts.
	ConnectionServerTimeout,
	ConnectionClientTimeout,
	ConnectionTunnelTimeout,
	ConnectionClientFinTimeout,
	ConnectionClientFinHalfOpen,
	ConnectionServerFinTimeout,
	ConnectionTLSInspectDelay,
	// GATEWITNESS-MESH-PROBES: health probes through a mesh's sidecar.
	MeshProbeHTTP,
	MeshProbeTCP,
	MeshProbeGRPC,
	MeshProbeRewrite,
	// GATEWITNESS-RETRY-BUDGETS: XBackendTrafficPolicy retryConstraint.
	BackendRetryBudgetMinRetryRate,
	BackendRetryBudgetPerBackend,
	BackendRetryBudgetUnderLoad,
	BackendRetryBudgetRetriesWithinBudget,
	// GATEWITNESS-FAULT-FIDELITY: backend failures mid-response, and
	// streams, as the client and the backend see them.
	FaultFidelityHTTP1Truncation,
	FaultFidelityHTTP2Truncation,
	FaultFidelitySingleAttempt,
	FaultFidelityStreamedResponses,
	FaultFidelityGRPCFailure,
	FaultFidelityGRPCStreaming,
}

// IsGatewitnessTest reports whether name is the ShortName of one of
// gatewitness's tests (rather than upstream's).
func IsGatewitnessTest(name string) bool {
	return slices.ContainsFunc(ConformanceTests, func(ct suite.ConformanceTest) bool { return ct.ShortName == name })
}

// The timing tolerance: how late a timed behaviour may be and still pass.
// Every test derives the durations of its scenarios from it, so that no
// verdict changes anywhere in [MinTimingTolerance, MaxTimingTolerance]: a
// behaviour the test must reject stays outside the window at the largest
// tolerance, and one it must accept stays inside at the smallest. The
// negative checks run every breakage at both ends.
const (
	// DefaultTimingTolerance is the tolerance tests use unless the runner
	// sets another one: the smallest accepted. On a responsive cluster the
	// reference gateway's timers fire within milliseconds of their time;
	// a loaded machine needs more (this repository's own tests run the
	// suite at CITimingTolerance; see docs/semantics/timing-tolerance.md).
	DefaultTimingTolerance = MinTimingTolerance
	// MinTimingTolerance is the smallest tolerance accepted. The windows'
	// lower ends allow for what the backend's clock cannot see (a fraction
	// of the tolerance, see ledgerLag and arrivalLag); below 500ms those
	// allowances would be shorter than a loaded node's scheduling delays,
	// and a verdict would depend on them.
	MinTimingTolerance = 500 * time.Millisecond
	// MaxTimingTolerance is the largest tolerance accepted: the gaps the
	// tests leave between what a gateway must and must not do are sized
	// for it (a slow cluster needs at most this much).
	MaxTimingTolerance = 2 * time.Second
	// CITimingTolerance is the tolerance this repository's own runs of the
	// suite use on their shared two-core machine, where the healthy
	// reference gateway's timers have been seen more than a second late
	// under the race detector with other test processes running. It is
	// within the accepted range, so no verdict of a breakage depends on it.
	CITimingTolerance = 1500 * time.Millisecond
)

var timingTolerance atomic.Int64

func init() { timingTolerance.Store(int64(DefaultTimingTolerance)) }

// TimingTolerance is how late a timed behaviour may be and still pass: a
// test that expects something after d accepts it in [d, d+TimingTolerance()].
// It is the runner's --timing-tolerance option.
func TimingTolerance() time.Duration { return time.Duration(timingTolerance.Load()) }

// SetTimingTolerance sets what TimingTolerance returns. The runner calls it
// before a run. d must be within [MinTimingTolerance, MaxTimingTolerance].
func SetTimingTolerance(d time.Duration) error {
	if err := CheckTimingTolerance(d); err != nil {
		return fmt.Errorf("tests: %w", err)
	}
	timingTolerance.Store(int64(d))
	return nil
}

// CheckTimingTolerance reports whether d is an accepted timing tolerance,
// with an error naming the accepted range.
func CheckTimingTolerance(d time.Duration) error {
	if d < MinTimingTolerance || d > MaxTimingTolerance {
		return fmt.Errorf("timing tolerance %v is out of range; accepted: a duration from %v to %v, such as %v",
			d, MinTimingTolerance, MaxTimingTolerance, DefaultTimingTolerance)
	}
	return nil
}
