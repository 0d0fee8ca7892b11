package runner

import (
	"context"
	"fmt"
	"io/fs"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gatewitness/gatewitness/cluster/crdneeds"
	gctests "github.com/gatewitness/gatewitness/conformance/tests"
)

// gatewayAPIGroups are the API groups of the CRDs a test's manifests are
// checked against: the Gateway API's. Other CRDs of the cluster are left
// out of the check (their schemas are not the suite's business).
var gatewayAPIGroups = []string{"gateway.networking.k8s.io", "gateway.networking.x-k8s.io"}

// skipLackingFields marks, on the gatewitness side s, every test that would
// run but whose manifests need a field (or kind) the cluster's Gateway API
// CRDs lack as not run, with what it needs (plannedTest.lacks), and adds it
// to the suite's skip list: on a cluster whose GRPCRoute CRD has no
// rules[].timeouts (upstream's, without gatewitness's overlay), the
// GEP-3139 tests would apply routes the API server prunes and then fail
// for the wrong reason. It returns a line for the run's header naming the
// tests and the fields, or "". When the CRDs cannot be read or compiled it
// skips nothing and returns a warning instead.
func skipLackingFields(c client.Client, s *side, timeout time.Duration) (note, warning string) {
	if c == nil || s.suite == nil {
		return "", ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var list apiextensionsv1.CustomResourceDefinitionList
	if err := c.List(ctx, &list); err != nil {
		return "", fmt.Sprintf("could not list the cluster's CRDs to check the tests' manifests against them (%v); a test whose manifests need a field they lack fails instead of being skipped", err)
	}
	var crds []*apiextensionsv1.CustomResourceDefinition
	for i := range list.Items {
		for _, g := range gatewayAPIGroups {
			if list.Items[i].Spec.Group == g {
				crds = append(crds, &list.Items[i])
			}
		}
	}
	checker, err := crdneeds.NewChecker(crds)
	if err != nil {
		return "", fmt.Sprintf("could not compile the cluster's Gateway API CRDs to check the tests' manifests against them (%v); a test whose manifests need a field they lack fails instead of being skipped", err)
	}
	var skipped []string
	for i := range s.planned {
		p := &s.planned[i]
		if !p.runs {
			continue
		}
		needs, err := manifestNeeds(ctx, checker, p.test.Manifests)
		if err != nil {
			return "", fmt.Sprintf("could not check %s's manifests against the cluster's CRDs: %v", p.test.ShortName, err)
		}
		if len(needs) == 0 {
			continue
		}
		p.runs, p.lacks = false, needs
		s.suite.SkipTests.Insert(p.test.ShortName)
		skipped = append(skipped, fmt.Sprintf("%s (%s)", p.test.ShortName, crdneeds.Fields(needs)))
	}
	if len(skipped) == 0 {
		return "", ""
	}
	return fmt.Sprintf("%d skipped: their manifests need what the cluster's Gateway API CRDs lack (install the CRDs they need; see docs/certify.md): %s",
		len(skipped), strings.Join(skipped, "; ")), ""
}

// manifestNeeds reads the named manifests of gatewitness's tests and
// checks them.
func manifestNeeds(ctx context.Context, checker *crdneeds.Checker, manifests []string) ([]crdneeds.Need, error) {
	var docs [][]byte
	for _, m := range manifests {
		data, err := fs.ReadFile(gctests.Manifests, m)
		if err != nil {
			return nil, err
		}
		docs = append(docs, data)
	}
	return checker.Check(ctx, docs...)
}

// lacksReason is a skipped test's message when the cluster's CRDs lack
// what its manifests need.
func lacksReason(needs []crdneeds.Need) string {
	return "the cluster's Gateway API CRDs lack what its manifests need: " + crdneeds.Fields(needs)
}

// appendNonEmpty appends s to list unless it is empty.
func appendNonEmpty(list []string, s string) []string {
	if s == "" {
		return list
	}
	return append(list, s)
}
