// Package site builds gatewitness's report site: static HTML pages, written
// from the run records of a history of runs (see ReadHistory), that show
//
//   - a matrix in the shape of the Gateway API project's implementations
//     table: per profile, a row per implementation and target with the
//     core and extended results of its latest run and a column per
//     extended feature;
//   - a page per run and per test: the result, failure messages, and what
//     the test observed (retry ledgers as tables, timings as small charts
//     of the observed duration against the configured limit and the window
//     that passes), with links to the GEPs and to docs/semantics;
//   - each test's history: a strip of the last nights, when it first
//     failed and last passed, whether it flips (flaky), and what changed
//     since the night before;
//   - a shields.io endpoint badge per implementation and target.
//
// The pages are html/template templates embedded in the package. They
// need no JavaScript and no server: the site can be opened from disk.
package site

import (
	"cmp"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/gatewitness/gatewitness/internal/project"

	"github.com/gatewitness/gatewitness/contract/observe"
	"github.com/gatewitness/gatewitness/reports"
)

// Defaults and bounds of Options.
const (
	// DefaultNights is how many nights a history strip shows, and how many
	// runs of each series get pages.
	DefaultNights = 14
	// MaxNights bounds Options.Nights.
	MaxNights = 400
	// DefaultTitle is the site's title.
	DefaultTitle = "gatewitness conformance"
	// DefaultSourceURL is where gatewitness's files are browsed, for the
	// links to docs/semantics.
	DefaultSourceURL = project.SourceURL
)

// Options shape a site.
type Options struct {
	// Title heads every page; DefaultTitle when empty.
	Title string
	// Nights is how many nights the history strips show and how many of
	// each series' latest runs get pages (1 to MaxNights); DefaultNights
	// when zero.
	Nights int
	// SourceURL is the address at which gatewitness's repository files are
	// browsed (docs/semantics/... is appended); DefaultSourceURL when
	// empty.
	SourceURL string
	// Calibration, when set, is the calibration matrix the site shows as
	// calibration.html, linked from the index (calibration.go).
	Calibration *Calibration
}

// Complete fills in the defaults of o's empty fields and checks the rest,
// with an error naming the field and the form it takes.
func (o *Options) Complete() error {
	if o.Title == "" {
		o.Title = DefaultTitle
	}
	switch {
	case o.Nights == 0:
		o.Nights = DefaultNights
	case o.Nights < 1 || o.Nights > MaxNights:
		return fmt.Errorf("nights %d: want 1 to %d", o.Nights, MaxNights)
	}
	if o.SourceURL == "" {
		o.SourceURL = DefaultSourceURL
	}
	u, err := url.Parse(o.SourceURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("source-url %q: want an http or https URL, e.g. %s", o.SourceURL, DefaultSourceURL)
	}
	if !strings.HasSuffix(o.SourceURL, "/") {
		o.SourceURL += "/"
	}
	return nil
}

//go:embed templates/*.html templates/style.css
var templateFS embed.FS

var pages = template.Must(template.New("").Funcs(template.FuncMap{
	"night":      night,
	"dur":        func(d time.Duration) string { return d.Round(time.Millisecond).String() },
	"firstLine":  firstLine,
	"join":       strings.Join,
	"wordBreaks": wordBreaks,
	"runURL":     runURL,
	"testURL":    testURL,
	"seriesURL":  func(root, slug string) string { return root + "series/" + slug + ".html" },
	"badgeURL":   func(root, slug string) string { return root + "badges/" + slug + ".json" },
	"chart":      func(o observe.Observation) template.HTML { return timingChart(o.Key, *o.Timing) },
	"observed":   observed,
}).ParseFS(templateFS, "templates/*.html"))

// wordBreaks lets a CamelCase name wrap between its words in a narrow
// table header: a <wbr> before each upper-case letter that follows a
// lower-case one (HTTPRoute<wbr>Request<wbr>Timeout).
func wordBreaks(name string) template.HTML {
	var b strings.Builder
	var prev rune
	for _, r := range name {
		if r >= 'A' && r <= 'Z' && prev >= 'a' && prev <= 'z' {
			b.WriteString("<wbr>")
		}
		b.WriteString(template.HTMLEscapeString(string(r)))
		prev = r
	}
	return template.HTML(b.String())
}

func runURL(root, id string) string { return root + "runs/" + id + "/index.html" }

func testURL(root, id, test string) string {
	return root + "runs/" + id + "/tests/" + testFile(test)
}

