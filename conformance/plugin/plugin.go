// Package plugin is what an implementation adds to the upstream Gateway
// API conformance suite (sigs.k8s.io/gateway-api/conformance) to run
// gatewitness's tests under its own runner: the tests, the manifests they
// apply and gatewitness's conformance profiles.
//
// One call adds the tests, the manifests and the profiles together (Add):
//
//	opts := conformance.DefaultOptions(t)
//	all, err := plugin.Add(&opts, tests.ConformanceTests)
//	if err != nil {
//		t.Fatal(err)
//	}
//	tests.ConformanceTests = all
//	conformance.RunConformanceWithOptions(t, opts)
//
// Without Add, implementers run upstream's suite in one of two ways, and
// each takes two added lines. Most call conformance.RunConformanceWithOptions, which
// runs upstream's tests.ConformanceTests; append to it before the call:
//
//	opts := conformance.DefaultOptions(t)
//	opts.ManifestFS = append(opts.ManifestFS, plugin.Manifests)
//	tests.ConformanceTests = append(tests.ConformanceTests, plugin.ConformanceTests...)
//	conformance.RunConformanceWithOptions(t, opts)
//
// (example_withoptions_test.go). Options built by hand rather than by
// DefaultOptions must list &conformance.Manifests in ManifestFS as well:
// RunConformanceWithOptions only adds upstream's manifests to an empty list.
//
// Those who build the suite themselves with suite.NewConformanceTestSuite
// and call Setup and Run pass the tests to both:
//
//	opts.ManifestFS = append(opts.ManifestFS, plugin.Manifests)
//	all := append(slices.Clone(tests.ConformanceTests), plugin.ConformanceTests...)
//	// ... s.Setup(t, all); s.Run(t, all)
//
// (example_test.go). In either shape,
//
//	opts.ConformanceProfiles = append(opts.ConformanceProfiles, plugin.Profiles...)
//
// is a third line, needed for gatewitness's profiles to reach the upstream
// report: without it the tests run but the report lists upstream's
// profiles only. Importing the package
// registers gatewitness's profiles and features with the upstream suite, so
// its ConformanceReport counts them like upstream's.
//
// The tests need the upstream base manifests (the suite's Setup applies
// them), an implementation that claims the tests' features (with
// --supported-features, or in its GatewayClass status), and the
// echo-backend image in the cluster: the manifests name
// gatewitness/echo-backend:dev (built from the repository's Dockerfile;
// see docs/certify.md); ManifestsWithEchoImage gives them another, such
// as a release's gatewitness/echo-backend:vX.Y.Z.
//
// # Gateway API releases
//
// The plug-in builds against both current Gateway API releases, v1.6.3
// (gatewitness's go.mod) and v1.7.0: it imports no upstream package whose
// path or API differs between them, and features.SupportHTTPRouteRetry
// names the linked release's retry feature (v1.7.0 renamed HTTPRouteRetry
// to HTTPRouteRetryCodes). A module that requires v1.7.0 gets it by
// minimum version selection. gatewitness before this package could link
// against v1.6 only. The plug-in links no server code: the reference
// gateway and the echo-backend's servers stay out of an implementer's
// test binary (deps_test.go).
package plugin

import (
	"errors"
	"io/fs"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/gateway-api/conformance/utils/suite"

	gctests "github.com/gatewitness/gatewitness/conformance/tests"
	"github.com/gatewitness/gatewitness/features"
)

// ManifestPrefix is the directory of Manifests that holds every manifest
// of gatewitness's tests. No upstream manifest lives under it, so Manifests
// can sit next to upstream's own in ConformanceOptions.ManifestFS.
const ManifestPrefix = gctests.ManifestPrefix

// Manifests holds the manifests of gatewitness's tests, under
// ManifestPrefix. Add it to ConformanceOptions.ManifestFS.
var Manifests = gctests.Manifests

// ConformanceTests are gatewitness's conformance tests, in the order they
// run. Append them to upstream's tests.ConformanceTests. The slice is the
// package's own copy: appending to it does not change gatewitness's list.
var ConformanceTests = slices.Clone(gctests.ConformanceTests)

// Profiles names gatewitness's conformance profiles (such as
// GATEWITNESS-HTTP-RESILIENCE), all registered with the upstream suite.
// Adding them to ConformanceOptions.ConformanceProfiles reports results
// for them; like any profile, each enables its core features.
var Profiles = ownProfiles()

