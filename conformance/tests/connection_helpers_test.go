package tests_test

import (
	"io/fs"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/gatewitness/gatewitness/conformance/tests"
)

// TestConnectionTimeoutDefaultsMatchTheConfigMap checks that the default
// expectations are the values of the ConfigMap the tests' manifest applies.
func TestConnectionTimeoutDefaultsMatchTheConfigMap(t *testing.T) {
	raw, err := fs.ReadFile(tests.Manifests, "gatewitness/connection-timeouts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(string(raw)), 4096)
	var cm *corev1.ConfigMap
	for {
		var obj corev1.ConfigMap
		if err := dec.Decode(&obj); err != nil {
			break
		}
		if obj.Kind == "ConfigMap" {
			cm = &obj
		}
	}
	if cm == nil {
		t.Fatal("no ConfigMap in gatewitness/connection-timeouts.yaml")
	}
	got, err := tests.ParseConnectionTimeouts(tests.ConnectionTimeouts{}, cm.Data)
	if err != nil {
		t.Fatal(err)
	}
	if want := tests.DefaultConnectionTimeouts(); got != want {
		t.Errorf("the ConfigMap says %+v, DefaultConnectionTimeouts %+v", got, want)
	}
}

func TestSetConnectionTimeouts(t *testing.T) {
	t.Cleanup(func() {
		if err := tests.SetConnectionTimeouts(tests.DefaultConnectionTimeouts()); err != nil {
			t.Error(err)
		}
	})
	c := tests.DefaultConnectionTimeouts()
	c.Server, c.GatewayClassName = time.Minute, "tuned"
	if err := tests.SetConnectionTimeouts(c); err != nil {
		t.Fatal(err)
	}
	if got := tests.ExpectedConnectionTimeouts(); got != c {
		t.Errorf("ExpectedConnectionTimeouts() = %+v, want %+v", got, c)
	}
	bad := c
	bad.Tunnel = -time.Second
	if err := tests.SetConnectionTimeouts(bad); err == nil || !strings.Contains(err.Error(), "tunnelTimeout") {
		t.Errorf("a negative tunnel timeout: %v, want an error naming tunnelTimeout", err)
	}
	bad = c
	bad.GatewayClassName = "Not_A_Name"
	if err := tests.SetConnectionTimeouts(bad); err == nil || !strings.Contains(err.Error(), "gatewayClassName") {
		t.Errorf("a bad class name: %v, want an error naming gatewayClassName", err)
	}
	if got := tests.ExpectedConnectionTimeouts(); got != c {
		t.Errorf("a rejected SetConnectionTimeouts changed the expectations to %+v", got)
	}
}
