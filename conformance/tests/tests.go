// Package tests holds gatecheck's own conformance tests: values of the
// upstream suite.ConformanceTest type, so they run under gatecheck's runner
// next to the upstream Gateway API tests, and so an implementation that
// uses the upstream runner can add them with one line:
//
//	cSuite.Run(t, append(upstreamtests.ConformanceTests, gatecheck.ConformanceTests...))
//
// with gatecheck.Manifests added to ConformanceOptions.ManifestFS.
//
// # Adding a test
//
// One test is one Go file and one manifest file:
//
//  1. Write gatecheck/<name>.yaml: the routes, backends and other objects the
//     test needs, in the namespaces of the upstream base manifests
//     (gateway-conformance-infra and friends). The directory name is part of
//     the path the test names, so it never collides with an upstream
//     manifest ("tests/...", "base/...").
//
//  2. Write <name>.go in this package with a package-level variable of type
//     suite.ConformanceTest: a ShortName that is unique across upstream's
//     tests and ours, a Description, the Features it needs (upstream names
//     where the meaning matches, else the ones in gatecheck's features
//     package), Manifests: []string{"gatecheck/<name>.yaml"}, and Test.
//
//  3. Register it from an init function in that file:
//
//     func init() { ConformanceTests = append(ConformanceTests, HTTPRouteRetryCodes) }
//
// Tests record what they saw with observe.Record, so reports show
// behaviour as well as verdicts, and read the suite's timing tolerance
// with TimingTolerance.
package tests

import (
	"embed"
	"fmt"
	"sync/atomic"
	"time"

	"sigs.k8s.io/gateway-api/conformance/utils/suite"
)

// ManifestPrefix is the directory, within Manifests, that holds the
// manifests of gatecheck's tests. Tests name their manifests with it.
const ManifestPrefix = "gatecheck/"

// Manifests holds the manifests of gatecheck's tests, under
// ManifestPrefix. Pass it to the upstream suite in
// ConformanceOptions.ManifestFS next to upstream's own manifests.
//
//go:embed gatecheck
var Manifests embed.FS

// ConformanceTests lists gatecheck's conformance tests. Each test's file
// appends it from an init function.
var ConformanceTests []suite.ConformanceTest

// DefaultTimingTolerance is the timing tolerance tests use unless the
// runner sets another one.
const DefaultTimingTolerance = 500 * time.Millisecond

var timingTolerance atomic.Int64

func init() { timingTolerance.Store(int64(DefaultTimingTolerance)) }

// TimingTolerance is how late a timed behaviour may be and still pass: a
// test that expects something after d accepts it in [d, d+TimingTolerance()].
// It is the runner's --timing-tolerance option.
func TimingTolerance() time.Duration { return time.Duration(timingTolerance.Load()) }

// SetTimingTolerance sets what TimingTolerance returns. The runner calls it
// before a run. d must be positive.
func SetTimingTolerance(d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("tests: timing tolerance %v is not positive; want a duration such as 500ms", d)
	}
	timingTolerance.Store(int64(d))
	return nil
}
