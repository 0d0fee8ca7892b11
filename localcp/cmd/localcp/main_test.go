package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/gatewitness/gatewitness/gateway/standalone"
	"github.com/gatewitness/gatewitness/localcp"
)

func TestParseFlags(t *testing.T) {
	for _, tc := range []struct {
		name                                    string
		podCIDR, addrs, class, controller, impl string
		netns                                   bool
		want                                    string // substring of the error; empty: accepted
		wantAddrs, wantController               string
	}{
		{name: "reference defaults", podCIDR: localcp.DefaultPodCIDR, class: "gatewitness",
			wantAddrs: standalone.DefaultAddresses, wantController: string(standalone.DefaultControllerName)},
		{name: "impl defaults", podCIDR: localcp.DefaultPodCIDR, class: "acme", controller: "example.com/acme", impl: "acme",
			wantAddrs: localcp.DefaultImplementationAddresses, wantController: "example.com/acme"},
		{name: "impl in its own namespace: addresses picked at start", podCIDR: localcp.DefaultPodCIDR, class: "acme", controller: "example.com/acme", impl: "acme", netns: true,
			wantAddrs: "invalid Prefix", wantController: "example.com/acme"},
		{name: "loopback pod CIDR", podCIDR: "127.3.0.0/16", class: "gatewitness",
			want: "-pod-cidr: pod CIDR 127.3.0.0/16 overlaps 127.0.0.0/8, which is loopback: the API server refuses loopback addresses in EndpointSlices"},
		{name: "not a prefix", podCIDR: "10.244.0.0", class: "gatewitness", want: `-pod-cidr "10.244.0.0"`},
		{name: "addresses in the pod CIDR", podCIDR: "10.244.0.0/16", addrs: "10.244.8.0/24", class: "gatewitness", want: "-gateway-addresses 10.244.8.0/24 overlaps -pod-cidr"},
		{name: "bad addresses", podCIDR: localcp.DefaultPodCIDR, addrs: "127.20.0.0", class: "gatewitness", want: `-gateway-addresses "127.20.0.0"`},
		{name: "impl without controller", podCIDR: localcp.DefaultPodCIDR, class: "acme", impl: "acme", want: "-impl needs -controller-name"},
		{name: "impl without class", podCIDR: localcp.DefaultPodCIDR, controller: "example.com/acme", impl: "acme", want: "-impl needs -gateway-class"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parseFlags(tc.podCIDR, tc.addrs, tc.class, tc.controller, tc.impl, tc.netns)
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("err = %v; want one saying %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.addresses.String() != tc.wantAddrs || c.controllerName != tc.wantController {
				t.Errorf("addresses %s, controller %q; want %s, %q", c.addresses, c.controllerName, tc.wantAddrs, tc.wantController)
			}
		})
	}
}

func TestPrefixed(t *testing.T) {
	var out bytes.Buffer
	p := &prefixed{w: &out, prefix: "impl: "}
	for _, s := range []string{"one\ntw", "o\n", "three\nfour"} {
		if _, err := p.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := out.String(), "impl: one\nimpl: two\nimpl: three\n"; got != want {
		t.Errorf("before Flush: %q; want %q (complete lines only)", got, want)
	}
	p.Flush()
	if got, want := out.String(), "impl: one\nimpl: two\nimpl: three\nimpl: four\n"; got != want {
		t.Errorf("after Flush: %q; want %q", got, want)
	}
}

// TestFeaturesMessage: localcp asks for SUPPORTED_FEATURES only when the
// suite's command line claims no features and the class publishes none;
// when the command gives --supported-features, it says so.
func TestFeaturesMessage(t *testing.T) {
	given := []string{"bin/gatewitness", "run", "--kubeconfig", "$KUBECONFIG", "--supported-features", "Gateway,HTTPRoute"}
	for _, tc := range []struct {
		command       []string
		published     int
		want, wantNot string
	}{
		{given, 0, "the suite takes its features from --supported-features", "SUPPORTED_FEATURES"},
		{[]string{"gatewitness", "run", "-supported-features=Gateway"}, 0, "from --supported-features", "SUPPORTED_FEATURES"},
		{[]string{"gatewitness", "run", "--all-features"}, 3, "from --all-features", "SUPPORTED_FEATURES"},
		{[]string{"gatewitness", "run"}, 5, "publishes 5 supported features, which the suite reads", "SUPPORTED_FEATURES"},
		{[]string{"gatewitness", "run"}, 0, "set SUPPORTED_FEATURES=", "takes its features"},
		{[]string{"echo", "supported-features"}, 0, "set SUPPORTED_FEATURES=", "takes its features"},
	} {
		got := featuresMessage("eg", tc.published, featureFlag(tc.command))
		if !strings.Contains(got, tc.want) || strings.Contains(got, tc.wantNot) {
			t.Errorf("featuresMessage(%q, %d) = %q; want %q and not %q", tc.command, tc.published, got, tc.want, tc.wantNot)
		}
	}
}
