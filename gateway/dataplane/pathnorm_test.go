package dataplane

import (
	"net/http"
	"net/url"
	"testing"
)

func TestRemoveDotSegments(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		// RFC 3986 section 5.2.4's own examples, as absolute paths.
		{"/a/b/c/./../../g", "/a/g"},
		{"/mid/content=5/../6", "/mid/6"},
		{"/public/../secret", "/secret"},
		{"/public/./x", "/public/x"},
		{"/public/..", "/"},
		{"/public/.", "/public/"},
		{"/public/x/..", "/public/"},
		{"/..", "/"},
		{"/../../etc/passwd", "/etc/passwd"},
		{"/a/b/../../../c", "/c"},
		{"/a//b/../c", "/a//c"}, // empty segments are data, not merged
		{"/a/..b/c.", "/a/..b/c."},
		{"/", "/"},
	} {
		if got := removeDotSegments(tc.in); got != tc.want {
			t.Errorf("removeDotSegments(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestNormalizePath(t *testing.T) {
	for _, tc := range []struct {
		target      string // request-target as sent
		wantPath    string
		wantChanged bool
		wantEscaped string // what is forwarded
	}{
		{"/public/../secret", "/secret", true, "/secret"},
		{"/public/%2e%2e/secret", "/secret", true, "/secret"},
		{"/public/%2E%2E/secret", "/secret", true, "/secret"},
		{"/public/.%2e/secret", "/secret", true, "/secret"},
		{"/public%2F..%2Fsecret", "/secret", true, "/secret"},
		{"/public/%2e/x", "/public/x", true, "/public/x"},
		{"/public/a%20b/../c%20d", "/public/c d", true, "/public/c%20d"},
		// Without dot-segments nothing changes, the encoding included.
		{"/public/a%2Fb", "/public/a/b", false, "/public/a%2Fb"},
		{"/public/..x/.y/z..", "/public/..x/.y/z..", false, "/public/..x/.y/z.."},
		{"/public/", "/public/", false, "/public/"},
	} {
		u, err := url.ParseRequestURI(tc.target)
		if err != nil {
			t.Fatalf("%s: %v", tc.target, err)
		}
		r := &http.Request{URL: u}
		changed := normalizePath(r)
		if changed != tc.wantChanged || r.URL.Path != tc.wantPath || r.URL.EscapedPath() != tc.wantEscaped {
			t.Errorf("normalizePath(%q) = %v, path %q, forwarded %q; want %v, %q, %q",
				tc.target, changed, r.URL.Path, r.URL.EscapedPath(), tc.wantChanged, tc.wantPath, tc.wantEscaped)
		}
	}
}

// FuzzNormalizePath checks that a normalised path has no dot-segment left,
// stays absolute, and is a fixed point.
func FuzzNormalizePath(f *testing.F) {
	for _, s := range []string{"/a/../b", "/./", "/..", "/a/b/c/./../../g", "/%2e%2e/x", "//..//."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		if p == "" || p[0] != '/' {
			return
		}
		got := removeDotSegments(p)
		if got == "" || got[0] != '/' {
			t.Fatalf("removeDotSegments(%q) = %q, not absolute", p, got)
		}
		if hasDotSegment(got) {
			t.Fatalf("removeDotSegments(%q) = %q still has a dot-segment", p, got)
		}
		if again := removeDotSegments(got); again != got {
			t.Fatalf("not a fixed point: %q -> %q -> %q", p, got, again)
		}
		if !hasDotSegment(p) && got != p {
			t.Fatalf("hasDotSegment(%q) is false but removeDotSegments changed it to %q", p, got)
		}
	})
}
