// Package reports turns the record of a conformance run into the files
// people and machines read:
//
//   - run.json, the run record itself (Run), from which every other file
//     can be written again (WriteAll);
//   - the upstream ConformanceReport YAML with the README.md the Gateway
//     API project asks for beside it, laid out as upstream's
//     conformance/reports folder is, so an implementer can submit it;
//   - the gatewitness report (YAML): gatewitness's profiles, what each of
//     gatewitness's tests observed, the timing tolerance and the environment;
//   - JUnit XML for CI systems, and Markdown summaries for people (a full
//     one and a short one for a pull-request comment).
//
// VerifySubmission checks a ConformanceReport against upstream's
// submission rules.
package reports

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/gatewitness/gatewitness/contract/observe"
	confv1 "sigs.k8s.io/gateway-api/conformance/apis/v1"
	gwfeatures "sigs.k8s.io/gateway-api/pkg/features"
)

// Result is the outcome of one conformance test.
type Result string

const (
	// Pass means the test ran and passed.
	Pass Result = "pass"
	// Fail means the test ran and failed.
	Fail Result = "fail"
	// Skip means the test did not run to completion: it was not selected,
	// its features are not supported, or it skipped itself.
	Skip Result = "skip"
	// Inconclusive means a timing test missed a window only by as much as
	// the suite's own timers were late, in its run and again in a rerun
	// alone: neither a pass nor the implementation's failure. Its Message
	// gives both figures.
	Inconclusive Result = "inconclusive"
	// Interrupted means the test had not finished when the run stopped:
	// it was cut short, or never started, because the run was interrupted
	// (or, in an incomplete record, had not finished when the record was
	// written). It is never a failure. Only a record whose Status is not
	// complete holds such results.
	Interrupted Result = "interrupted"
)

// RunStatus says whether a record is of a whole run.
type RunStatus string

const (
	// RunComplete is a run that ended by itself: every test it planned
	// has its result. Empty in JSON, as in records of a gatewitness that
	// knew no other status.
	RunComplete RunStatus = ""
	// RunIncomplete is a record written while the run was going
	// (IncompleteRunFileName), rewritten as tests start and finish: a run
	// killed outright leaves it, saying how far the run got.
	RunIncomplete RunStatus = "incomplete"
	// RunInterrupted is a run stopped by a signal (Interruption says
	// which, and when): the tests that had finished keep their results,
	// the others are Interrupted, and no upstream report is written.
	RunInterrupted RunStatus = "interrupted"
)

// Interruption says when and how a run was stopped.
type Interruption struct {
	// At is when the signal arrived.
	At time.Time `json:"at"`
	// Signal names it, e.g. "SIGINT" or "SIGTERM".
	Signal string `json:"signal"`
}

// Source says whose suite a test belongs to. Upstream tests count only in
// the upstream report, gatewitness's only in the gatewitness report.
type Source string

const (
	// Upstream marks a test of the Gateway API project's suite.
	Upstream Source = "upstream"
	// Gatewitness marks one of gatewitness's own tests.
	Gatewitness Source = "gatewitness"
)

// RunSchema names the shape of the run record's JSON form; it changes
// when a field changes meaning or goes away.
const RunSchema = "gatewitness.github.io/run/v1alpha1"

// MaxInstallSteps bounds Run.InstallSteps, in bytes.
const MaxInstallSteps = 64 << 10

// MaxTests is the most tests a Run may hold.
const MaxTests = 10000

