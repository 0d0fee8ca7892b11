// Package textcut shortens text to a byte budget without splitting a UTF-8
// character, for the places that bound what they keep or print (failure
// messages, report cells, recorded observations).
package textcut

import "unicode/utf8"

// Prefix returns the longest prefix of s that is at most n bytes long and
// ends at a character boundary: s itself when it fits, "" when n <= 0.
func Prefix(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if n <= 0 {
		return ""
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

// Suffix returns the longest suffix of s that is at most n bytes long and
// starts at a character boundary: s itself when it fits, "" when n <= 0.
func Suffix(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if n <= 0 {
		return ""
	}
	start := len(s) - n
	for start < len(s) && !utf8.RuneStart(s[start]) {
		start++
	}
	return s[start:]
}
