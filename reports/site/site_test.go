package site

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	confv1 "sigs.k8s.io/gateway-api/conformance/apis/v1"
	gwfeatures "sigs.k8s.io/gateway-api/pkg/features"

	"github.com/gatewitness/gatewitness/contract/observe"
	"github.com/gatewitness/gatewitness/reports"
)

var night0 = time.Date(2026, 11, 1, 2, 0, 0, 0, time.UTC)

// nightRun is a run of the in-process reference gateway on night n with
// the given results ("" leaves the test out of the run).
func nightRun(n int, results map[string]reports.Result) *reports.Run {
	r := &reports.Run{
		Implementation: confv1.Implementation{Organization: "gatewitness", Project: "reference-gateway", Version: "v0.1.0"},
		Mode:           "default",
		Started:        night0.Add(time.Duration(n) * 24 * time.Hour),
		Target:         reports.Target{InProcess: true},
	}
	names := make([]string, 0, len(results))
	for name := range results {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if results[name] != "" {
			r.Tests = append(r.Tests, reports.TestResult{ShortName: name, Source: reports.Gatewitness, Result: results[name]})
		}
	}
	return r
}

const (
	P = reports.Pass
	F = reports.Fail
	S = reports.Skip
)

// TestHistory checks strips, first failed, last passed, flips and flakes,
// and the changes between nights, from a series of five nights.
func TestHistory(t *testing.T) {
	nights := [][]reports.Result{
		// Streak: fails from night 1; a skip on night 2 does not end it.
		// Flaky: flips on every night. Steady: always passes. New: absent
		// until night 3. Gone: absent on the last night.
		// Streak, Flaky, Steady, New, Gone
		{P, P, P, "", P},
		{F, F, P, "", P},
		{S, P, P, "", P},
		{F, F, P, P, P},
		{F, P, P, F, ""},
	}
	names := []string{"Streak", "Flaky", "Steady", "New", "Gone"}
	var runs []*reports.Run
	for n, res := range nights {
		m := map[string]reports.Result{}
		for i, name := range names {
			m[name] = res[i]
		}
		runs = append(runs, nightRun(n, m))
	}
	h, err := NewHistory(runs...)
	if err != nil {
		t.Fatal(err)
	}
	all := groupSeries(h)
	if len(all) != 1 || len(all[0].Entries) != 5 {
		t.Fatalf("got %d series, want 1 of 5 runs", len(all))
	}
	s := all[0]
	if s.Label != "in-process" || s.Slug != "gatewitness-reference-gateway-default-in-process" {
		t.Errorf("series %q labelled %q", s.Slug, s.Label)
	}
	at := func(e *Entry) int {
		if e == nil {
			return -1
		}
		return s.index(e)
	}
	states := func(h testHistory) string {
		var b strings.Builder
		for _, c := range h.Strip {
			b.WriteString(c.State()[:1])
		}
		return b.String()
	}
	tests := []struct {
		name                    string
		upTo, nights            int
		strip                   string
		firstFailed, lastPassed int
		flips                   int
		flaky                   bool
	}{
		{"Streak", 4, 14, "pfsff", 1, 0, 1, false},
		{"Streak", 4, 3, "sff", 1, 0, 0, false}, // first failed lies before the strip
		{"Streak", 0, 14, "p", -1, 0, 0, false},
		{"Flaky", 4, 14, "pfpfp", -1, 4, 4, true},
		{"Flaky", 3, 14, "pfpf", 3, 2, 3, true},
		{"Flaky", 4, 2, "fp", -1, 4, 1, false}, // one flip in the nights shown
		{"Steady", 4, 14, "ppppp", -1, 4, 0, false},
		{"New", 4, 14, "nnnpf", 4, 3, 1, false},
		{"Gone", 4, 14, "ppppn", -1, 3, 0, false},
	}
	for _, tt := range tests {
		got := s.history(tt.name, tt.upTo, tt.nights)
		if states(got) != tt.strip || at(got.FirstFailed) != tt.firstFailed || at(got.LastPassed) != tt.lastPassed ||
			got.Flips != tt.flips || got.Flaky != tt.flaky {
			t.Errorf("%s up to night %d, %d nights: strip %s, first failed %d, last passed %d, %d flips, flaky %t; want %s, %d, %d, %d, %t",
				tt.name, tt.upTo, tt.nights, states(got), at(got.FirstFailed), at(got.LastPassed), got.Flips, got.Flaky,
				tt.strip, tt.firstFailed, tt.lastPassed, tt.flips, tt.flaky)
		}
		if !got.Strip[len(got.Strip)-1].Current {
			t.Errorf("%s: the strip's last night is not marked as the current one", tt.name)
		}
	}

	var desc []string
	for _, c := range s.changes(4) {
		desc = append(desc, c.Test+":"+string(c.From)+">"+string(c.To)+"="+c.Kind())
	}
	if want := []string{"New:pass>fail=broken", "Flaky:fail>pass=fixed", "Gone:pass>=gone"}; !slices.Equal(desc, want) {
		t.Errorf("changes on the last night = %q, want %q", desc, want)
	}
	if got := s.changes(3); len(got) != 3 || got[0].Test != "Flaky" || got[0].Kind() != "broken" || got[2].Test != "New" || got[2].Kind() != "new" {
		t.Errorf("changes on night 3 = %+v, want Flaky broken, Streak, New new", got)
	}
	if got := s.changes(0); got != nil {
		t.Errorf("changes on the first night = %+v, want none", got)
	}
	var strip []string
	for _, c := range s.runStrip(4, 14) {
		strip = append(strip, c.State())
	}
	if want := []string{"pass", "fail", "pass", "fail", "fail"}; !slices.Equal(strip, want) {
		t.Errorf("run strip = %q, want %q: a night fails when one of its tests failed", strip, want)
	}
}