// testFile is the file name of a test's page: its ShortName, with any
// character that is not a letter, digit, "-" or "_" replaced.
func testFile(name string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, name) + ".html"
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if line, _, ok := strings.Cut(s, "\n"); ok {
		return line + " …"
	}
	return s
}

// The files and folders Build writes at the top of the output folder; it
// replaces these and leaves everything else (a history folder, .git).
var siteEntries = []string{"index.html", "style.css", ".nojekyll", "runs", "series", "badges", "calibration.html"}

// Build writes the site of history h into the folder out (made if
// needed): index.html, style.css, runs/<ID>/index.html and run.json,
// runs/<ID>/tests/<test>.html, series/<series>.html and
// badges/<series>.json. It writes the whole site aside first and then
// replaces the previous one's files, leaving other files in out alone.
// It returns how many pages it wrote.
func Build(out string, h *History, opts Options) (int, error) {
	if err := opts.Complete(); err != nil {
		return 0, err
	}
	if h == nil || len(h.Entries) == 0 {
		return 0, errors.New("the history holds no run")
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return 0, fmt.Errorf("site folder: %w", err)
	}
	stage, err := os.MkdirTemp(out, ".build-")
	if err != nil {
		return 0, fmt.Errorf("site folder: %w", err)
	}
	defer os.RemoveAll(stage)
	b := &builder{dir: stage, opts: opts, series: groupSeries(h), problems: h.Problems, docs: semanticsDocs(), rendered: map[*Entry]bool{}}
	if err := b.build(); err != nil {
		return 0, err
	}
	for _, name := range siteEntries {
		if err := os.RemoveAll(filepath.Join(out, name)); err != nil {
			return 0, fmt.Errorf("replacing the site's %s: %w", name, err)
		}
		if _, err := os.Stat(filepath.Join(stage, name)); errors.Is(err, fs.ErrNotExist) {
			continue // calibration.html, when the site has no matrix
		}
		if err := os.Rename(filepath.Join(stage, name), filepath.Join(out, name)); err != nil {
			return 0, fmt.Errorf("replacing the site's %s: %w", name, err)
		}
	}
	return b.pages, nil
}

// Replaces reports whether Build(out, ...) would replace path: path is out
// itself or lies in one of the files and folders Build writes there.
func Replaces(out, path string) bool {
	o, err1 := filepath.Abs(out)
	p, err2 := filepath.Abs(path)
	if err1 != nil || err2 != nil {
		return filepath.Clean(out) == filepath.Clean(path)
	}
	rel, err := filepath.Rel(o, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return false
	}
	first, _, _ := strings.Cut(rel, string(filepath.Separator))
	return rel == "." || slices.Contains(siteEntries, first)
}

type builder struct {
	dir      string
	opts     Options
	series   []*series
	problems []Problem // runs of the history that could not be read
	docs     []semanticsDoc
	rendered map[*Entry]bool // runs that get pages
	pages    int
}

func (b *builder) build() error {
	for _, s := range b.series {
		for _, e := range s.Entries[max(0, len(s.Entries)-b.opts.Nights):] {
			b.rendered[e] = true
		}
	}
	css, err := fs.ReadFile(templateFS, "templates/style.css")
	if err != nil {
		return err
	}
	if err := b.write("style.css", func(w io.Writer) error { _, err := w.Write(css); return err }); err != nil {
		return err
	}
	// GitHub Pages serves the files as they are, without Jekyll.
	if err := b.write(".nojekyll", func(io.Writer) error { return nil }); err != nil {
		return err
	}
	if err := b.page("index.html", "index.html", b.indexPage()); err != nil {
		return err
	}
	if c := b.opts.Calibration; c != nil {
		if err := b.page("calibration.html", "calibration.html", b.calibrationPage(c)); err != nil {
			return err
		}
	}
	for _, s := range b.series {
		if err := b.page(filepath.Join("series", s.Slug+".html"), "series.html", b.seriesPage(s)); err != nil {
			return err
		}
		badge, err := badgeOf(s).encode()
		if err != nil {
			return err
		}
		if err := b.write(filepath.Join("badges", s.Slug+".json"), func(w io.Writer) error { _, err := w.Write(badge); return err }); err != nil {
			return err
		}
		for i, e := range s.Entries {
			if !b.rendered[e] {
				continue
			}
			if err := b.runPages(s, i); err != nil {
				return err
			}
		}
	}
	return nil
}

