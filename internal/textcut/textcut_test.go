package textcut

import (
	"testing"
	"unicode/utf8"
)

func TestPrefixAndSuffix(t *testing.T) {
	const s = "ab€cd" // € is 3 bytes: a b [e2 82 ac] c d
	for _, c := range []struct {
		n              int
		prefix, suffix string
	}{
		{-1, "", ""}, {0, "", ""}, {1, "a", "d"}, {2, "ab", "cd"}, {3, "ab", "cd"}, {4, "ab", "cd"},
		{5, "ab€", "€cd"}, {6, "ab€c", "b€cd"}, {7, "ab€cd", "ab€cd"}, {100, "ab€cd", "ab€cd"},
	} {
		if got := Prefix(s, c.n); got != c.prefix {
			t.Errorf("Prefix(%q, %d) = %q, want %q", s, c.n, got, c.prefix)
		}
		if got := Suffix(s, c.n); got != c.suffix {
			t.Errorf("Suffix(%q, %d) = %q, want %q", s, c.n, got, c.suffix)
		}
	}
}

func FuzzPrefixSuffix(f *testing.F) {
	f.Add("ab€cd", 4)
	f.Fuzz(func(t *testing.T, s string, n int) {
		if !utf8.ValidString(s) {
			return
		}
		p, q := Prefix(s, n), Suffix(s, n)
		for _, x := range []string{p, q} {
			if !utf8.ValidString(x) || (x != s && len(x) > max(n, 0)) {
				t.Fatalf("Prefix/Suffix(%q, %d) = %q, %q", s, n, p, q)
			}
		}
		if s[:len(p)] != p || s[len(s)-len(q):] != q {
			t.Fatalf("Prefix/Suffix(%q, %d) = %q, %q: not a prefix/suffix", s, n, p, q)
		}
	})
}
