package main

import (
	"strings"
	"testing"

	"github.com/gatewitness/gatewitness/conformance/runner"
	"github.com/gatewitness/gatewitness/features"
)

// TestInProcessTarget: --data-plane takes reference, haproxy or nginx; a
// proxy gets its honest claims and the calibrated profiles unless the
// options name their own, and no proxy is put in front of a cluster.
func TestInProcessTarget(t *testing.T) {
	if _, err := inProcessTarget("envoy", &runner.Options{}); err == nil || !strings.Contains(err.Error(), "--data-plane") {
		t.Errorf("envoy: error %v, want one naming --data-plane and the values", err)
	}
	var o runner.Options
	in, err := inProcessTarget("reference", &o)
	if err != nil || in.Gateway.ServeWith != nil || len(o.SupportedFeatures) > 0 {
		t.Errorf("reference: %+v, %v; want the zero target and the options untouched", in, err)
	}
	in, err = inProcessTarget("haproxy", &o)
	if err != nil || in.Gateway.ServeWith == nil {
		t.Fatalf("haproxy: %v; want a target served by the adapter", err)
	}
	if in.DataPlane != "haproxy" {
		t.Errorf("haproxy: the run's record would name the data plane %q; want haproxy", in.DataPlane)
	}
	if in.Implementation.Project != "reference-controller-haproxy" {
		t.Errorf("haproxy: the reports would name %q; want reference-controller-haproxy, not the reference gateway", in.Implementation.Project)
	}
	if len(o.SupportedFeatures) == 0 || len(o.ConformanceProfiles) == 0 || string(o.ConformanceProfiles[0]) != features.ProfileHTTPResilience {
		t.Errorf("haproxy: claims %v, profiles %v; want its honest claims and the calibrated profiles", o.SupportedFeatures, o.ConformanceProfiles)
	}
	mine := runner.Options{}
	mine.SupportedFeatures = []features.FeatureName{"HTTPRoute"}
	mine.Kubeconfig = "kubeconfig"
	if _, err := inProcessTarget("nginx", &mine); err == nil || !strings.Contains(err.Error(), "in-process") {
		t.Errorf("nginx on a cluster: error %v, want one saying only in-process runs choose", err)
	}
}