// Run is the record of one conformance run: who was tested, where, with
// what claims, and what each test did. It is what run.json holds, and
// every report is written from it alone (WriteAll), so a recorded run can
// be rendered again later. Durations are in nanoseconds in JSON.
type Run struct {
	// Schema is RunSchema for records this package writes.
	Schema string `json:"schema"`
	// Status is RunComplete for a run that ended, RunIncomplete for a
	// record written while it ran, RunInterrupted for one a signal
	// stopped.
	Status RunStatus `json:"status,omitempty"`
	// Interruption says when and by which signal an interrupted run was
	// stopped; nil unless Status is RunInterrupted.
	Interruption *Interruption `json:"interruption,omitempty"`
	// Implementation identifies the implementation under test.
	Implementation confv1.Implementation `json:"implementation"`
	// Mode is the implementation's operating mode, "default" unless the
	// implementation was set up specially.
	Mode string `json:"mode"`
	// Profiles lists the conformance profiles the run was asked to check,
	// upstream's and gatewitness's.
	Profiles []string `json:"profiles,omitempty"`
	// Started is when the run began.
	Started time.Time `json:"started"`
	// Duration is how long the whole run took.
	Duration time.Duration `json:"duration"`
	// Target is what the suite ran against.
	Target Target `json:"target"`
	// Environment holds the versions the result depends on.
	Environment Environment `json:"environment"`
	// Claims is what the implementation was taken to support.
	Claims Claims `json:"claims"`
	// TimingTolerance is how late a timed behaviour could be and still
	// pass in gatewitness's tests.
	TimingTolerance time.Duration `json:"timingTolerance,omitempty"`
	// RetryBudgetLoad is the load of the retry-budget load tests; nil
	// when the run did not say.
	RetryBudgetLoad *RetryBudgetLoad `json:"retryBudgetLoad,omitempty"`
	// CommandLine is the command that made the run, as typed (program
	// name first), for the Reproduce section; empty when a Go program ran
	// the suite.
	CommandLine []string `json:"commandLine,omitempty"`
	// InstallSteps is Markdown saying how the implementation under test
	// was installed and configured (--install-steps, or installSteps in
	// the options file), for the README's Reproduce section.
	InstallSteps string `json:"installSteps,omitempty"`
	// ReportFolder names the implementation's folder under
	// upstream/<major.minor>/ (--report-folder, or reportFolder in the
	// options file), for an implementation whose folder in upstream's
	// tree is not "<organization>-<project>"; empty means that name
	// (ImplementationFolder).
	ReportFolder string `json:"reportFolder,omitempty"`
	// Phases are how long each phase of the run took, in order: for
	// example starting the target, setting up the base resources, the
	// serial tests, the parallel tests and cleaning up. A phase starts
	// where the one before it ended.
	Phases []Phase `json:"phases,omitempty"`
	// Tests holds one result per test, upstream's first, in suite order.
	Tests []TestResult `json:"tests"`
	// Conformance is the upstream ConformanceReport: upstream's suite's
	// report of upstream's tests in the upstream profiles requested. Nil
	// when no upstream test was part of the run.
	Conformance *confv1.ConformanceReport `json:"conformance,omitempty"`
	// GatewitnessProfiles are the gatewitness profiles' results, counted by
	// the same rules as upstream's but from gatewitness's tests only.
	GatewitnessProfiles []confv1.ProfileReport `json:"gatewitnessProfiles,omitempty"`
}

// Target says what a run tested.
type Target struct {
	// InProcess is true for the embedded cluster and reference gateway.
	InProcess bool `json:"inProcess"`
	// DataPlane names what served the Gateways in-process behind the
	// reference controller when it was not the reference gateway's own
	// data plane (haproxy, nginx: gatewitness run --data-plane).
	DataPlane string `json:"dataPlane,omitempty"`
	// Server is the API server's URL on a cluster.
	Server string `json:"server,omitempty"`
	// Context is the kubeconfig context used, on a cluster.
	Context string `json:"context,omitempty"`
	// GatewayClass is the GatewayClass the tests used.
	GatewayClass string `json:"gatewayClass,omitempty"`
	// Controller is the GatewayClass's controllerName, if it was read.
	Controller string `json:"controller,omitempty"`
}

