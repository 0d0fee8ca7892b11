package controller

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// TestRouteStatusUnchangedAgrees holds the shortcut that skips building a
// route's status to the long way: routeStatusUnchanged(current) must be
// true exactly when routeParents(current) equals current, for a status as
// written and for each way it can differ.
func TestRouteStatusUnchangedAgrees(t *testing.T) {
	c := newTestController(t, newFakeClient(t), &recorder{})
	now := metav1.NewTime(t0)
	r := &routeState{namespace: ns, name: "r", generation: 3, unresolved: reason{"BackendNotFound", "svc is gone"}}
	for _, name := range []string{"gw", "other-gw"} {
		group, kind := gwv1.Group(gwv1.GroupName), gwv1.Kind("Gateway")
		ref := parentRef(name)
		ref.Group, ref.Kind = &group, &kind
		r.parents = append(r.parents, &parentState{echo: ref})
	}
	r.parents[1].notAccepted = reason{"NotAllowedByListeners", "no listener admits it"}
	written := c.routeParents(nil, r, now)
	other := gwv1.RouteParentStatus{ParentRef: parentRef("gw"), ControllerName: "example.com/other",
		Conditions: []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted", LastTransitionTime: now}}}

	variants := map[string]func([]gwv1.RouteParentStatus) []gwv1.RouteParentStatus{
		"as written": func(s []gwv1.RouteParentStatus) []gwv1.RouteParentStatus { return s },
		"another controller's first": func(s []gwv1.RouteParentStatus) []gwv1.RouteParentStatus {
			return append([]gwv1.RouteParentStatus{other}, s...)
		},
		"another controller's after": func(s []gwv1.RouteParentStatus) []gwv1.RouteParentStatus { return append(s, other) },
		"one of ours missing":        func(s []gwv1.RouteParentStatus) []gwv1.RouteParentStatus { return s[:1] },
		"none":                       func([]gwv1.RouteParentStatus) []gwv1.RouteParentStatus { return nil },
		"parents swapped":            func(s []gwv1.RouteParentStatus) []gwv1.RouteParentStatus { return []gwv1.RouteParentStatus{s[1], s[0]} },
		"message":                    func(s []gwv1.RouteParentStatus) []gwv1.RouteParentStatus { s[0].Conditions[0].Message = "x"; return s },
		"reason":                     func(s []gwv1.RouteParentStatus) []gwv1.RouteParentStatus { s[1].Conditions[0].Reason = "x"; return s },
		"status": func(s []gwv1.RouteParentStatus) []gwv1.RouteParentStatus {
			s[1].Conditions[1].Status = metav1.ConditionTrue
			return s
		},
		"observed generation": func(s []gwv1.RouteParentStatus) []gwv1.RouteParentStatus {
			s[0].Conditions[1].ObservedGeneration = 2
			return s
		},
		"no transition time": func(s []gwv1.RouteParentStatus) []gwv1.RouteParentStatus {
			s[0].Conditions[0].LastTransitionTime = metav1.Time{}
			return s
		},
		"section name": func(s []gwv1.RouteParentStatus) []gwv1.RouteParentStatus {
			sec := gwv1.SectionName("l")
			s[0].ParentRef.SectionName = &sec
			return s
		},
		"extra condition": func(s []gwv1.RouteParentStatus) []gwv1.RouteParentStatus {
			s[0].Conditions = append(s[0].Conditions, metav1.Condition{Type: "x", Status: metav1.ConditionTrue, Reason: "x", LastTransitionTime: now})
			return s
		},
	}
	for name, vary := range variants {
		current := vary(deepCopyParents(written))
		long := equalParents(c.routeParents(current, r, now), current)
		if got := c.routeStatusUnchanged(current, r); got != long {
			t.Errorf("%s: routeStatusUnchanged = %v, but building the status says unchanged = %v", name, got, long)
		}
		if name == "as written" && !long {
			t.Errorf("as written: the status is not a fixed point")
		}
	}
}

func deepCopyParents(in []gwv1.RouteParentStatus) []gwv1.RouteParentStatus {
	out := make([]gwv1.RouteParentStatus, len(in))
	for i := range in {
		in[i].DeepCopyInto(&out[i])
	}
	return out
}

func equalParents(a, b []gwv1.RouteParentStatus) bool { return equality.Semantic.DeepEqual(a, b) }