// TestMatrix checks the feature cells of a profile's row: a claimed
// feature passes when its tests in the profile pass, fails when one of
// them failed, is untested when none ran, and unclaimed features show so.
// A failure counted in another profile does not touch the row.
func TestMatrix(t *testing.T) {
	run := nightRun(0, nil)
	// Claimed by the run though the report does not list it.
	run.Claims.Features = []gwfeatures.FeatureName{"HTTPRouteTimeout504"}
	run.GatewitnessProfiles = []confv1.ProfileReport{{
		Name: "GATEWITNESS-HTTP-RESILIENCE",
		Core: confv1.Status{Result: confv1.Success},
		Extended: &confv1.ExtendedStatus{
			Status:              confv1.Status{Result: confv1.Failure},
			SupportedFeatures:   []string{"HTTPRouteRetryCodes", "HTTPRouteRetryBackoff", "HTTPRouteRequestTimeout"},
			UnsupportedFeatures: []string{"HTTPRouteRetryLastStatus"},
		},
	}}
	test := func(name string, r reports.Result, profile string, fs ...gwfeatures.FeatureName) reports.TestResult {
		return reports.TestResult{ShortName: name, Source: reports.Gatewitness, Result: r, Profiles: []string{profile}, Features: fs}
	}
	run.Tests = []reports.TestResult{
		test("Codes", P, "GATEWITNESS-HTTP-RESILIENCE", "HTTPRoute", "HTTPRouteRetry", "HTTPRouteRetryCodes"),
		test("Timeouts", F, "GATEWITNESS-HTTP-RESILIENCE", "HTTPRoute", "HTTPRouteRequestTimeout"),
		test("TimeoutsElsewhere", F, "OTHER", "HTTPRouteRetryCodes"),
	}
	h, err := NewHistory(run)
	if err != nil {
		t.Fatal(err)
	}
	tables := matrix(groupSeries(h))
	if len(tables) != 1 || tables[0].Name != "GATEWITNESS-HTTP-RESILIENCE" || len(tables[0].Rows) != 1 {
		t.Fatalf("matrix = %+v, want one table with one row", tables)
	}
	cells := map[string]string{}
	for _, c := range tables[0].Rows[0].Cells {
		cells[c.Feature] = c.State
	}
	want := map[string]string{
		"HTTPRouteRetryCodes":      "pass",
		"HTTPRouteRequestTimeout":  "fail",
		"HTTPRouteRetryBackoff":    "untested",
		"HTTPRouteRetryLastStatus": "unclaimed",
	}
	for f, st := range want {
		if cells[f] != st {
			t.Errorf("cell %s = %q, want %q", f, cells[f], st)
		}
	}
	// The profile's registered extended features are columns even when
	// the report does not name them.
	if st, ok := cells["HTTPRouteTimeout504"]; !ok || st != "untested" {
		t.Errorf("HTTPRouteTimeout504 (claimed by the run, not named by the report) is %q in columns %q; want a column, untested", st, tables[0].Features)
	}
}

