package crdneeds_test

import (
	"context"
	"strings"
	"testing"

	"github.com/gatewitness/gatewitness/cluster/crdneeds"
	"github.com/gatewitness/gatewitness/crds"
)

const manifest = `
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: a
  namespace: ns
spec:
  parentRefs:
    - name: gw
  rules:
    - backendRefs:
        - name: svc
          port: 8080
      notAField: 1
    - backendRefs:
        - name: svc
          port: 8080
      notAField: 2
      timeouts:
        request: 1s
---
apiVersion: gateway.networking.k8s.io/v1
kind: NoSuchKind
metadata:
  name: b
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: c
  namespace: ns
spec:
  rules:
    - timeouts:
        request: soon
---
apiVersion: v1
kind: Service
metadata:
  name: svc
  namespace: ns
spec:
  ports:
    - port: 8080
      appProtocol: kubernetes.io/h2c
`

// TestCheck: a field the schema lacks is named once, with the list
// indices left out; a kind no CRD serves and an object the CRD refuses are
// named with the object; what the CRDs have is not named.
func TestCheck(t *testing.T) {
	list, err := crds.Load()
	if err != nil {
		t.Fatal(err)
	}
	c, err := crdneeds.NewChecker(list)
	if err != nil {
		t.Fatal(err)
	}
	needs, err := c.Check(context.Background(), []byte(manifest))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, n := range needs {
		got = append(got, n.String())
	}
	want := []string{
		"HTTPRoute ns/c (",
		"HTTPRoute spec.rules[].notAField (not in the CRD's schema)",
		"NoSuchKind b (no CRD serves the kind: gateway.networking.k8s.io/v1)",
	}
	if len(got) != len(want) {
		t.Fatalf("Check = %q; want %d needs like %q", got, len(want), want)
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("need %d = %q; want it to start %q", i, got[i], want[i])
		}
	}
	if !strings.Contains(got[0], "spec.rules[0].timeouts.request") {
		t.Errorf("the refused route's need %q does not name the field the CRD refuses", got[0])
	}
	if _, err := c.Check(context.Background(), []byte("kind: [")); err == nil {
		t.Error("Check of a manifest that does not decode: no error")
	}
}
