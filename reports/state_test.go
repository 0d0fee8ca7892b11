package reports

import "testing"

// TestConditionHealth reads conditions with their type's polarity: True is
// healthy for most, False for the negative ones (a listener's Conflicted,
// a route's PartiallyInvalid, Kubernetes' Degraded), Unknown is neither.
func TestConditionHealth(t *testing.T) {
	for _, tt := range []struct {
		typ, status, want string
	}{
		{"Accepted", "True", "healthy"},
		{"Accepted", "False", "unhealthy"},
		{"Programmed", "Unknown", "unknown"},
		{"Conflicted", "False", "healthy"},
		{"Conflicted", "True", "unhealthy"},
		{"OverlappingTLSConfig", "True", "unhealthy"},
		{"PartiallyInvalid", "False", "healthy"},
		{"Degraded", "True", "unhealthy"},
		{"ResolvedRefs", "", "unknown"},
	} {
		if got := (StateCondition{Type: tt.typ, Status: tt.status}).Health(); got != tt.want {
			t.Errorf("%s %s reads %s, want %s", tt.typ, tt.status, got, tt.want)
		}
	}
}