// svgChart is what TestTimingChart reads back from a chart.
type svgChart struct {
	Class string `xml:"class,attr"`
	Rects []struct {
		X     float64 `xml:"x,attr"`
		Width float64 `xml:"width,attr"`
	} `xml:"rect"`
	Circles []struct {
		CX float64 `xml:"cx,attr"`
	} `xml:"circle"`
	Lines []struct {
		Class string  `xml:"class,attr"`
		X1    float64 `xml:"x1,attr"`
	} `xml:"line"`
	Texts []string `xml:"text"`
}

func TestTimingChart(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name  string
		t     observe.Timing
		class string
		where int // -1 before the window, 0 in it, 1 after it
	}{
		{"in", observe.Within(2100*ms, 2*time.Second, 2*time.Second, 2500*ms), "timing in", 0},
		{"late by 1ms of a 1s limit", observe.Within(1002*ms, time.Second, time.Second, 1001*ms), "timing out", 1},
		{"early", observe.Within(900*ms, time.Second, time.Second, 1500*ms), "timing out", -1},
		{"window from zero", observe.Within(1000*ms, time.Second, 0, 1001*ms), "timing in", 0},
		{"all zero", observe.Within(0, 0, 0, 0), "timing in", 0},
	}
	for _, tt := range tests {
		var c svgChart
		if err := xml.Unmarshal([]byte(timingChart("elapsed", tt.t)), &c); err != nil {
			t.Fatalf("%s: the chart is not XML: %v", tt.name, err)
		}
		if c.Class != tt.class || len(c.Rects) != 1 || len(c.Circles) != 1 {
			t.Fatalf("%s: chart %+v, want class %q, one window and one dot", tt.name, c, tt.class)
		}
		lo, hi, dot := c.Rects[0].X, c.Rects[0].X+c.Rects[0].Width, c.Circles[0].CX
		where := 0
		switch {
		case dot < lo:
			where = -1
		case dot > hi:
			where = 1
		}
		if where != tt.where {
			t.Errorf("%s: the dot is at %.1f, the window [%.1f, %.1f]; want it %d of the window", tt.name, dot, lo, hi, tt.where)
		}
		for _, v := range []float64{lo, hi, dot} {
			if v < chartLeft || v > chartWidth-chartRight {
				t.Errorf("%s: %.1f lies off the axis [%d, %d]", tt.name, v, chartLeft, chartWidth-chartRight)
			}
		}
		var configured float64
		for _, l := range c.Lines {
			if l.Class == "configured" {
				configured = l.X1
			}
		}
		if tt.t.Configured == tt.t.Earliest && configured != lo {
			t.Errorf("%s: the configured line is at %.1f, want it at the window's start %.1f", tt.name, configured, lo)
		}
	}
	// A late observation a millisecond out is drawn visibly apart from the
	// window: at least a tenth of the axis.
	var c svgChart
	xml.Unmarshal([]byte(timingChart("elapsed", tests[1].t)), &c)
	if gap := c.Circles[0].CX - (c.Rects[0].X + c.Rects[0].Width); gap < (chartWidth-chartLeft-chartRight)/10 {
		t.Errorf("a dot 1ms after a 1ms window is %.1f units from it; want it visibly apart", gap)
	}
}

