package site

import (
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/gatewitness/gatewitness/docs"
	"github.com/gatewitness/gatewitness/features"
	"github.com/gatewitness/gatewitness/reports"
)

// gepURL is where the Gateway API project publishes a GEP.
func gepURL(n int) string { return fmt.Sprintf("https://gateway-api.sigs.k8s.io/geps/gep-%d/", n) }

// featureLink is a feature of a test, with its GEP.
type featureLink struct {
	Name   string
	Level  string
	GEP    int
	GEPURL string
}

func featureLinks(t reports.TestResult) []featureLink {
	var out []featureLink
	for _, f := range t.Features {
		l := featureLink{Name: string(f)}
		if info, ok := features.Lookup(f); ok {
			l.Level = string(info.Level)
			if info.GEP > 0 {
				l.GEP, l.GEPURL = info.GEP, gepURL(info.GEP)
			}
		}
		out = append(out, l)
	}
	return out
}

// docLink is a page of docs/semantics.
type docLink struct {
	Title string
	URL   string
}

// semanticsDoc is one page of docs/semantics and the words it uses.
type semanticsDoc struct {
	name, title string
	words       map[string]bool
}

var word = regexp.MustCompile(`[A-Za-z0-9]+`)

// semanticsDocs reads the embedded docs/semantics pages.
func semanticsDocs() []semanticsDoc { return readSemanticsDocs(docs.Semantics) }

// readSemanticsDocs reads the pages semantics/*.md of fsys.
func readSemanticsDocs(fsys fs.FS) []semanticsDoc {
	var out []semanticsDoc
	names, _ := fs.Glob(fsys, "semantics/*.md")
	for _, n := range names {
		data, err := fs.ReadFile(fsys, n)
		if err != nil {
			continue
		}
		text := string(data)
		d := semanticsDoc{name: path.Base(n), title: strings.TrimSuffix(path.Base(n), ".md"), words: map[string]bool{}}
		if first, _, _ := strings.Cut(text, "\n"); strings.HasPrefix(first, "# ") {
			d.title = strings.TrimSpace(first[2:])
		}
		for _, w := range word.FindAllString(text, -1) {
			d.words[w] = true
		}
		out = append(out, d)
	}
	return out
}

// docsFor returns the docs/semantics pages that explain t: those that name
// the test or one of its features that is not core (every route has the
// core ones). sourceURL is where the repository's files are browsed,
// ending in "/".
func docsFor(all []semanticsDoc, t reports.TestResult, sourceURL string) []docLink {
	keys := []string{t.ShortName}
	for _, f := range featureLinks(t) {
		if f.Level == string(features.LevelCore) {
			continue
		}
		keys = append(keys, f.Name)
	}
	var out []docLink
	for _, d := range all {
		if slices.ContainsFunc(keys, func(k string) bool { return d.words[k] }) {
			out = append(out, docLink{Title: d.title, URL: sourceURL + "docs/semantics/" + d.name})
		}
	}
	return out
}
