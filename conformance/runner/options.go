package runner

import (
	"io"
	"os"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/gateway-api/conformance/utils/config"
	"sigs.k8s.io/gateway-api/conformance/utils/suite"

	"github.com/gatewitness/gatewitness/conformance/tests"
)

// Defaults, the same as the upstream suite's flags.
const (
	// DefaultGatewayClassName is the GatewayClass the suite uses unless
	// told otherwise.
	DefaultGatewayClassName = "gateway-conformance"
	// DefaultMode is the implementation's operating mode unless told
	// otherwise.
	DefaultMode = "default"
)

// DefaultProgressInterval is how long the progress output stays quiet
// while tests run before it names the tests still running.
const DefaultProgressInterval = 10 * time.Second

// MinTimingTolerance and MaxTimingTolerance bound --timing-tolerance: the
// tests size their scenarios so that no verdict changes within the range
// (see conformance/tests).
const (
	MinTimingTolerance = tests.MinTimingTolerance
	MaxTimingTolerance = tests.MaxTimingTolerance
)

// Options configures a run. The embedded upstream ConfigurableOptions are
// the options of the upstream suite, with the same flags and the same
// options-file keys; the other fields are gatewitness's.
type Options struct {
	suite.ConfigurableOptions

	// Kubeconfig names the kubeconfig of the cluster to test: a path, or
	// a list of paths as $KUBECONFIG holds them. Empty means the
	// in-process reference gateway.
	Kubeconfig string
	// KubeconfigSource says where Kubeconfig came from ("--kubeconfig",
	// "KUBECONFIG", ...), for messages; empty means the Go caller set it.
	KubeconfigSource string
	// Context is the kubeconfig context to use; empty means the
	// kubeconfig's current context.
	Context string
	// ReportDir, when set, is the directory the ConformanceReport YAML
	// (named as the Gateway API project requires), the JUnit XML and the
	// Markdown summary are written to. It is created if missing.
	ReportDir string
	// ReportFolder names the implementation's folder under
	// upstream/<major.minor>/ in ReportDir (--report-folder, the options
	// file's reportFolder), for an implementation whose folder in
	// upstream's tree is not "<organization>-<project>"; empty means that.
	ReportFolder string
	// InstallSteps is Markdown saying how the implementation under test
	// was installed and configured; the upstream report's README gives it
	// in its Reproduce section (--install-steps FILE, or the options
	// file's installSteps key). At most reports.MaxInstallSteps bytes.
	InstallSteps string
	// EchoImage is the echo-backend image the tests' manifests run
	// (--echo-image, the options file's echoImage): by default
	// tests.DefaultEchoImage, the release's image for a release build and
	// gatewitness/echo-backend:dev otherwise.
	EchoImage string
	// TimingTolerance is how late a timed behaviour may be and still pass;
	// gatewitness's tests read it with tests.TimingTolerance.
	TimingTolerance time.Duration
	// ConnectionTimeouts are the connection-level timeouts the connection
	// timeout tests expect (and the class of their Gateway); gatewitness's
	// tests read them with tests.ExpectedConnectionTimeouts.
	ConnectionTimeouts tests.ConnectionTimeouts
	// RetryBudgetLoad is the rate, the number of requests and the share's
	// slack of the retry-budget load tests; they read it with
	// tests.RetryBudgetLoadOptions.
	RetryBudgetLoad tests.RetryBudgetLoad
	// ChurnDuringWindows lets configuration changes (other tests' set-up,
	// runs and clean-up) reach the gateway while timing tests' windows
	// are open, as runs did before tests.SetWindowSchedule held them
	// apart. It is for showing what that does to the verdicts on a data
	// plane that reloads; a run that certifies leaves it false.
	ChurnDuringWindows bool

	// Progress, when set, gets the run's header (the target, the
	// GatewayClass and its controller, the features claimed, the profiles
	// and the number of tests that will run), then a line per test as it
	// finishes ("[n/N] PASS name (duration), elapsed"), and a line naming
	// the tests still running whenever ProgressInterval passes without a
	// result.
	Progress io.Writer
	// ProgressInterval is how long Progress stays quiet while tests run;
	// 0 means DefaultProgressInterval.
	ProgressInterval time.Duration
	// CommandLine is the command that started the run, program name
	// first, for the README's Reproduce section of the upstream report.
	CommandLine []string
	// Warnings are printed in the run's header: options that were ignored
	// (for example, unknown keys of an options file).
	Warnings []string
	// Logger receives the in-process cluster's logs; the zero value
	// discards them.
	Logger logr.Logger
	// TestLog, when set, returns the log a test wrote, in the testing
	// package's verbose form with its "=== RUN" and "--- FAIL" lines. A
	// failed test's message is then its failing assertions
	// (FailedAssertions) and the log is kept with its result; a skipped
	// test's message is the reason it logged. The CLI sets it from the
	// test output it captures; without it, a failure's message says where
	// the log is.
	TestLog func(shortName string) string
	// Interrupt, when set, stops the run when a signal arrives on it (the
	// CLI sends SIGINT and SIGTERM there): the tests that had finished
	// keep their results, the others are reports.Interrupted (never
	// failed), the record (Status reports.RunInterrupted, with the signal
	// and when) and the reports are written at once, without the upstream
	// report, the target is stopped (the in-process cluster closed; on a
	// cluster the base namespaces deleted), and OnInterrupt is called.
	Interrupt <-chan os.Signal
	// OnInterrupt, when set, is called from a goroutine of the runner
	// with the Result of a run Interrupt stopped, once its reports are
	// written and its target stopped. The tests still running go on
	// until the process ends; the CLI exits from OnInterrupt.
	OnInterrupt func(*Result)

	// defaultProfiles is true when ConformanceProfiles holds the
	// in-process defaults rather than profiles the user named.
	defaultProfiles bool
}