func TestBadge(t *testing.T) {
	for _, tt := range []struct {
		results       map[string]reports.Result
		message, colr string
	}{
		{map[string]reports.Result{"A": P, "B": P, "C": S}, "2 passed", "brightgreen"},
		{map[string]reports.Result{"A": P, "B": F}, "1 failed, 1 passed", "red"},
		{map[string]reports.Result{"A": S}, "nothing passed (1 skipped)", "lightgrey"},
	} {
		h, _ := NewHistory(nightRun(0, tt.results))
		b := badgeOf(groupSeries(h)[0])
		data, err := b.encode()
		if err != nil {
			t.Fatal(err)
		}
		var got map[string]any
		if err := json.Unmarshal(data, &got); err != nil {
			t.Fatal(err)
		}
		if got["schemaVersion"] != 1.0 || got["label"] != "gatewitness in-process" || got["message"] != tt.message || got["color"] != tt.colr {
			t.Errorf("badge of %v = %s; want schemaVersion 1, message %q, color %q", tt.results, data, tt.message, tt.colr)
		}
	}
}

func writeRecord(t *testing.T, path string, run *reports.Run) {
	t.Helper()
	var b bytes.Buffer
	if err := reports.WriteRunJSON(&b, run); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestHistoryFolder adds, reads and prunes runs in a history folder.
func TestHistoryFolder(t *testing.T) {
	dir := t.TempDir()
	hist := filepath.Join(dir, "history")
	var paths []string
	for n := range 4 {
		p := filepath.Join(dir, "in", strconv.Itoa(n), "run.json")
		writeRecord(t, p, nightRun(n, map[string]reports.Result{"A": P}))
		paths = append(paths, p)
	}
	cluster := nightRun(1, map[string]reports.Result{"A": F})
	cluster.Target = reports.Target{Server: "https://127.0.0.1:6443", Context: "localcp", GatewayClass: "gatewitness"}
	cp := filepath.Join(dir, "in", "cluster.json")
	writeRecord(t, cp, cluster)
	paths = append(paths, cp)

	for _, p := range paths {
		if _, err := AddRun(hist, p); err != nil {
			t.Fatal(err)
		}
	}
	// Adding the same run again changes nothing.
	id, err := AddRun(hist, paths[0])
	if err != nil || id != "20261101T020000Z-gatewitness-reference-gateway-default-in-process" {
		t.Errorf("adding a run again: %q, %v; want its ID and no error", id, err)
	}
	// A different record under the same ID is refused.
	other := nightRun(0, map[string]reports.Result{"A": F})
	op := filepath.Join(dir, "other.json")
	writeRecord(t, op, other)
	if _, err := AddRun(hist, op); err == nil || !strings.Contains(err.Error(), "already holds a different run") {
		t.Errorf("adding a different run under an existing ID: %v, want a refusal", err)
	}
	// Folders that are not runs are ignored.
	os.MkdirAll(filepath.Join(hist, "notes"), 0o755)

	h, err := ReadHistory(hist)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range h.Entries {
		ids = append(ids, e.ID)
	}
	want := []string{
		"20261101T020000Z-gatewitness-reference-gateway-default-in-process",
		"20261102T020000Z-gatewitness-reference-gateway-default-in-process",
		"20261102T020000Z-gatewitness-reference-gateway-default-localcp-gatewitness",
		"20261103T020000Z-gatewitness-reference-gateway-default-in-process",
		"20261104T020000Z-gatewitness-reference-gateway-default-in-process",
	}
	if !slices.Equal(ids, want) {
		t.Errorf("history = %q, want %q", ids, want)
	}

	removed, err := Prune(hist, 2)
	if err != nil {
		t.Fatal(err)
	}
	if want := want[:2]; !slices.Equal(removed, want) {
		t.Errorf("Prune(2) removed %q, want %q: the series' oldest, and no run of the one-run series", removed, want)
	}
	if _, err := Prune(hist, 0); err == nil {
		t.Error("Prune(0) did not refuse")
	}

	// A broken record, and a folder without one, are left out and named
	// as the history's problems; the rest of the history reads.
	bad := filepath.Join(hist, "20261105T020000Z-gatewitness-reference-gateway-default-in-process", "run.json")
	os.MkdirAll(filepath.Dir(bad), 0o755)
	os.WriteFile(bad, []byte(`{"schema": "someone-else/v9"}`), 0o644)
	empty := "20261106T020000Z-gatewitness-reference-gateway-default-in-process"
	os.MkdirAll(filepath.Join(hist, empty), 0o755)
	h, err = ReadHistory(hist)
	if err != nil {
		t.Fatalf("reading a history with a broken record: %v, want the problem listed, not an error", err)
	}
	if len(h.Entries) != 3 || len(h.Problems) != 2 {
		t.Fatalf("history with two bad folders: %d runs and problems %v; want 3 runs and 2 problems", len(h.Entries), h.Problems)
	}
	if p := h.Problems[0]; !strings.Contains(p.Err, bad) || !strings.Contains(p.Err, "schema") {
		t.Errorf("the broken record's problem %q does not name %s and its schema", p, bad)
	}
	if p := h.Problems[1]; p.ID != empty || !strings.Contains(p.Err, "no such file") {
		t.Errorf("the empty folder's problem is %q, want %s without its run.json", p, empty)
	}
	// Adding the run of the empty folder's ID fills it.
	late := nightRun(5, map[string]reports.Result{"A": P})
	lp := filepath.Join(dir, "late.json")
	writeRecord(t, lp, late)
	if id, err := AddRun(hist, lp); err != nil || id != empty {
		t.Errorf("adding the run of an empty folder: %q, %v; want %s", id, err, empty)
	}
}

// TestAddRunLeavesNoFolderOnFailure: a run that cannot be written (here
// a history whose folder is read-only, as a full disk refuses a write)
// leaves no folder of its ID behind.
func TestAddRunLeavesNoFolderOnFailure(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root writes into a read-only folder; cmd/gatewitness's publish test fills a tmpfs instead")
	}
	dir := t.TempDir()
	hist := filepath.Join(dir, "history")
	os.MkdirAll(hist, 0o555)
	p := filepath.Join(dir, "run.json")
	writeRecord(t, p, nightRun(0, map[string]reports.Result{"A": P}))
	if _, err := AddRun(hist, p); err == nil {
		t.Fatal("adding a run to a read-only history did not fail")
	}
	if ents, _ := os.ReadDir(hist); len(ents) > 0 {
		t.Errorf("a failed add left %v in the history", ents)
	}
}

