package runner

import (
	"testing"

	"sigs.k8s.io/gateway-api/conformance/utils/config"
)

// TestPrepareSetsRequiredConsecutiveSuccesses checks the count upstream's
// consistency checks take: ClusterRequiredConsecutiveSuccesses through a
// kubeconfig, upstream's own in-process, and what the options set either
// way.
func TestPrepareSetsRequiredConsecutiveSuccesses(t *testing.T) {
	upstreams := config.DefaultTimeoutConfig().RequiredConsecutiveSuccesses
	for _, tc := range []struct {
		name       string
		kubeconfig string
		set, want  int
	}{
		{"cluster", "/nonexistent/kubeconfig", 0, ClusterRequiredConsecutiveSuccesses},
		{"cluster, set", "/nonexistent/kubeconfig", 5, 5},
		{"in-process", "", 0, upstreams},
		{"in-process, set", "", 7, 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := DefaultOptions()
			o.Kubeconfig = tc.kubeconfig
			o.TimeoutConfig.RequiredConsecutiveSuccesses = tc.set
			if _, err := prepare(&o); err != nil {
				t.Fatal(err)
			}
			if got := o.TimeoutConfig.RequiredConsecutiveSuccesses; got != tc.want {
				t.Errorf("RequiredConsecutiveSuccesses %d; want %d", got, tc.want)
			}
		})
	}
}