// ClusterRequiredConsecutiveSuccesses is what a run through a kubeconfig
// takes for upstream's TimeoutConfig field RequiredConsecutiveSuccesses
// when nothing sets it (upstream: 3): how many answers in a row upstream's
// consistency checks take before its test goes on. Data planes run
// several replicas behind one address, each converging at its own time;
// three fresh connections all reach the same one of two replicas one time
// in four, so upstream's tests on the shared Gateways (HTTPRouteWeight,
// HTTPRouteRequestHeaderModifierBackendWeights) went on while a replica 3 s
// behind still answered 404, in 2 of 6 localcp runs, and in none of 4 with
// 20 (docs/semantics/timing-tolerance.md). A converged data plane answers
// them at once (the checks wait only after a miss). An in-process run
// keeps upstream's 3: its data plane is the reference gateway's one
// replica, and 20 took its wall time from 31 s to 73 s.
// --timeout-config-overrides or an options file's timeoutConfig sets it.
const ClusterRequiredConsecutiveSuccesses = 20

// DefaultTimeoutConfig is upstream's config.DefaultTimeoutConfig with
// RequiredConsecutiveSuccesses unset (0): the run sets it when it knows
// its target (ClusterRequiredConsecutiveSuccesses, or upstream's default
// in-process).
func DefaultTimeoutConfig() config.TimeoutConfig {
	tc := config.DefaultTimeoutConfig()
	tc.RequiredConsecutiveSuccesses = 0
	return tc
}

// DefaultOptions returns the options a run has when nothing is set: the
// upstream suite's defaults plus gatewitness's.
func DefaultOptions() Options {
	return Options{
		ConfigurableOptions: suite.ConfigurableOptions{
			GatewayClassName:     DefaultGatewayClassName,
			CleanupBaseResources: true,
			CleanupTestResources: true,
			Mode:                 DefaultMode,
			TimeoutConfig:        DefaultTimeoutConfig(),
		},
		EchoImage:          tests.DefaultEchoImage(),
		TimingTolerance:    tests.DefaultTimingTolerance,
		ConnectionTimeouts: tests.DefaultConnectionTimeouts(),
		RetryBudgetLoad:    tests.DefaultRetryBudgetLoad(),
	}
}
