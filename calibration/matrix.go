package calibration

import (
	"fmt"
	"strings"

	"github.com/gatewitness/gatewitness/reports"
	"github.com/gatewitness/gatewitness/reports/site"
)

// Matrix is the calibration matrix of every variant: the expected
// verdicts, with those measured (by variant Key, then test) where a run
// measured them.
func Matrix(measured map[string]map[string]Verdict) site.Calibration {
	c := site.Calibration{Tests: Scope()}
	for _, v := range variants {
		cv := site.CalibrationVariant{DataPlane: v.DataPlane, Name: v.Name, About: v.About}
		for _, r := range Expected(v) {
			cell := site.CalibrationCell{Test: r.Test, Expected: r.Verdict, Why: r.Why, Doc: r.Doc}
			if got, ok := measured[v.Key()][r.Test]; ok {
				cell.Measured = got.Result
			}
			cv.Cells = append(cv.Cells, cell)
		}
		c.Variants = append(c.Variants, cv)
	}
	return c
}

// MarkdownMatrix writes the matrix of expected verdicts as a Markdown
// table, a row per test (with an anchor docs/semantics links to), a
// column per variant; the reasons follow, per data plane.
func MarkdownMatrix() string {
	var b strings.Builder
	b.WriteString("| test |")
	for _, v := range variants {
		fmt.Fprintf(&b, " %s<br>%s |", v.DataPlane, v.Name)
	}
	b.WriteString("\n|---|")
	for range variants {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, t := range Scope() {
		fmt.Fprintf(&b, "| <a id=\"%s\"></a>[%s](#why-%s) |", strings.ToLower(t), t, strings.ToLower(t))
		for _, v := range variants {
			cell := "not run"
			for _, r := range Expected(v) {
				if r.Test == t {
					cell = mark(r.Verdict)
				}
			}
			fmt.Fprintf(&b, " %s |", cell)
		}
		b.WriteString("\n")
	}
	b.WriteString("\n### Why, test by test\n")
	for _, t := range Scope() {
		fmt.Fprintf(&b, "\n<a id=\"why-%s\"></a>**%s**\n\n", strings.ToLower(t), t)
		for _, v := range variants {
			for _, r := range Expected(v) {
				if r.Test != t || (v.Name != "honest" && !inRows(v.Expect, t)) {
					continue
				}
				doc := ""
				if r.Doc != "" {
					doc = " (" + r.Doc + ")"
				}
				fmt.Fprintf(&b, "- %s, %s: **%s**: %s%s\n", v.DataPlane, v.Name, r.Verdict, r.Why, doc)
			}
		}
	}
	return b.String()
}

func inRows(rows []Row, test string) bool {
	for _, r := range rows {
		if r.Test == test {
			return true
		}
	}
	return false
}

func mark(r reports.Result) string {
	switch r {
	case reports.Pass:
		return "✓ pass"
	case reports.Fail:
		return "✗ fail"
	case reports.Skip:
		return "– skip"
	}
	return string(r)
}
