package runner

import (
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/gateway-api/conformance/utils/config"
	"sigs.k8s.io/gateway-api/conformance/utils/suite"

	"github.com/gatecheck/gatecheck/conformance/tests"
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
// options-file keys; the other fields are gatecheck's.
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
	// TimingTolerance is how late a timed behaviour may be and still pass;
	// gatecheck's tests read it with tests.TimingTolerance.
	TimingTolerance time.Duration
	// ConnectionTimeouts are the connection-level timeouts the connection
	// timeout tests expect (and the class of their Gateway); gatecheck's
	// tests read them with tests.ExpectedConnectionTimeouts.
	ConnectionTimeouts tests.ConnectionTimeouts
	// RetryBudgetLoad is the rate, the number of requests and the share's
	// slack of the retry-budget load tests; they read it with
	// tests.RetryBudgetLoadOptions.
	RetryBudgetLoad tests.RetryBudgetLoad

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
}

// DefaultOptions returns the options a run has when nothing is set: the
// upstream suite's defaults plus gatecheck's.
func DefaultOptions() Options {
	return Options{
		ConfigurableOptions: suite.ConfigurableOptions{
			GatewayClassName:     DefaultGatewayClassName,
			CleanupBaseResources: true,
			CleanupTestResources: true,
			Mode:                 DefaultMode,
			TimeoutConfig:        config.DefaultTimeoutConfig(),
		},
		TimingTolerance:    tests.DefaultTimingTolerance,
		ConnectionTimeouts: tests.DefaultConnectionTimeouts(),
		RetryBudgetLoad:    tests.DefaultRetryBudgetLoad(),
	}
}

func parseTolerance(v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("%q is not a Go duration; accepted: a duration from %v to %v, such as 500ms or 1500ms", v, MinTimingTolerance, MaxTimingTolerance)
	}
	if err := tests.CheckTimingTolerance(d); err != nil {
		return 0, err
	}
	return d, nil
}

// parseCount parses a whole number, naming the accepted form.
func parseCount(v, form string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		return 0, fmt.Errorf("%q is not a whole number; accepted: %s", v, form)
	}
	return n, nil
}

// retryBudgetLoadForms are the accepted forms of the retry-budget load
// flags, for their help and their errors.
var (
	retryBudgetLoadQPSForm = fmt.Sprintf("requests a second from %d to %d",
		tests.MinRetryBudgetLoadQPS, tests.MaxRetryBudgetLoadQPS)
	retryBudgetLoadRequestsForm = fmt.Sprintf("a count from %d to %d, and from %d to %d seconds' worth at --retry-budget-load-qps",
		tests.MinRetryBudgetLoadRequests, tests.MaxRetryBudgetLoadRequests,
		tests.MinRetryBudgetLoadIntervals, int(tests.MaxRetryBudgetLoadRun/time.Second))
	retryBudgetShareSlackForm = fmt.Sprintf("a fraction from 0 to %v", tests.MaxRetryBudgetShareSlack)
)

func parseRetryBudgetLoadQPS(v string) (int, error) {
	n, err := parseCount(v, retryBudgetLoadQPSForm)
	if err != nil {
		return 0, err
	}
	return n, tests.CheckRetryBudgetLoadQPS(n)
}

// parseRetryBudgetLoadRequests checks the count alone; the runner checks it
// against the rate once every flag is read.
func parseRetryBudgetLoadRequests(v string) (int, error) {
	n, err := parseCount(v, retryBudgetLoadRequestsForm)
	if err != nil {
		return 0, err
	}
	return n, tests.CheckRetryBudgetLoadRequests(n, 0)
}

func parseRetryBudgetShareSlack(v string) (float64, error) {
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number; accepted: %s, such as 0.05", v, retryBudgetShareSlackForm)
	}
	return f, tests.CheckRetryBudgetShareSlack(f)
}

// applyTimeoutOverrides applies "Name:value;Name:value" to tc, where Name is
// a field of config.TimeoutConfig and value is whole seconds (as upstream
// accepts) or a Go duration; RequiredConsecutiveSuccesses takes a count.
// Unlike upstream, which ignores what it cannot parse, a bad pair is an
// error.
func applyTimeoutOverrides(tc *config.TimeoutConfig, v string) error {
	const form = `semicolon-separated Name:value pairs, e.g. "CreateTimeout:120;MaxTimeToConsistency:45s"`
	if v == "" {
		return nil
	}
	rv := reflect.ValueOf(tc).Elem()
	for pair := range strings.SplitSeq(v, ";") {
		name, val, ok := strings.Cut(pair, ":")
		name, val = strings.TrimSpace(name), strings.TrimSpace(val)
		if !ok || name == "" || val == "" {
			return fmt.Errorf("%q is not Name:value; want %s", pair, form)
		}
		sf, ok := rv.Type().FieldByName(name)
		if !ok || !sf.IsExported() {
			return fmt.Errorf("%q is not a timeout; want a field of the upstream TimeoutConfig such as CreateTimeout or MaxTimeToConsistency", name)
		}
		field := rv.FieldByIndex(sf.Index)
		if sf.Type == reflect.TypeFor[time.Duration]() {
			d, err := parseSeconds(val)
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			field.SetInt(int64(d))
			continue
		}
		n, err := strconv.Atoi(val)
		if err != nil || n < 1 || n > 1000 {
			return fmt.Errorf("%s: %q is not a count from 1 to 1000", name, val)
		}
		field.SetInt(int64(n))
	}
	return nil
}

func parseSeconds(v string) (time.Duration, error) {
	const limit = 24 * time.Hour
	if n, err := strconv.Atoi(v); err == nil {
		if n < 0 || n > int(limit/time.Second) {
			return 0, fmt.Errorf("%d seconds is out of range; want 0 to %d", n, int(limit/time.Second))
		}
		return time.Duration(n) * time.Second, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 || d > limit {
		return 0, fmt.Errorf("%q is neither whole seconds nor a Go duration up to %v; want e.g. 30 or 1m30s", v, limit)
	}
	return d, nil
}