// TestLockHistoryExcludes: a second lock of a history waits for the first
// to be released.
func TestLockHistoryExcludes(t *testing.T) {
	hist := t.TempDir()
	unlock, err := LockHistory(hist)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan struct{})
	go func() {
		unlock2, err := LockHistory(hist)
		if err != nil {
			t.Error(err)
		} else {
			unlock2()
		}
		close(got)
	}()
	select {
	case <-got:
		t.Fatal("a second lock of the history was taken while the first was held")
	case <-time.After(200 * time.Millisecond):
	}
	unlock()
	select {
	case <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("the second lock was not taken within 10s of the first's release")
	}
}

// TestBuildKeepsOtherFiles builds twice into a folder that also holds a
// history and a CNAME: the second build replaces the first's pages (a run
// gone from the history loses its pages) and leaves the rest alone.
func TestBuildKeepsOtherFiles(t *testing.T) {
	out := t.TempDir()
	os.WriteFile(filepath.Join(out, "CNAME"), []byte("example.test\n"), 0o644)
	writeRecord(t, filepath.Join(out, "history", "x", "run.json"), nightRun(0, map[string]reports.Result{"A": P}))

	first, _ := NewHistory(nightRun(0, map[string]reports.Result{"A": P}), nightRun(1, map[string]reports.Result{"A": F}))
	if _, err := Build(out, first, Options{}); err != nil {
		t.Fatal(err)
	}
	oldRun := filepath.Join(out, "runs", first.Entries[0].ID, "index.html")
	if _, err := os.Stat(oldRun); err != nil {
		t.Fatalf("the first build wrote no page for its first run: %v", err)
	}
	second, _ := NewHistory(nightRun(1, map[string]reports.Result{"A": F}), nightRun(2, map[string]reports.Result{"A": P}))
	n, err := Build(out, second, Options{Nights: 1})
	if err != nil {
		t.Fatal(err)
	}
	// index, a series page, one run page (one night) and its test page.
	if n != 4 {
		t.Errorf("the second build wrote %d pages, want 4", n)
	}
	for _, keep := range []string{"CNAME", "history/x/run.json"} {
		if _, err := os.Stat(filepath.Join(out, keep)); err != nil {
			t.Errorf("%s is gone after a build: %v", keep, err)
		}
	}
	if _, err := os.Stat(oldRun); !os.IsNotExist(err) {
		t.Errorf("the page of a run no longer in the history is still there (%v)", err)
	}
	left, _ := filepath.Glob(filepath.Join(out, ".build-*"))
	if len(left) != 0 {
		t.Errorf("the build left %q behind", left)
	}
	badge, err := os.ReadFile(filepath.Join(out, "badges", "gatewitness-reference-gateway-default-in-process.json"))
	if err != nil || !bytes.Contains(badge, []byte(`"message": "1 passed"`)) {
		t.Errorf("badge: %s, %v; want the latest night's 1 passed", badge, err)
	}
	for _, tt := range []struct {
		out, path string
		want      bool
	}{
		{out, filepath.Join(out, "history"), false},
		{out, filepath.Join(out, "runs"), true},
		{out, filepath.Join(out, "badges", "x"), true},
		{out, out, true},
		{out, filepath.Dir(out), false},
	} {
		if got := Replaces(tt.out, tt.path); got != tt.want {
			t.Errorf("Replaces(%s, %s) = %t, want %t", tt.out, tt.path, got, tt.want)
		}
	}
}

