package main

import (
	"fmt"
	"slices"

	"github.com/go-logr/logr"
	"sigs.k8s.io/gateway-api/conformance/utils/suite"

	"github.com/gatewitness/gatewitness/calibration"
	"github.com/gatewitness/gatewitness/cluster"
	"github.com/gatewitness/gatewitness/conformance/runner"
)

// dataPlanes are --data-plane's values: the reference data plane, or a
// real proxy in its honest configuration (docs/calibration.md).
var dataPlanes = []string{"reference", "haproxy", "nginx"}

// inProcessTarget returns the in-process target whose Gateways name
// serves, and, for a real proxy, fills in what opts leaves empty: the
// proxy's honest claims and the profiles it is calibrated in.
func inProcessTarget(name string, opts *runner.Options) (runner.InProcess, error) {
	if !slices.Contains(dataPlanes, name) {
		return runner.InProcess{}, fmt.Errorf("flag --data-plane: %q is not a data plane; want one of %v", name, dataPlanes)
	}
	if name == "reference" {
		return runner.InProcess{}, nil
	}
	if opts.Kubeconfig != "" {
		return runner.InProcess{}, fmt.Errorf("flag --data-plane %s: only an in-process run has a data plane to choose; a cluster's is its implementation's", name)
	}
	v, _ := calibration.Lookup(name + "/honest")
	if len(opts.SupportedFeatures) == 0 && !opts.EnableAllSupportedFeatures {
		opts.SupportedFeatures = v.Claims()
	}
	if len(opts.ConformanceProfiles) == 0 {
		for _, p := range calibration.Profiles {
			opts.ConformanceProfiles = append(opts.ConformanceProfiles, suite.ConformanceProfileName(p))
		}
	}
	// The reports name the proxy, not the reference gateway: it serves
	// every request the tests send.
	impl := runner.ReferenceImplementation()
	impl.Project = "reference-controller-" + name
	return runner.InProcess{
		Gateway: cluster.Gateway{ServeWith: func(log logr.Logger) (cluster.DataPlane, error) {
			return v.New(log)
		}},
		Implementation: impl,
		DataPlane:      name,
	}, nil
}
