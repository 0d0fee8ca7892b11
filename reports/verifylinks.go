package reports

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	gmtext "github.com/yuin/goldmark/text"
)

// The link checks, as upstream runs markdown-link-check on each README.
const (
	ruleLinks    = "README links"
	ruleWebLinks = "README links (web)"
)

// LinkTimeout bounds one fetch of a README's link to the web.
const LinkTimeout = 10 * time.Second

// maxWebLinks bounds the links to the web fetched per README.
const maxWebLinks = 100

// readmeLinks are the links of a README and the anchors its headings
// give, as markdown-link-check sees them.
type readmeLinks struct {
	targets []string        // every link target, in order, each once
	anchors map[string]bool // "#slug" of each heading
}

// parseReadmeLinks extracts a README's links (inline, reference,
// autolinks, bare web addresses as GitHub Flavored Markdown links them,
// images) and its headings' anchors.
func parseReadmeLinks(src []byte) readmeLinks {
	md := goldmark.New(goldmark.WithExtensions(extension.GFM))
	doc := md.Parser().Parse(gmtext.NewReader(src))
	out := readmeLinks{anchors: map[string]bool{}}
	seen := map[string]bool{}
	slugs := map[string]int{}
	add := func(t string) {
		if t != "" && !seen[t] {
			seen[t] = true
			out.targets = append(out.targets, t)
		}
	}
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.Link:
			add(string(n.Destination))
		case *ast.Image:
			add(string(n.Destination))
		case *ast.AutoLink:
			u := string(n.URL(src))
			if n.AutoLinkType == ast.AutoLinkEmail && !strings.HasPrefix(u, "mailto:") {
				u = "mailto:" + u
			} else if strings.HasPrefix(u, "www.") {
				u = "http://" + u
			}
			add(u)
		case *ast.Heading:
			slug := headingSlug(plainText(n, src))
			if k := slugs[slug]; k > 0 {
				out.anchors["#"+slug+"-"+fmt.Sprint(k)] = true
			} else {
				out.anchors["#"+slug] = true
			}
			slugs[slug]++
		}
		return ast.WalkContinue, nil
	})
	// Anchors an HTML element names: <a name="x">, id="x".
	for _, m := range htmlAnchorRe.FindAllSubmatch(src, -1) {
		out.anchors["#"+string(m[1])] = true
	}
	return out
}

var htmlAnchorRe = regexp.MustCompile(`(?i)<[a-z][^>]*\s(?:name|id)\s*=\s*["']([^"']+)["']`)

// plainText is the text of a node and its children.
func plainText(n ast.Node, src []byte) string {
	var b strings.Builder
	_ = ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if entering {
			switch c := c.(type) {
			case *ast.Text:
				b.Write(c.Segment.Value(src))
			case *ast.String:
				b.Write(c.Value)
			}
		}
		return ast.WalkContinue, nil
	})
	return b.String()
}

// headingSlug is the anchor GitHub gives a heading: lower case, each
// space a hyphen, punctuation other than hyphens and underscores gone.
func headingSlug(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(s)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// checkReadmeLinks checks the links of the README at path: links to
// files and to the README's own headings always; links to the web are
// fetched with client when checkWeb is set, and otherwise named in one
// warning, as not checked.
func checkReadmeLinks(path string, src []byte, checkWeb bool, client *http.Client) []Finding {
	var findings []Finding
	add := func(sev Severity, rule, format string, args ...any) {
		findings = append(findings, Finding{sev, rule, fmt.Sprintf(format, args...)})
	}
	links := parseReadmeLinks(src)
	dir := filepath.Dir(path)
	var web []string
	for _, t := range links.targets {
		switch {
		case strings.HasPrefix(t, "#"):
			if !links.anchors[strings.ToLower(t)] && !links.anchors[t] {
				add(Error, ruleLinks, "the link %s leads to no heading of the README (upstream checks its links with markdown-link-check)", t)
			}
		case isWebURL(t):
			web = append(web, t)
		default:
			if rel, ok := localTarget(t); ok {
				if p := filepath.Clean(filepath.FromSlash(rel)); filepath.IsAbs(p) || p == ".." || strings.HasPrefix(p, ".."+string(filepath.Separator)) {
					add(Error, ruleLinks, "the link %s leads out of the implementation folder: upstream's CI checks the README with markdown-link-check in a container that holds only this folder, where it leads to no file", t)
				} else if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
					add(Error, ruleLinks, "the link %s leads to no file beside the README (upstream checks its links with markdown-link-check)", t)
				}
			} else if u, err := url.Parse(t); err == nil && u.Scheme == "mailto" {
				if !mailRe.MatchString(u.Opaque) {
					add(Error, ruleLinks, "the link %s is not a valid mail address (markdown-link-check validates mailto: links)", t)
				}
			}
		}
	}
	if len(web) == 0 {
		return findings
	}
	if !checkWeb {
		add(Warning, ruleWebLinks, "%d links to the web not fetched (no --check-links; upstream's CI fetches each and fails on a dead one): %s", len(web), nameSome(web, 8))
		return findings
	}
	if len(web) > maxWebLinks {
		add(Warning, ruleWebLinks, "%d links to the web; only the first %d were fetched", len(web), maxWebLinks)
		web = web[:maxWebLinks]
	}
	for i, err := range fetchAll(client, web) {
		if err != nil {
			add(Error, ruleWebLinks, "the link %s is dead: %v (upstream's CI fails a README with a dead link)", web[i], err)
		}
	}
	return findings
}

// mailRe is a loose check of an address: local@domain.tld.
var mailRe = regexp.MustCompile(`^[^@\s]+@[^@\s]+\.[^@\s]+$`)

// nameSome lists up to n names, then how many more there are.
func nameSome(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:n], ", "), len(names)-n)
}

// fetchAll fetches each link, four at a time, and returns why each is
// dead (nil when alive).
func fetchAll(client *http.Client, links []string) []error {
	if client == nil {
		client = &http.Client{Timeout: LinkTimeout}
	}
	errs := make([]error, len(links))
	sem := make(chan struct{}, 4)
	var wg sync.WaitGroup
	for i, l := range links {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			errs[i] = fetchLink(client, l)
		}()
	}
	wg.Wait()
	return errs
}

// fetchLink tells whether a link is alive as markdown-link-check judges
// it: a HEAD, then a GET when the HEAD is refused, ends in 200 after
// redirects.
func fetchLink(client *http.Client, link string) error {
	status := 0
	for _, method := range []string{http.MethodHead, http.MethodGet} {
		ctx, cancel := context.WithTimeout(context.Background(), LinkTimeout)
		req, err := http.NewRequestWithContext(ctx, method, link, nil)
		if err != nil {
			cancel()
			return err
		}
		req.Header.Set("User-Agent", "gatewitness-verify-report")
		resp, err := client.Do(req)
		if err != nil {
			cancel()
			var ue *url.Error
			if errors.As(err, &ue) {
				err = ue.Err
			}
			return fmt.Errorf("not reached: %w", err)
		}
		resp.Body.Close()
		cancel()
		status = resp.StatusCode
		if slices.Contains([]int{http.StatusOK, http.StatusPartialContent}, status) {
			return nil
		}
	}
	return fmt.Errorf("HTTP status %d", status)
}
