package controller

import (
	"slices"
	"testing"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

func TestIntersectHostnames(t *testing.T) {
	tests := []struct {
		name     string
		listener string // "" for none
		route    []string
		want     []string
		ok       bool
	}{
		{"no hostnames anywhere", "", nil, nil, true},
		{"route takes listener hostname", "foo.example.com", nil, []string{"foo.example.com"}, true},
		{"listener without hostname keeps route's", "", []string{"a.com", "*.b.com"}, []string{"a.com", "*.b.com"}, true},
		{"exact equal", "very.specific.com", []string{"non.matching.com", "very.specific.com"}, []string{"very.specific.com"}, true},
		{"exact under listener wildcard", "*.wildcard.io", []string{"wildcard.io", "foo.wildcard.io", "foo.bar.wildcard.io"}, []string{"foo.wildcard.io", "foo.bar.wildcard.io"}, true},
		{"route wildcard over listener exact", "very.specific.com", []string{"*.specific.com"}, []string{"very.specific.com"}, true},
		{"wildcard does not match its own apex", "wildcard.io", []string{"*.wildcard.io"}, nil, false},
		{"narrower route wildcard kept", "*.example.com", []string{"*.foo.example.com"}, []string{"*.foo.example.com"}, true},
		{"narrower listener wildcard kept", "*.foo.example.com", []string{"*.example.com"}, []string{"*.foo.example.com"}, true},
		{"disjoint wildcards", "*.anotherwildcard.io", []string{"*.wildcard.io"}, nil, false},
		{"suffix without dot boundary", "*.example.com", []string{"badexample.com"}, nil, false},
		{"case-insensitive", "Foo.Example.com", []string{"foo.example.COM"}, []string{"foo.example.com"}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var l *gwv1.Hostname
			if tc.listener != "" {
				h := gwv1.Hostname(tc.listener)
				l = &h
			}
			var r []gwv1.Hostname
			for _, h := range tc.route {
				r = append(r, gwv1.Hostname(h))
			}
			got, ok := intersectHostnames(l, r)
			if ok != tc.ok || !slices.Equal(got, tc.want) {
				t.Errorf("intersectHostnames(%q, %q) = %q, %v; want %q, %v", tc.listener, tc.route, got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestHostnamesOverlap(t *testing.T) {
	tests := []struct {
		a, b []string
		want bool
	}{
		{nil, []string{"a.com"}, true},
		{[]string{"a.com"}, []string{"b.com"}, false},
		{[]string{"*.example.com"}, []string{"x.example.com"}, true},
		{[]string{"*.example.com"}, []string{"example.com"}, false},
	}
	for _, tc := range tests {
		if got := hostnamesOverlap(tc.a, tc.b); got != tc.want {
			t.Errorf("hostnamesOverlap(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

// TestHostIndexAgreesWithOverlap checks hostIndex against hostnamesOverlap
// on every pair drawn from hostnames built to hit the tricky cases: equal
// names, wildcards over exact names and over narrower wildcards, a
// wildcard's own domain (which it does not cover), and names that share a
// suffix without a dot boundary.
func TestHostIndexAgreesWithOverlap(t *testing.T) {
	names := []string{
		"example.com", "a.example.com", "b.a.example.com", "xexample.com",
		"*.example.com", "*.a.example.com", "*.com", "*.xexample.com", "other.org", "*.org",
	}
	var lists [][]string
	lists = append(lists, nil) // any host
	for _, a := range names {
		lists = append(lists, []string{a})
		for _, b := range names {
			if a < b {
				lists = append(lists, []string{a, b})
			}
		}
	}
	for _, kept := range lists {
		for _, kept2 := range lists[:12] {
			var x hostIndex
			x.add(kept)
			x.add(kept2)
			for _, q := range lists {
				want := hostnamesOverlap(kept, q) || hostnamesOverlap(kept2, q)
				if got := x.overlaps(q); got != want {
					t.Fatalf("index of %q and %q overlaps(%q) = %v, want %v", kept, kept2, q, got, want)
				}
			}
		}
	}
	var empty hostIndex
	if empty.overlaps(nil) || empty.overlaps([]string{"a.com"}) {
		t.Error("an empty index overlaps something")
	}
}
