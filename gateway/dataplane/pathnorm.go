package dataplane

import (
	"net/http"
	"net/url"
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
//
// The backend gets the path in the encoding the client sent, less the
// removed segments: an encoded slash ("%2F") inside a segment stays
// encoded, as it does in a path without dot-segments, since a backend may
// tell "a%2Fb" (one segment) from "a/b" (two). That holds unless a
// dot-segment is delimited by an encoded slash ("/public%2F..%2Fsecret"):
// then the segments of the encoded path are not those of the decoded path
// routes matched, and the backend gets the decoded result, re-encoded, so
// that what it gets is still what a route matched.

// normalizePath removes the dot-segments of r's path in place, and reports
// whether there were any. A path without any is left untouched, its
// original encoding included.
func normalizePath(r *http.Request) bool {
	p := r.URL.Path
	if !hasDotSegment(p) {
		return false
	}
	raw := r.URL.RawPath
	r.URL.Path = removeDotSegments(p)
	r.URL.RawPath = "" // re-encoded from Path when forwarded
	if raw != "" {
		// Keep the client's encoding when removing the segments from the
		// encoded path names the same path.
		if esc := resolveDotSegments(raw, escapedDot); unescapePath(esc) == r.URL.Path {
			r.URL.RawPath = esc
		}
	}
	return true
}

// unescapePath decodes an encoded path, or returns "" when it is not one.
func unescapePath(p string) string {
	u, err := url.PathUnescape(p)
	if err != nil {
		return ""
	}
	return u
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
func removeDotSegments(path string) string { return resolveDotSegments(path, plainDot) }

// plainDot returns a segment as it is: "." and ".." are dot-segments.
func plainDot(seg string) string { return seg }

// escapedDot returns what an encoded segment is, for the test of a
// dot-segment: "%2e" and "%2E" are dots (anything else is returned as it
// is, which is never "." or ".." unless it was).
func escapedDot(seg string) string {
	if len(seg) > 6 || !strings.Contains(seg, "%") {
		return seg
	}
	return strings.ReplaceAll(strings.ReplaceAll(seg, "%2e", "."), "%2E", ".")
}

// resolveDotSegments is removeDotSegments with the dot-segments told by
// dot(segment) being "." or "..".
func resolveDotSegments(path string, dot func(string) string) string {
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	segs := strings.Split(path[1:], "/")
	out := make([]string, 0, len(segs))
	trailing := false
	for i, s := range segs {
		last := i == len(segs)-1
		switch dot(s) {
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