// String describes the target in one phrase.
func (t Target) String() string {
	if t.InProcess && t.DataPlane != "" {
		return "in-process (embedded API store and the reference controller, " + t.DataPlane + " serving the Gateways; no cluster)"
	}
	if t.InProcess {
		return "in-process (embedded API store and the reference gateway; no cluster)"
	}
	s := "cluster " + orUnknown(t.Server)
	if t.Context != "" {
		s += ", context " + t.Context
	}
	return s
}

// Phase is how long one phase of a run took.
type Phase struct {
	// Name names the phase, e.g. "set-up" or "parallel tests".
	Name string `json:"name"`
	// Duration is how long it took.
	Duration time.Duration `json:"duration"`
}

// MaxPhases is the most phases a Run may hold.
const MaxPhases = 32

// Environment holds the versions a run's results depend on.
type Environment struct {
	// KubernetesVersion is the API server's version (for the in-process
	// target, the Kubernetes release whose libraries validate objects).
	KubernetesVersion string `json:"kubernetesVersion,omitempty"`
	// GatewayAPIVersion and GatewayAPIChannel are those of the installed
	// CRDs, as the upstream suite read them.
	GatewayAPIVersion string `json:"gatewayAPIVersion,omitempty"`
	GatewayAPIChannel string `json:"gatewayAPIChannel,omitempty"`
	// SuiteVersion is the version of upstream's conformance suite.
	SuiteVersion string `json:"suiteVersion,omitempty"`
	// GatewitnessVersion is the version of gatewitness that ran the tests.
	GatewitnessVersion string `json:"gatewitnessVersion,omitempty"`
	// GoVersion is the Go release gatewitness was built with.
	GoVersion string `json:"goVersion,omitempty"`
}

// Claims is what a run took the implementation to support.
type Claims struct {
	// Features are the features the run tested: those claimed plus the
	// core features of the profiles requested.
	Features []gwfeatures.FeatureName `json:"features,omitempty"`
	// Source says where the claims came from, e.g. "--supported-features"
	// or "the GatewayClass's status".
	Source string `json:"source,omitempty"`
}

// TestResult is the outcome of one conformance test.
type TestResult struct {
	// ShortName is the test's upstream-style ShortName, e.g. "HTTPRouteRetry".
	ShortName string `json:"shortName"`
	// Source says whose test it is.
	Source Source `json:"source,omitempty"`
	// Description says what the test checks.
	Description string `json:"description,omitempty"`
	// Features lists the features the test needs.
	Features []gwfeatures.FeatureName `json:"features,omitempty"`
	// Result is pass, fail, skip, inconclusive or interrupted.
	Result Result `json:"result"`
	// Duration is how long the test took: from its own start to the end
	// of its test function and its subtests, not counting its clean-up
	// (which may wait for other tests' timing windows to close).
	Duration time.Duration `json:"duration"`
	// Started is when the test started; zero in records of a gatewitness
	// that did not record it, and for tests that did not run.
	Started time.Time `json:"started,omitzero"`
	// Message says why the test failed (the failing assertions) or was
	// skipped; empty on a pass.
	Message string `json:"message,omitempty"`
	// Unclaimed lists, for a test skipped because the run did not claim
	// all its features, the features that were not claimed.
	Unclaimed []gwfeatures.FeatureName `json:"unclaimed,omitempty"`
	// Log is the tail of the test's log (at most MaxLogLen bytes), kept
	// for failed tests when the runner could capture it.
	Log string `json:"log,omitempty"`
	// Profiles names the requested profiles the test counts in.
	Profiles []string `json:"profiles,omitempty"`
	// Observations are what the test recorded with observe.Record.
	Observations []observe.Observation `json:"observations,omitempty"`
	// DroppedObservations counts observations the collector did not keep
	// (observe.Dropped).
	DroppedObservations int `json:"droppedObservations,omitempty"`
	// State is what the cluster held when the test failed, before its
	// resources were cleaned up: the objects the test applied (from its
	// manifests, and what it created through its client), each with its
	// status conditions, and the Gateways its routes attach to and the
	// endpoints of the Services they send to (at most MaxStateObjects).
	// Empty unless the test failed.
	State []ObjectState `json:"state,omitempty"`
}