func (b *builder) runPages(s *series, i int) error {
	e := s.Entries[i]
	dir := filepath.Join("runs", e.ID)
	if err := b.write(filepath.Join(dir, reports.RunFileName), func(w io.Writer) error { return reports.WriteRunJSON(w, e.Run) }); err != nil {
		return err
	}
	if err := b.page(filepath.Join(dir, "index.html"), "run.html", b.runPage(s, i)); err != nil {
		return err
	}
	for _, t := range e.Run.Tests {
		if err := b.page(filepath.Join(dir, "tests", testFile(t.ShortName)), "test.html", b.testPage(s, i, t)); err != nil {
			return err
		}
	}
	return nil
}

func (b *builder) write(name string, write func(io.Writer) error) error {
	path := filepath.Join(b.dir, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("writing the site: %w", err)
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("writing the site: %w", err)
	}
	if err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", name, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", name, err)
	}
	return nil
}

func (b *builder) page(name, tmpl string, data any) error {
	b.pages++
	return b.write(name, func(w io.Writer) error { return pages.ExecuteTemplate(w, tmpl, data) })
}

// frame is what every page's head and foot need.
type frame struct {
	Root      string // from the page to the site's root: "" or "../../"
	SiteTitle string
	Title     string
}

// link fills in the addresses of a strip's cells, for a page at root:
// each night's test page (or run page, when test is ""), for the runs that
// have pages.
func (b *builder) link(cells []stripCell, root, test string) []linkedCell {
	out := make([]linkedCell, len(cells))
	for i, c := range cells {
		out[i] = linkedCell{stripCell: c, Night: night(c.Entry.Run.Started)}
		if b.rendered[c.Entry] {
			if test == "" {
				out[i].Href = runURL(root, c.Entry.ID)
			} else if c.Result != "" {
				out[i].Href = testURL(root, c.Entry.ID, test)
			}
		}
	}
	return out
}

// linkedCell is a stripCell with its night and address.
type linkedCell struct {
	stripCell
	Night string
	Href  string
}

// --- the index ---

type indexPage struct {
	frame
	Calibrated bool // the site has calibration.html
	AsOf       string
	Nights     int
	Series     []seriesSummary
	Profiles   []profileTable
	// Problems are the history's runs that could not be read.
	Problems []Problem
}

type seriesSummary struct {
	*series
	Latest                  *Entry
	Passed, Failed, Skipped int
	Strip                   []linkedCell
	Changes                 []change
	Recent                  []recentRun
	HasPrevious             bool
	// ClaimsAdded and ClaimsDropped are the features the latest run
	// claims and the one before did not, and the other way round.
	ClaimsAdded, ClaimsDropped []string
}

type recentRun struct {
	*Entry
	Passed, Failed, Skipped int
	Href                    string
}

func (b *builder) indexPage() indexPage {
	p := indexPage{frame: frame{SiteTitle: b.opts.Title, Title: b.opts.Title}, Nights: b.opts.Nights, Profiles: matrix(b.series),
		Problems: b.problems, Calibrated: b.opts.Calibration != nil}
	var newest time.Time
	for _, s := range b.series {
		i := len(s.Entries) - 1
		e := s.Entries[i]
		if e.Run.Started.After(newest) {
			newest = e.Run.Started
		}
		sum := seriesSummary{series: s, Latest: e, Strip: b.link(s.runStrip(i, b.opts.Nights), "", ""), Changes: s.changes(i), HasPrevious: i > 0}
		sum.Passed, sum.Failed, sum.Skipped = e.Run.Counts()
		sum.ClaimsAdded, sum.ClaimsDropped = s.claimChanges(i)
		for j := i; j >= max(0, i-b.opts.Nights+1); j-- {
			r := recentRun{Entry: s.Entries[j], Href: runURL("", s.Entries[j].ID)}
			r.Passed, r.Failed, r.Skipped = r.Run.Counts()
			sum.Recent = append(sum.Recent, r)
		}
		p.Series = append(p.Series, sum)
	}
	p.AsOf = night(newest)
	return p
}

// --- a run ---

type runPage struct {
	frame
	E                       *Entry
	S                       *series
	Prev                    *Entry
	Passed, Failed, Skipped int
	Target                  string
	Profiles                []profileResult
	Changes                 []change
	Ran, NotRun             []testRow // Ran: failures first
	Failures                []testRow // the failed tests, which the page leads with
	Nights                  int
	// Consistency is the run's time to consistency, per kind of step.
	Consistency []reports.ConsistencyStats
}

type testRow struct {
	reports.TestResult
	Strip []linkedCell
	H     testHistory
}

