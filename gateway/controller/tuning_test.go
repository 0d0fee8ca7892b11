package controller

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gatewitness/gatewitness/contract/conntimeouts"
	"github.com/gatewitness/gatewitness/gateway/ir"
)

// tuningClass returns the test class with a parametersRef to ConfigMap
// ns/name.
func tuningClass(ns, name string) *gwv1.GatewayClass {
	gc := testClass()
	n := gwv1.Namespace(ns)
	gc.Spec.ParametersRef = &gwv1.ParametersReference{Group: "", Kind: "ConfigMap", Name: name, Namespace: &n}
	return gc
}

func tuningConfigMap(ns, name string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: data}
}

// classAccepted runs two recomputes and returns the class's Accepted
// condition and the last snapshot.
func classAccepted(t *testing.T, objs ...client.Object) (*metav1.Condition, *ir.Config) {
	t.Helper()
	cl := newFakeClient(t, objs...)
	rec := &recorder{}
	syncTwice(t, newTestController(t, cl, rec))
	var gc gwv1.GatewayClass
	if err := cl.Get(context.Background(), client.ObjectKey{Name: testClassName}, &gc); err != nil {
		t.Fatal(err)
	}
	cond := findCondition(gc.Status.Conditions, string(gwv1.GatewayClassConditionStatusAccepted))
	if cond == nil {
		t.Fatalf("GatewayClass has no Accepted condition: %+v", gc.Status)
	}
	return cond, rec.last()
}

// TestClassParametersReachTheDataPlane: the six keys of the ConfigMap
// become the Gateway's ConnectionTimeouts, and the class is Accepted.
func TestClassParametersReachTheDataPlane(t *testing.T) {
	cm := tuningConfigMap(ns, "tuning", map[string]string{
		conntimeouts.KeyClientTimeout: "3s", conntimeouts.KeyClientFinTimeout: "1000", conntimeouts.KeyServerTimeout: "2s",
		conntimeouts.KeyServerFinTimeout: "1500ms", conntimeouts.KeyTunnelTimeout: "1m", conntimeouts.KeyTLSInspectDelay: "0",
	})
	cond, cfg := classAccepted(t, tuningClass(ns, "tuning"), cm, namespace(ns, nil),
		gateway("gw", listener("http", 80, gwv1.HTTPProtocolType, "")))
	if cond.Status != metav1.ConditionTrue || cond.Message != "GatewayClass is accepted" {
		t.Errorf("Accepted = %s %q, want True with the plain message", cond.Status, cond.Message)
	}
	want := ir.ConnectionTimeouts{Client: 3 * time.Second, ClientFin: time.Second, Server: 2 * time.Second,
		ServerFin: 1500 * time.Millisecond, Tunnel: time.Minute}
	if cfg == nil || len(cfg.Gateways) != 1 {
		t.Fatalf("snapshot %+v, want one Gateway", cfg)
	}
	if got := cfg.Gateways[0].Timeouts; got != want {
		t.Errorf("Gateway timeouts = %+v, want %+v", got, want)
	}
}

// TestClassParametersClamped: a value above the maximum is clamped, and
// the Accepted message says so.
func TestClassParametersClamped(t *testing.T) {
	cm := tuningConfigMap(ns, "tuning", map[string]string{conntimeouts.KeyTunnelTimeout: "30d"})
	cond, cfg := classAccepted(t, tuningClass(ns, "tuning"), cm, namespace(ns, nil),
		gateway("gw", listener("http", 80, gwv1.HTTPProtocolType, "")))
	if cond.Status != metav1.ConditionTrue || !strings.Contains(cond.Message, "tunnelTimeout") || !strings.Contains(cond.Message, "clamped to 2147483647ms") {
		t.Errorf("Accepted = %s %q, want True with a message on the clamped tunnelTimeout", cond.Status, cond.Message)
	}
	if cfg == nil || len(cfg.Gateways) != 1 || cfg.Gateways[0].Timeouts.Tunnel != conntimeouts.MaxTimeout {
		t.Errorf("snapshot %+v, want one Gateway with Tunnel %v", cfg, conntimeouts.MaxTimeout)
	}
}

// TestClassParametersInvalid: each bad parametersRef makes the class
// Accepted=False, InvalidParameters, with a message naming the problem,
// and serves nothing.
func TestClassParametersInvalid(t *testing.T) {
	for _, c := range []struct {
		name  string
		class *gwv1.GatewayClass
		cm    *corev1.ConfigMap
		want  []string
	}{
		{"malformed value", tuningClass(ns, "tuning"), tuningConfigMap(ns, "tuning", map[string]string{conntimeouts.KeyServerTimeout: "ten seconds"}),
			[]string{"serverTimeout", "[0-9]+(us|ms|s|m|h|d)?"}},
		{"negative value", tuningClass(ns, "tuning"), tuningConfigMap(ns, "tuning", map[string]string{conntimeouts.KeyClientTimeout: "-1s"}),
			[]string{"clientTimeout", "negative"}},
		{"unknown key", tuningClass(ns, "tuning"), tuningConfigMap(ns, "tuning", map[string]string{"connectTimeout": "1s"}),
			[]string{`"connectTimeout"`, "accepted keys: clientTimeout, clientFinTimeout"}},
		{"missing ConfigMap", tuningClass(ns, "absent"), tuningConfigMap(ns, "tuning", nil),
			[]string{"ConfigMap ns/absent not found"}},
		{"wrong kind", func() *gwv1.GatewayClass {
			gc := tuningClass(ns, "tuning")
			gc.Spec.ParametersRef.Kind = "Secret"
			return gc
		}(), tuningConfigMap(ns, "tuning", nil), []string{`kind "Secret"`, "ConfigMap"}},
		{"no namespace", func() *gwv1.GatewayClass {
			gc := tuningClass(ns, "tuning")
			gc.Spec.ParametersRef.Namespace = nil
			return gc
		}(), tuningConfigMap(ns, "tuning", nil), []string{"parametersRef.namespace"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cond, cfg := classAccepted(t, c.class, c.cm, namespace(ns, nil),
				gateway("gw", listener("http", 80, gwv1.HTTPProtocolType, "")))
			if cond.Status != metav1.ConditionFalse || cond.Reason != string(gwv1.GatewayClassReasonInvalidParameters) {
				t.Errorf("Accepted = %s %s, want False InvalidParameters", cond.Status, cond.Reason)
			}
			for _, w := range c.want {
				if !strings.Contains(cond.Message, w) {
					t.Errorf("message %q does not contain %q", cond.Message, w)
				}
			}
			if cfg != nil && len(cfg.Gateways) != 0 {
				t.Errorf("snapshot serves %d Gateways of a class not accepted", len(cfg.Gateways))
			}
		})
	}
}