// MaxStateObjects bounds TestResult.State.
const MaxStateObjects = 100

// ObjectState is one object's state, as a failed test left it.
type ObjectState struct {
	// Kind, Namespace and Name name the object: any kind the test
	// applied (Gateway, HTTPRoute, TLSRoute, BackendTLSPolicy, ...), or an
	// EndpointSlice of a Service.
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Via is empty for an object the test applied, else how one it
	// applied refers to this one ("parent of HTTPRoute ns/name",
	// "backend of ...").
	Via string `json:"via,omitempty"`
	// Error says why the object has no state: not found, or not readable.
	Error string `json:"error,omitempty"`
	// Generation is the object's metadata.generation.
	Generation int64 `json:"generation,omitempty"`
	// Conditions are its status conditions: a Gateway's own and its
	// listeners' (Scope "listener <name>"), a route's per parent (Scope
	// "parent <namespace>/<name>").
	Conditions []StateCondition `json:"conditions,omitempty"`
	// Service is, for an EndpointSlice, the Service it belongs to;
	// Endpoints its endpoints ("10.0.0.7:3000 ready").
	Service   string   `json:"service,omitempty"`
	Endpoints []string `json:"endpoints,omitempty"`
}

// negativePolarity are the condition types whose healthy value is False:
// Gateway API's listener Conflicted, OverlappingTLSConfig and Detached,
// a route's PartiallyInvalid, a Gateway's InsecureFrontendValidationMode,
// and Kubernetes' usual abnormal-true ones.
var negativePolarity = map[string]bool{
	"Conflicted": true, "OverlappingTLSConfig": true, "Detached": true, "PartiallyInvalid": true,
	"InsecureFrontendValidationMode": true, "Degraded": true, "Failed": true, "Stalled": true,
	"ReplicaFailure": true, "DisruptionTarget": true,
}

// Health says whether a condition reads as healthy, by its type's
// polarity: "healthy", "unhealthy", or "unknown" (status Unknown, or not
// True or False).
func (c StateCondition) Health() string {
	var good bool
	switch c.Status {
	case "True":
		good = !negativePolarity[c.Type]
	case "False":
		good = negativePolarity[c.Type]
	default:
		return "unknown"
	}
	if good {
		return "healthy"
	}
	return "unhealthy"
}

// StateCondition is a status condition of an ObjectState.
type StateCondition struct {
	Scope              string `json:"scope,omitempty"`
	Type               string `json:"type"`
	Status             string `json:"status"`
	Reason             string `json:"reason,omitempty"`
	Message            string `json:"message,omitempty"`
	ObservedGeneration int64  `json:"observedGeneration,omitempty"`
}