func (b *builder) runPage(s *series, i int) runPage {
	e := s.Entries[i]
	const root = "../../"
	p := runPage{
		frame:  frame{Root: root, SiteTitle: b.opts.Title, Title: fmt.Sprintf("%s/%s on %s, %s", e.Run.Implementation.Organization, e.Run.Implementation.Project, s.Label, night(e.Run.Started))},
		E:      e,
		S:      s,
		Target: e.Run.Target.String(),

		Consistency: reports.TimeToConsistency(e.Run),
		Profiles:    profilesOf(e.Run),
		Changes:     s.changes(i),
		Nights:      b.opts.Nights,
	}
	if i > 0 {
		p.Prev = s.Entries[i-1]
	}
	p.Passed, p.Failed, p.Skipped = e.Run.Counts()
	for _, t := range e.Run.Tests {
		h := s.history(t.ShortName, i, b.opts.Nights)
		row := testRow{TestResult: t, H: h, Strip: b.link(h.Strip, root, t.ShortName)}
		if t.Result == reports.Skip {
			p.NotRun = append(p.NotRun, row)
		} else {
			p.Ran = append(p.Ran, row)
		}
	}
	slices.SortStableFunc(p.Ran, func(a, b testRow) int { return cmp.Compare(rank(a.Result), rank(b.Result)) })
	for _, r := range p.Ran {
		if r.Result == reports.Fail {
			p.Failures = append(p.Failures, r)
		}
	}
	return p
}

// --- a test in a run ---

type testPage struct {
	frame
	E        *Entry
	S        *series
	T        reports.TestResult
	H        testHistory
	Strip    []linkedCell
	Features []featureLink
	Docs     []docLink
	Groups   []obsGroup
	Tol      time.Duration
}

// obsGroup is the observations of one subtest, in the order recorded.
type obsGroup struct {
	Subtest string
	Items   []observe.Observation
}

func (b *builder) testPage(s *series, i int, t reports.TestResult) testPage {
	e := s.Entries[i]
	const root = "../../../"
	h := s.history(t.ShortName, i, b.opts.Nights)
	p := testPage{
		frame:    frame{Root: root, SiteTitle: b.opts.Title, Title: fmt.Sprintf("%s: %s", t.ShortName, t.Result)},
		E:        e,
		S:        s,
		T:        t,
		H:        h,
		Strip:    b.link(h.Strip, root, t.ShortName),
		Features: featureLinks(t),
		Docs:     docsFor(b.docs, t, b.opts.SourceURL),
		Tol:      e.Run.TimingTolerance,
	}
	// Parallel subtests record interleaved: group by subtest, in the
	// order each first recorded.
	group := map[string]int{}
	for _, o := range t.Observations {
		i, ok := group[o.Subtest]
		if !ok {
			i = len(p.Groups)
			group[o.Subtest] = i
			p.Groups = append(p.Groups, obsGroup{Subtest: o.Subtest})
		}
		p.Groups[i].Items = append(p.Groups[i].Items, o)
	}
	return p
}

// --- a series' history ---

type seriesPage struct {
	frame
	S       *series
	Latest  *Entry
	Nights  []linkedCell
	Rows    []seriesRow
	Skipped int // tests skipped (or absent) on every night shown
}

type seriesRow struct {
	Test   string
	Result reports.Result // in the latest run
	H      testHistory
	Strip  []linkedCell
}

func (b *builder) seriesPage(s *series) seriesPage {
	i := len(s.Entries) - 1
	const root = "../"
	p := seriesPage{
		frame:  frame{Root: root, SiteTitle: b.opts.Title, Title: fmt.Sprintf("History: %s/%s on %s", s.latest().Run.Implementation.Organization, s.latest().Run.Implementation.Project, s.Label)},
		S:      s,
		Latest: s.latest(),
		Nights: b.link(s.runStrip(i, b.opts.Nights), root, ""),
	}
	names := make([]string, 0, len(s.results))
	for name := range s.results {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		h := s.history(name, i, b.opts.Nights)
		ran := slices.ContainsFunc(h.Strip, func(c stripCell) bool { return c.Result == reports.Pass || c.Result == reports.Fail })
		if !ran {
			p.Skipped++
			continue
		}
		p.Rows = append(p.Rows, seriesRow{Test: name, Result: s.results[name][i], H: h, Strip: b.link(h.Strip, root, name)})
	}
	// Failing first, then flaky, then the rest; by name within each.
	slices.SortStableFunc(p.Rows, func(a, b seriesRow) int {
		key := func(r seriesRow) int {
			switch {
			case r.Result == reports.Fail:
				return 0
			case r.H.Flaky:
				return 1
			}
			return 2
		}
		return cmp.Compare(key(a), key(b))
	})
	return p
}