func ownProfiles() []suite.ConformanceProfileName {
	var out []suite.ConformanceProfileName
	for _, p := range features.Profiles() {
		if !p.Upstream {
			out = append(out, suite.ConformanceProfileName(p.Name))
		}
	}
	return out
}

// SetTimingTolerance sets how late a timed behaviour (a timeout, a retry's
// backoff) may be and still pass: the tests accept an event expected after
// d anywhere in [d, d+tolerance]. The default is 500ms, for a responsive
// cluster; raise it (up to 2s; 1.5s suits a loaded machine) when the
// cluster's timers run late: the tests are sized so that no verdict of a
// broken behaviour changes within that range. Set it before the suite runs.
func SetTimingTolerance(tolerance time.Duration) error {
	return gctests.SetTimingTolerance(tolerance)
}

// RetryBudgetLoad is the load of the retry-budget load tests: the rate and
// the number of requests fortio sends, and how far the share of requests
// retried may stray from what budget.percent allows.
type RetryBudgetLoad = gctests.RetryBudgetLoad

// DefaultRetryBudgetLoad returns the load the tests use unless told
// otherwise: 240 requests at 40 a second, a slack of 0.05.
func DefaultRetryBudgetLoad() RetryBudgetLoad { return gctests.DefaultRetryBudgetLoad() }

// SetRetryBudgetLoad sets the load of the retry-budget load tests; a value
// out of its range (load.Check names it and the range) is an error and
// changes nothing. Lower the rate if the cluster cannot serve 40 requests
// a second; the bounds keep a broken budget failing. Set it before the
// suite runs.
func SetRetryBudgetLoad(load RetryBudgetLoad) error {
	return gctests.SetRetryBudgetLoad(load)
}

// ManifestsWithEchoImage returns Manifests with every echo-backend image
// reference (gatewitness/echo-backend:dev as written) replaced by image,
// for a cluster that runs another build of the echo-backend, such as a
// release's gatewitness/echo-backend:vX.Y.Z or one in your registry.
func ManifestsWithEchoImage(image string) fs.FS { return gctests.ManifestsWithEchoImage(image) }

// Add adds gatewitness to an upstream suite in one call: its manifests to
// opts.ManifestFS, after upstream's (which DefaultOptions lists; the
// plug-in cannot add them without linking upstream's echo servers, so an
// empty list is an error), its profiles to opts.ConformanceProfiles, so
// that the upstream report counts them, and its tests to the returned
// list, tests with ConformanceTests appended. The manifests name the
// echo-backend image of the gatewitness version linked
// (gatewitness/echo-backend:vX.Y.Z for a release, the :dev image for a
// development build); change it with ManifestsWithEchoImage. What is
// there already (gatewitness's manifests, a profile, a test of the same
// ShortName) is not added twice.
//
//	opts := conformance.DefaultOptions(t)
//	all, err := plugin.Add(&opts, tests.ConformanceTests)
func Add(opts *suite.ConformanceOptions, tests []suite.ConformanceTest) ([]suite.ConformanceTest, error) {
	if len(opts.ManifestFS) == 0 {
		return nil, errors.New("plugin.Add: opts.ManifestFS is empty; list upstream's manifests first (&conformance.Manifests, as conformance.DefaultOptions does)")
	}
	if !slices.ContainsFunc(opts.ManifestFS, holdsManifests) {
		opts.ManifestFS = append(opts.ManifestFS, gctests.ManifestsWithEchoImage(gctests.DefaultEchoImage()))
	}
	for _, p := range Profiles {
		if !slices.Contains(opts.ConformanceProfiles, p) {
			opts.ConformanceProfiles = append(opts.ConformanceProfiles, p)
		}
	}
	out := slices.Clone(tests)
	for _, ct := range ConformanceTests {
		if !slices.ContainsFunc(out, func(c suite.ConformanceTest) bool { return c.ShortName == ct.ShortName }) {
			out = append(out, ct)
		}
	}
	return out, nil
}

// holdsManifests reports whether fsys holds gatewitness's manifests.
func holdsManifests(fsys fs.FS) bool {
	st, err := fs.Stat(fsys, strings.TrimSuffix(ManifestPrefix, "/"))
	return err == nil && st.IsDir()
}