// Validate checks that r can be written: every test has a unique,
// non-empty ShortName, a known result and source, and a non-negative
// duration.
func (r *Run) Validate() error {
	if r == nil {
		return errors.New("reports: run is nil")
	}
	if len(r.Tests) > MaxTests {
		return fmt.Errorf("reports: run has %d tests; at most %d are accepted", len(r.Tests), MaxTests)
	}
	if r.Duration < 0 {
		return fmt.Errorf("reports: run Duration is %v; want a duration of zero or more", r.Duration)
	}
	if r.TimingTolerance < 0 {
		return fmt.Errorf("reports: run TimingTolerance is %v; want a duration of zero or more", r.TimingTolerance)
	}
	if l := r.RetryBudgetLoad; l != nil && (l.QPS < 0 || l.Requests < 0 || !(l.ShareSlack >= 0)) {
		return fmt.Errorf("reports: run RetryBudgetLoad is %+v; want a qps, requests and share slack of zero or more", *l)
	}
	if len(r.InstallSteps) > MaxInstallSteps {
		return fmt.Errorf("reports: run InstallSteps has %d bytes; at most %d are accepted", len(r.InstallSteps), MaxInstallSteps)
	}
	if err := CheckReportFolder(r.ReportFolder); err != nil {
		return fmt.Errorf("reports: run ReportFolder: %w", err)
	}
	if len(r.Phases) > MaxPhases {
		return fmt.Errorf("reports: run has %d phases; at most %d are accepted", len(r.Phases), MaxPhases)
	}
	var errs []error
	for i, p := range r.Phases {
		if p.Name == "" {
			errs = append(errs, fmt.Errorf("reports: Phases[%d]: Name is empty; want the phase's name, e.g. \"set-up\"", i))
		}
		if p.Duration < 0 {
			errs = append(errs, fmt.Errorf("reports: Phases[%d] (%s): Duration is %v; want a duration of zero or more", i, p.Name, p.Duration))
		}
	}
	switch r.Status {
	case RunComplete, RunIncomplete:
		if r.Interruption != nil {
			errs = append(errs, fmt.Errorf("reports: run Interruption is set but Status is %q; want %q with an Interruption", r.Status, RunInterrupted))
		}
	case RunInterrupted:
		if r.Interruption == nil || r.Interruption.Signal == "" {
			errs = append(errs, errors.New("reports: run Status is interrupted but no Interruption says by which signal; want interruption.signal, e.g. \"SIGINT\""))
		}
	default:
		errs = append(errs, fmt.Errorf("reports: run Status is %q; want %q (complete), %q or %q", r.Status, RunComplete, RunIncomplete, RunInterrupted))
	}
	seen := make(map[string]bool, len(r.Tests))
	for i, t := range r.Tests {
		switch {
		case t.ShortName == "":
			errs = append(errs, fmt.Errorf("reports: Tests[%d]: ShortName is empty; want the test's ShortName, e.g. \"HTTPRouteRetry\"", i))
		case seen[t.ShortName]:
			errs = append(errs, fmt.Errorf("reports: Tests[%d]: ShortName %q appears twice; want one result per test", i, t.ShortName))
		}
		seen[t.ShortName] = true
		switch t.Result {
		case Pass, Fail, Skip, Inconclusive:
		case Interrupted:
			if r.Status == RunComplete {
				errs = append(errs, fmt.Errorf("reports: Tests[%d] (%s): Result is %q in a complete run; want the run's Status %q or %q", i, t.ShortName, t.Result, RunIncomplete, RunInterrupted))
			}
		default:
			errs = append(errs, fmt.Errorf("reports: Tests[%d] (%s): Result is %q; want %q, %q, %q, %q or %q", i, t.ShortName, t.Result, Pass, Fail, Skip, Inconclusive, Interrupted))
		}
		switch t.Source {
		case "", Upstream, Gatewitness:
		default:
			errs = append(errs, fmt.Errorf("reports: Tests[%d] (%s): Source is %q; want %q or %q", i, t.ShortName, t.Source, Upstream, Gatewitness))
		}
		if t.Duration < 0 {
			errs = append(errs, fmt.Errorf("reports: Tests[%d] (%s): Duration is %v; want a duration of zero or more", i, t.ShortName, t.Duration))
		}
		if len(t.State) > MaxStateObjects {
			errs = append(errs, fmt.Errorf("reports: Tests[%d] (%s): State has %d objects; at most %d are accepted", i, t.ShortName, len(t.State), MaxStateObjects))
		}
		if t.DroppedObservations < 0 {
			errs = append(errs, fmt.Errorf("reports: Tests[%d] (%s): DroppedObservations is %d; want zero or more", i, t.ShortName, t.DroppedObservations))
		}
	}
	return errors.Join(errs...)
}

// Counts returns how many tests passed, failed and were skipped.
func (r *Run) Counts() (passed, failed, skipped int) {
	for _, t := range r.Tests {
		switch t.Result {
		case Pass:
			passed++
		case Fail:
			failed++
		case Skip:
			skipped++
		}
	}
	return passed, failed, skipped
}

