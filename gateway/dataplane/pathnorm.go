package dataplane

import (
	"net/http"
	"strings"
)

// Paths are normalised before any route sees them (docs/semantics/paths.md).
//
// Go's server gives the handler r.URL.Path with every percent-encoding
// decoded: "/public/%2e%2e/secret" and "/public%2F..%2Fsecret" both arrive
// as "/public/../secret". Matching that against a PathPrefix "/public"
// route and forwarding the request as it came would hand the backend a
// path that, once it resolves the dot-segments, names "/secret", which no
// route exposes. So the dot-segments of the decoded path are removed as
// RFC 3986 section 5.2.4 says (an encoded "." or "/" counts as one, as the
// section 6.2.2.2 normalisation of unreserved characters and Go's
// decoding both make it), routes match the result, and the backend gets
// the result: a request only ever reaches a backend with the path of a
// route that matched it.

// normalizePath removes the dot-segments of r's path in place, and reports
// whether there were any. A path without any is left untouched, its
// original encoding included.
func normalizePath(r *http.Request) bool {
	p := r.URL.Path
	if !hasDotSegment(p) {
		return false
	}
	r.URL.Path = removeDotSegments(p)
	r.URL.RawPath = "" // re-encoded from Path when forwarded
	return true
}

// hasDotSegment reports whether path has a segment "." or "..".
func hasDotSegment(path string) bool {
	for i := 0; i < len(path); i++ {
		if path[i] != '.' || (i > 0 && path[i-1] != '/') {
			continue
		}
		rest := path[i+1:]
		if rest == "" || rest[0] == '/' || (rest[0] == '.' && (len(rest) == 1 || rest[1] == '/')) {
			return true
		}
	}
	return false
}

// removeDotSegments is the remove_dot_segments algorithm of RFC 3986
// section 5.2.4 for an absolute path: "." segments go, ".." removes the
// segment before it (never above the root), and a path that ended in a
// dot-segment keeps its final "/". Empty segments ("//") are kept.
func removeDotSegments(path string) string {
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	segs := strings.Split(path[1:], "/")
	out := make([]string, 0, len(segs))
	trailing := false
	for i, s := range segs {
		last := i == len(segs)-1
		switch s {
		case ".":
			trailing = last
		case "..":
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
			trailing = last
		default:
			out = append(out, s)
			trailing = false
		}
	}
	result := "/" + strings.Join(out, "/")
	if trailing && !strings.HasSuffix(result, "/") {
		result += "/"
	}
	return result
}