func TestOptions(t *testing.T) {
	h, _ := NewHistory(nightRun(0, map[string]reports.Result{"A": P}))
	for _, o := range []Options{{Nights: -1}, {Nights: MaxNights + 1}, {SourceURL: "ftp://x/"}, {SourceURL: "docs/"}} {
		if _, err := Build(t.TempDir(), h, o); err == nil {
			t.Errorf("Build with %+v: no error", o)
		}
	}
	if _, err := Build(t.TempDir(), &History{}, Options{}); err == nil || !strings.Contains(err.Error(), "no run") {
		t.Errorf("Build of an empty history: %v, want an error saying it holds no run", err)
	}
}

// TestDocsFor links a test to the docs/semantics pages that name it or its
// non-core features, and not to pages that only share a GEP or a core
// feature with it.
func TestDocsFor(t *testing.T) {
	pages := fstest.MapFS{
		"semantics/retries.md":  {Data: []byte("# Retries and timeouts\n\nHTTPRouteTimeoutsWithoutRetry holds HTTPRouteRequestTimeout to its window.\n")},
		"semantics/backend.md":  {Data: []byte("# Backend timeouts\n\nHTTPRouteBackendTimeout, per attempt.\n")},
		"semantics/grpc.md":     {Data: []byte("# gRPC\n\nGRPCRouteStrictEnforcement (GEP-1742), on a GRPCRoute.\n")},
		"semantics/routes.md":   {Data: []byte("# Routes\n\nEvery Gateway and HTTPRoute; GEP-1742.\n")},
		"semantics/conns.md":    {Data: []byte("# Connections\n\nHAProxy's timeout tunnel, for TLSRoute passthrough; TLSRouteSimpleSameNamespace fails in-process.\n")},
		"semantics/untitled.md": {Data: []byte("HTTPRouteTimeoutsWithoutRetryAndMore is another word.\n")},
		"other/HTTPRoute.md":    {Data: []byte("# Not a semantics page\n\nHTTPRouteTimeoutsWithoutRetry\n")},
	}
	all := readSemanticsDocs(pages)
	if len(all) != 6 {
		t.Fatalf("read %d pages, want the 6 under semantics/", len(all))
	}
	tests := []struct {
		t    reports.TestResult
		want []string
	}{
		// Named by retries.md; its extended feature HTTPRouteBackendTimeout
		// is named by backend.md; routes.md names only core features.
		{reports.TestResult{ShortName: "HTTPRouteTimeoutsWithoutRetry", Features: []gwfeatures.FeatureName{"Gateway", "HTTPRoute", "HTTPRouteRequestTimeout", "HTTPRouteBackendTimeout"}},
			[]string{"Backend timeouts", "Retries and timeouts"}},
		{reports.TestResult{ShortName: "GRPCRouteStrictEnforcement", Features: []gwfeatures.FeatureName{"Gateway", "GRPCRoute", "GRPCRouteStrictEnforcement"}},
			[]string{"gRPC"}},
		{reports.TestResult{ShortName: "HTTPRouteSimpleSameNamespace", Features: []gwfeatures.FeatureName{"Gateway", "HTTPRoute"}}, nil},
		// A page that names a kind of resource does not explain every test
		// of it: TLSRoute's tests get no link from a page naming TLSRoute.
		{reports.TestResult{ShortName: "TLSRouteSimpleSameNamespace", Source: reports.Upstream, Features: []gwfeatures.FeatureName{"Gateway", "TLSRoute"}}, nil},
	}
	for _, tt := range tests {
		var got []string
		for _, d := range docsFor(all, tt.t, "https://example.test/blob/main/") {
			if !strings.HasPrefix(d.URL, "https://example.test/blob/main/docs/semantics/") || !strings.HasSuffix(d.URL, ".md") {
				t.Errorf("%s: link %+v", tt.t.ShortName, d)
			}
			got = append(got, d.Title)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("docs for %s = %q, want %q", tt.t.ShortName, got, tt.want)
		}
	}
}