// InconclusiveCount returns how many tests were inconclusive (see
// Inconclusive): counted by Counts as none of passed, failed or skipped.
func (r *Run) InconclusiveCount() int {
	n := 0
	for _, t := range r.Tests {
		if t.Result == Inconclusive {
			n++
		}
	}
	return n
}

// InterruptedCount returns how many tests were interrupted (see
// Interrupted): counted by Counts as none of passed, failed or skipped.
func (r *Run) InterruptedCount() int {
	n := 0
	for _, t := range r.Tests {
		if t.Result == Interrupted {
			n++
		}
	}
	return n
}

// StatusLine says in a sentence that the record is not of a whole run,
// and why; "" for a complete run.
func (r *Run) StatusLine() string {
	switch r.Status {
	case RunInterrupted:
		line := "INTERRUPTED: the run was stopped"
		if i := r.Interruption; i != nil {
			line += " by " + i.Signal
			if !r.Started.IsZero() && !i.At.IsZero() {
				line += fmt.Sprintf(" %s after it started", i.At.Sub(r.Started).Round(100*time.Millisecond))
			}
		}
		return line + fmt.Sprintf("; %d tests did not finish (interrupted), and no profile result or upstream report stands for it.", r.InterruptedCount())
	case RunIncomplete:
		return fmt.Sprintf("INCOMPLETE: this record was written while the run was going, and the run never finished it (killed, or still running); %d tests had not finished (interrupted), and no profile result stands for it.", r.InterruptedCount())
	}
	return ""
}

// bySource returns the tests of one source, in run order.
func (r *Run) bySource(s Source) []TestResult {
	var out []TestResult
	for _, t := range r.Tests {
		if t.Source == s {
			out = append(out, t)
		}
	}
	return out
}

// Limits on what the writers copy from a test into a report, so one
// runaway failure message cannot bloat a report.
const (
	// MaxMessageLen is the longest failure or skip message written, in
	// bytes; longer messages are cut and marked.
	MaxMessageLen = 8 << 10
	// MaxLogLen is the longest test log written, in bytes: its tail.
	MaxLogLen = 64 << 10
	// MaxObservationsWritten is the most observations written per test.
	MaxObservationsWritten = observe.MaxPerTest
)

// ansiEscape matches terminal colour and cursor sequences (CSI), which
// test logs often carry.
var ansiEscape = regexp.MustCompile("\x1b\\[[0-9;?]*[ -/]*[@-~]")

// clean makes s safe for every report format: it drops terminal escape
// sequences, turns CRLF into LF, and replaces other control characters and
// anything XML 1.0 forbids with U+FFFD. Tabs and line feeds stay.
func clean(s string) string {
	s = ansiEscape.ReplaceAllString(s, "")
	s = strings.ReplaceAll(s, "\r\n", "\n")
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\t' || r == '\n',
			r >= 0x20 && r < 0x7f,
			r >= 0xa0 && r <= 0xD7FF,
			r >= 0xE000 && r <= 0xFFFD,
			r >= 0x10000 && r <= 0x10FFFF:
			return r
		}
		return '\uFFFD'
	}, s)
}

func orUnknown(s string) string {
	if s == "" {
		return "(unknown)"
	}
	return s
}

// RetryBudgetLoad is the load the retry-budget load tests ran with (the
// runner's --retry-budget-load-qps, --retry-budget-load-requests and
// --retry-budget-share-slack).
type RetryBudgetLoad struct {
	// QPS is the rate, in requests a second.
	QPS int `json:"qps"`
	// Requests is how many requests each load test sent.
	Requests int `json:"requests"`
	// ShareSlack is how far the share of requests retried could stray
	// from what budget.percent allows.
	ShareSlack float64 `json:"shareSlack"`
}

// String says the load in words: "240 requests at 40/s, share slack 0.05".
func (l *RetryBudgetLoad) String() string {
	if l == nil {
		return ""
	}
	return fmt.Sprintf("%d requests at %d/s, share slack %v", l.Requests, l.QPS, l.ShareSlack)
}
