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

// resourceFeatures are the features that say an implementation supports a
// kind of resource at all: every test of that resource lists one, so a
// page that names the resource (connection-timeouts.md names TLSRoute)
// does not explain the test.
var resourceFeatures = map[string]bool{
	"Gateway": true, "GatewayClass": true, "HTTPRoute": true, "GRPCRoute": true, "TLSRoute": true, "TCPRoute": true,
	"UDPRoute": true, "ReferenceGrant": true, "BackendTLSPolicy": true, "Mesh": true, "ListenerSet": true,
}

// docsFor returns the docs/semantics pages that explain t: those that name
// one of its features that is neither core (every route has the core
// ones) nor the support of a kind of resource, or, for a test of
// gatewitness's, the test itself (the pages decide gatewitness's tests;
// they name upstream's tests only in passing, as connection-timeouts.md
// lists the TLSRoute tests that fail in-process). A test no page explains
// gets no link. sourceURL is where the repository's files are browsed,
// ending in "/".
func docsFor(all []semanticsDoc, t reports.TestResult, sourceURL string) []docLink {
	var keys []string
	if t.Source != reports.Upstream {
		keys = append(keys, t.ShortName)
	}
	for _, f := range featureLinks(t) {
		if f.Level == string(features.LevelCore) || resourceFeatures[f.Name] {
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