// TestDocsForEmbeddedPages links tests to the repository's own
// docs/semantics pages: at least the page that decides each one's
// behaviour (other pages may name them too).
func TestDocsForEmbeddedPages(t *testing.T) {
	all := semanticsDocs()
	if len(all) < 4 {
		t.Fatalf("found %d docs/semantics pages, want the 4 or more embedded", len(all))
	}
	for test, page := range map[string]string{
		"HTTPRouteTimeoutsWithoutRetry": "http-retries-and-timeouts.md",
		"GRPCRouteStrictEnforcement":    "grpcroute-timeouts.md",
	} {
		var got []string
		for _, d := range docsFor(all, reports.TestResult{ShortName: test}, DefaultSourceURL) {
			got = append(got, path.Base(d.URL))
		}
		if !slices.Contains(got, page) {
			t.Errorf("docs for %s = %q, want %s among them", test, got, page)
		}
	}
}

// readFixtures reads the recorded runs of testdata: two nights of the
// in-process reference gateway (the second with a failure) and a night on
// the local control plane.
func readFixtures(t testing.TB) *History {
	t.Helper()
	var runs []*reports.Run
	for _, name := range []string{"night1-in-process.json", "night2-in-process.json", "night2-localcp.json"} {
		f, err := os.Open(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		run, err := reports.ReadRunJSON(f)
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		runs = append(runs, run)
	}
	h, err := NewHistory(runs...)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestFixturePages checks the pages of the recorded runs that a browser
// cannot check without reading HTML: the failed test's page links its
// GEP and semantics page and holds a chart and a ledger table for each
// kind of observation recorded.
func TestFixturePages(t *testing.T) {
	h := readFixtures(t)
	out := t.TempDir()
	if _, err := Build(out, h, Options{}); err != nil {
		t.Fatal(err)
	}
	failed := h.Entries[1]
	page, err := os.ReadFile(filepath.Join(out, "runs", failed.ID, "tests", "HTTPRouteTimeoutsWithoutRetry.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`href="https://gateway-api.sigs.k8s.io/geps/gep-1742/"`,
		`href="https://github.com/gatewitness/gatewitness/blob/main/docs/semantics/http-retries-and-timeouts.md"`,
		`<svg class="timing out"`,
		`<table class="ledger">`,
		`want it to end 1s after the request was sent (tolerance 1ms)`,
	} {
		if !bytes.Contains(page, []byte(want)) {
			t.Errorf("the failed test's page lacks %s", want)
		}
	}
	// The run record is published beside the run's page, as recorded.
	rec, err := os.ReadFile(filepath.Join(out, "runs", failed.ID, "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	again, err := reports.ReadRunJSON(bytes.NewReader(rec))
	if err != nil || len(again.Tests) != len(failed.Run.Tests) {
		t.Errorf("the published run.json does not read back as the run: %v", err)
	}
}

// TestObservationGroups groups interleaved observations of parallel
// subtests by subtest, in the order each first recorded.
func TestObservationGroups(t *testing.T) {
	run := nightRun(0, map[string]reports.Result{"A": P})
	run.Tests[0].Observations = []observe.Observation{
		{Subtest: "b", Key: "k1", Value: "1"}, {Subtest: "a", Key: "k1", Value: "2"},
		{Subtest: "b", Key: "k2", Value: "3"}, {Key: "top", Value: "4"}, {Subtest: "a", Key: "k2", Value: "5"},
	}
	h, _ := NewHistory(run)
	b := &builder{opts: Options{Nights: 1}, rendered: map[*Entry]bool{}}
	s := groupSeries(h)[0]
	p := b.testPage(s, 0, run.Tests[0])
	var got []string
	for _, g := range p.Groups {
		var vals []string
		for _, o := range g.Items {
			vals = append(vals, o.Value)
		}
		got = append(got, g.Subtest+":"+strings.Join(vals, ","))
	}
	if want := []string{"b:1,3", "a:2,5", ":4"}; !slices.Equal(got, want) {
		t.Errorf("groups = %q, want %q", got, want)
	}
}

// TestObservedText writes an observation near a window's edge precisely
// enough to show which side of it the observation fell.
func TestObservedText(t *testing.T) {
	us := time.Microsecond
	for _, tt := range []struct {
		observed time.Duration
		want     string
	}{
		{1001200 * us, "1.0012s"},         // out, though 1.001s is in
		{1000600 * us, "1.001s"},          // in, and 1.001s is in too
		{999999 * us, "999.999ms"},        // out, though 1s is in
		{2100 * time.Millisecond, "2.1s"}, // far out
	} {
		got := observed(observe.Within(tt.observed, time.Second, time.Second, 1001*time.Millisecond))
		if got != tt.want {
			t.Errorf("observed(%v) = %q, want %q", tt.observed, got, tt.want)
		}
	}
}

// TestPagesSayNotClaimed: the index's matrix and the run's page show a
// profile the run claimed nothing of and ran nothing of as not claimed,
// not as upstream's success of no tests.
func TestPagesSayNotClaimed(t *testing.T) {
	run := nightRun(0, map[string]reports.Result{"A": P})
	run.GatewitnessProfiles = []confv1.ProfileReport{{Name: "GATEWITNESS-MESH-PROBES", Summary: "Core tests succeeded.", Core: confv1.Status{Result: confv1.Success}}}
	h := history(t, run)
	out, _ := buildIndex(t, h)
	for _, page := range []string{"index.html", filepath.Join("runs", h.Entries[0].ID, "index.html")} {
		b := readPage(t, out, page)
		if !strings.Contains(b, ">not claimed</td>") || strings.Contains(b, ">success <small>0/0/0") {
			t.Errorf("%s does not show GATEWITNESS-MESH-PROBES as not claimed:\n%s", page, b)
		}
	}
}

// TestRunPageShowsTimeToConsistency: a run whose tests recorded their
// configuration steps' times shows their distribution and slowest step.
func TestRunPageShowsTimeToConsistency(t *testing.T) {
	run := nightRun(0, map[string]reports.Result{"A": P})
	c := observe.Consistency{Step: "served", Routes: "HTTPRoute ns/a", FirstServed: 20 * time.Millisecond, Served: 1234 * time.Millisecond}
	run.Tests[0].Observations = append(run.Tests[0].Observations, observe.Observation{Key: "consistency", Value: c.String(), Consistency: &c})
	h := history(t, run)
	out, _ := buildIndex(t, h)
	b := readPage(t, out, filepath.Join("runs", h.Entries[0].ID, "index.html"))
	for _, want := range []string{"<h2>Time to consistency</h2>", "<td>served</td><td>1</td><td>1.234s</td>", run.Tests[0].ShortName + " 1.234s"} {
		if !strings.Contains(b, want) {
			t.Errorf("the run page lacks %q", want)
		}
	}
}

// history is NewHistory(runs...), failing t on an error.
func history(t *testing.T, runs ...*reports.Run) *History {
	t.Helper()
	h, err := NewHistory(runs...)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// readPage returns the page at path (slash-separated) below the site out.
func readPage(t *testing.T, out, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(out, filepath.FromSlash(path)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
