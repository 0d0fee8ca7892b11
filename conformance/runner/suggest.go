package runner

import (
	"fmt"
	"strings"
)

// Suggest returns the candidate closest to name, for a "did you mean"
// (see suggest), or "".
func Suggest(name string, candidates []string) string { return suggest(name, candidates) }

// suggest returns the candidate closest to name, to offer as "did you
// mean": the one fewest single-letter edits away (ignoring case), if that
// is few for the name's length, or the one that contains the name. It
// returns "" when nothing is close.
func suggest(name string, candidates []string) string {
	lower := strings.ToLower(name)
	best, bestScore := "", -1
	limit := max(2, len(name)/3)
	for _, c := range candidates {
		lc := strings.ToLower(c)
		score := editDistance(lower, lc)
		if score > limit {
			if len(lower) < 4 || !strings.Contains(lc, lower) {
				continue
			}
			score = limit // a fragment of the name: as good as the worst edit
		}
		if bestScore < 0 || score < bestScore || score == bestScore && c < best {
			best, bestScore = c, score
		}
	}
	return best
}

// didYouMean returns "; did you mean X?" for suggest's answer, or "".
func didYouMean(name string, candidates []string) string {
	if s := suggest(name, candidates); s != "" {
		return fmt.Sprintf("; did you mean %s?", s)
	}
	return ""
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
