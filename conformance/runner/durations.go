package runner

// Durations and counts: --timing-tolerance, the retry-budget load flags
// and --timeout-overrides (upstream's TimeoutConfig by field name), each
// parsed with an error naming the accepted form and range.

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/gateway-api/conformance/utils/config"

	"github.com/gatewitness/gatewitness/conformance/tests"
)

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
