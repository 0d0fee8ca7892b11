package site

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/gatewitness/gatewitness/reports"
)

// The browser test drives a real Chromium through the DevTools protocol
// (chromedp) over a site built from the recorded runs in testdata, served
// on loopback, and checks what a person sees there.
//
// Environment:
//
//	GATEWITNESS_CHROMIUM          the browser to run (default: chromium,
//	                            chromium-browser, google-chrome-stable or
//	                            google-chrome on $PATH)
//	GATEWITNESS_BROWSER_REQUIRED  when 1, a browser that is missing or cannot
//	                            start fails the test instead of skipping it
//	                            (.ci/run sets it)
//	GATEWITNESS_SCREENSHOTS       the folder for the screenshots (default:
//	                            out/browser-test at the module's root)
const installHint = "install Chromium with: apt-get install chromium (Debian), or set GATEWITNESS_CHROMIUM to a Chrome or Chromium binary"

func findBrowser() (string, error) {
	if p := os.Getenv("GATEWITNESS_CHROMIUM"); p != "" {
		return exec.LookPath(p)
	}
	names := []string{"chromium", "chromium-browser", "google-chrome-stable", "google-chrome"}
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("none of %s is on $PATH", strings.Join(names, ", "))
}

// cannotRun skips the test, or fails it when a browser is required.
func cannotRun(t *testing.T, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...) + "; " + installHint
	if os.Getenv("GATEWITNESS_BROWSER_REQUIRED") == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

func screenshotDir(t *testing.T) string {
	if d := os.Getenv("GATEWITNESS_SCREENSHOTS"); d != "" {
		return d
	}
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "out", "browser-test")
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return t.TempDir()
		}
		dir = parent
	}
}

// console collects what pages write to the console: calls of the console
// API, uncaught exceptions and the browser's log (a resource that fails to
// load, say).
type console struct {
	mu   sync.Mutex
	msgs []chromedp.ConsoleMessage
}

func (c *console) collect(ctx context.Context) {
	for m, err := range chromedp.Console(ctx) {
		if err != nil {
			return
		}
		c.mu.Lock()
		c.msgs = append(c.msgs, m)
		c.mu.Unlock()
	}
}

// problems returns the errors, warnings and exceptions seen so far, and
// forgets every message.
func (c *console) problems() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, m := range c.msgs {
		switch m.Type {
		case chromedp.ConsoleError, chromedp.ConsoleWarning, chromedp.ConsoleException:
			out = append(out, fmt.Sprintf("%s (%s:%d)", m, m.URL, m.Line))
		}
	}
	c.msgs = nil
	return out
}

// TestSiteInBrowser builds the site of the recorded runs (two nights of
// the in-process reference gateway, the second with a failed test, and a
// night on the local control plane), opens it in Chromium, and checks the
// matrix, the way to a failed test's page, its message, chart, ledger and
// history strip, and that no page writes an error to the console. It saves
// screenshots of the index and of the failed test's page.
func TestSiteInBrowser(t *testing.T) {
	browser, err := findBrowser()
	if err != nil {
		cannotRun(t, "no browser to run: %v", err)
	}
	h := readFixtures(t)
	// The failed test's state, as the runner's snapshot records it (the
	// recorded night predates the field): the route not accepted, its
	// backend with no ready endpoint.
	failed := testOf(h.Entries[1].Run, "HTTPRouteTimeoutsWithoutRetry")
	if failed == nil || failed.Result != reports.Fail {
		t.Fatalf("the fixture's second night has no failed HTTPRouteTimeoutsWithoutRetry")
	}
	failed.State = []reports.ObjectState{
		{Kind: "Gateway", Namespace: "gateway-conformance-infra", Name: "same-namespace", Generation: 1, Conditions: []reports.StateCondition{
			{Type: "Programmed", Status: "True", Reason: "Programmed", ObservedGeneration: 1},
			{Scope: "listener http", Type: "Accepted", Status: "True", Reason: "Accepted", ObservedGeneration: 1},
			{Scope: "listener http", Type: "Conflicted", Status: "False", Reason: "NoConflicts", ObservedGeneration: 1}}, Via: "parent of HTTPRoute gateway-conformance-infra/timeouts"},
		{Kind: "HTTPRoute", Namespace: "gateway-conformance-infra", Name: "timeouts", Generation: 2, Conditions: []reports.StateCondition{
			{Scope: "parent gateway-conformance-infra/same-namespace", Type: "Accepted", Status: "False", Reason: "UnsupportedValue", Message: "timeouts.request is not supported", ObservedGeneration: 2}}},
		{Kind: "BackendTLSPolicy", Namespace: "gateway-conformance-infra", Name: "never-created", Error: "not found: not created, or deleted before the failure"},
		{Kind: "EndpointSlice", Namespace: "gateway-conformance-infra", Name: "infra-backend-v1-x", Service: "infra-backend-v1", Endpoints: []string{"10.244.0.7:3000 not ready"}},
	}
	root := t.TempDir()
	if _, err := Build(root, h, Options{}); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/", http.FileServer(http.Dir(root)))
	// A page that writes to the console, to show the check can see it.
	mux.HandleFunc("/console-selftest.html", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<!DOCTYPE html><title>self-test</title><link rel="icon" href="data:,"><script>console.error("selftest")</script><img src="/no-such-image.png">`)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()

	var browserOut bytes.Buffer
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browser),
		chromedp.NoSandbox, // Chromium refuses its sandbox as root
		chromedp.DisableGPU,
		chromedp.Flag("disable-component-update", true),
		chromedp.UserDataDir(t.TempDir()),
		// Chromium's own temporary files (org.chromium.Chromium.*) go
		// where the test removes them, not into the machine's /tmp.
		chromedp.Env("TMPDIR="+t.TempDir()),
		chromedp.WindowSize(1280, 900),
		chromedp.CombinedOutput(&browserOut),
	)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	ctx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelAlloc()
	ctx, cancelTab := chromedp.NewContext(ctx)
	defer cancelTab()
	start := time.Now()
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		cannotRun(t, "%s does not start: %v; its output:\n%s", browser, err, browserOut.String())
	}
	t.Logf("%s started in %v", browser, time.Since(start).Round(time.Millisecond))
	var cons console
	go cons.collect(ctx)

	// open navigates and waits for the page's load event.
	open := func(url string) {
		t.Helper()
		if _, err := chromedp.Run(ctx, chromedp.WaitEvent(page.LoadEventFired, nil, chromedp.Navigate(url))); err != nil {
			t.Fatalf("opening %s: %v", url, err)
		}
	}
	// click follows the link sel finds and waits for the new page.
	click := func(sel string) {
		t.Helper()
		if _, err := chromedp.Run(ctx, chromedp.WaitEvent(page.LoadEventFired, nil, chromedp.Click(chromedp.CSS(sel)))); err != nil {
			t.Fatalf("following %s: %v", sel, err)
		}
	}
	// settle waits until the console has had time to report the page: a
	// round trip through the page's event loop, after its load event.
	settle := func() {
		t.Helper()
		if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`new Promise(r => setTimeout(r, 0))`, chromedp.EvalAwaitPromise)); err != nil {
			t.Fatal(err)
		}
	}
	shoot := func(name string) {
		t.Helper()
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot: %v", err)
		}
		dir := screenshotDir(t)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s", path)
	}

	// The console check sees an error and a missing resource.
	open(srv.URL + "/console-selftest.html")
	if err := pollProblems(ctx, &cons, 2); err != nil {
		t.Fatalf("the console check did not see the self-test page's error and missing image: %v", err)
	}

	// The index: a row per implementation and target, and the matrix.
	open(srv.URL + "/index.html")
	type seriesRow struct {
		Target string   `json:"target"`
		Passed string   `json:"passed"`
		Failed string   `json:"failed"`
		Strip  []string `json:"strip"`
	}
	rows, err := chromedp.Run(ctx, chromedp.Evaluate[[]seriesRow](`[...document.querySelectorAll("table.series tbody tr")].map(tr => ({
		target: tr.querySelector("td.target").innerText,
		passed: tr.cells[4].innerText, failed: tr.cells[5].innerText,
		strip: [...tr.querySelectorAll("ol.strip li")].map(li => li.className + " " + li.innerText)}))`))
	if err != nil {
		t.Fatal(err)
	}
	wantRows := []seriesRow{
		{"in-process · v1.6 experimental", "2", "1", []string{"cell pass ✓", "cell fail current ✗"}},
		{"localcp · gatewitness · v1.6 experimental", "3", "0", []string{"cell pass current ✓"}},
	}
	if !slices.EqualFunc(rows, wantRows, func(a, b seriesRow) bool {
		return a.Target == b.Target && a.Passed == b.Passed && a.Failed == b.Failed && slices.Equal(a.Strip, b.Strip)
	}) {
		t.Errorf("implementations table = %+v, want %+v", rows, wantRows)
	}

	type matrixRow struct {
		Target   string            `json:"target"`
		Core     string            `json:"core"`
		Extended string            `json:"extended"`
		Cells    map[string]string `json:"cells"`
	}
	readMatrix := func(profile string) []matrixRow {
		t.Helper()
		m, err := chromedp.Run(ctx, chromedp.Evaluate[[]matrixRow](fmt.Sprintf(`[...document.querySelectorAll('table.matrix[data-profile=%q] tbody tr')].map(tr => ({
			target: tr.querySelector("td.target").innerText,
			core: tr.querySelector("td.core").innerText, extended: tr.querySelector("td.extended").innerText,
			cells: Object.fromEntries([...tr.querySelectorAll("td.fcell")].map(td => [td.dataset.feature, td.innerText]))}))`, profile)))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	resilience := readMatrix("GATEWITNESS-HTTP-RESILIENCE")
	if len(resilience) != 2 {
		t.Fatalf("GATEWITNESS-HTTP-RESILIENCE has %d rows, want 2 (in-process, localcp): %+v", len(resilience), resilience)
	}
	for _, tt := range []struct {
		row                           int
		target, core, extended        string
		timeout, codes, retry, backof string
	}{
		// The second in-process night failed HTTPRouteTimeoutsWithoutRetry,
		// a test of the request and backend timeouts.
		{0, "in-process · v1.6 experimental", "success", "failure", "✗", "✓", "✓", "○"},
		{1, "localcp · gatewitness · v1.6 experimental", "success", "partial", "✓", "✓", "✓", "○"},
	} {
		r := resilience[tt.row]
		if r.Target != tt.target || !strings.HasPrefix(r.Core, tt.core) || !strings.HasPrefix(r.Extended, tt.extended) ||
			r.Cells["HTTPRouteRequestTimeout"] != tt.timeout || r.Cells["HTTPRouteBackendTimeout"] != tt.timeout ||
			r.Cells["HTTPRouteRetryCodes"] != tt.codes || r.Cells["HTTPRouteRetry"] != tt.retry || r.Cells["HTTPRouteRetryBackoff"] != tt.backof ||
			r.Cells["HTTPRouteRetryLastStatus"] != "○" {
			t.Errorf("GATEWITNESS-HTTP-RESILIENCE row %d = %+v; want %s, core %s, extended %s, timeouts %s, codes %s, retry %s, backoff %s",
				tt.row, r, tt.target, tt.core, tt.extended, tt.timeout, tt.codes, tt.retry, tt.backof)
		}
	}
	if http := readMatrix("GATEWAY-HTTP"); len(http) != 2 || http[0].Cells["HTTPRouteHostRewrite"] != "○" || http[0].Cells["GatewayStaticAddresses"] != "–" {
		t.Errorf("GATEWAY-HTTP rows = %+v; want 2, HostRewrite claimed but not tested, GatewayStaticAddresses not claimed", http)
	}
	// The news first: what changed is above the first matrix and in the
	// first screen; the matrices have no rotated headers, wrap feature
	// names, and keep the first column in view when scrolled sideways.
	type layout struct {
		ChangesTop    float64 `json:"changesTop"`
		FirstMatrix   float64 `json:"firstMatrix"`
		WritingMode   string  `json:"writingMode"`
		Transform     string  `json:"transform"`
		HeaderHeight  float64 `json:"headerHeight"`
		Sticky        string  `json:"sticky"`
		ScrollWidth   float64 `json:"scrollWidth"`
		ClientWidth   float64 `json:"clientWidth"`
		FirstCellLeft float64 `json:"firstCellLeft"`
		ScrollLeft    float64 `json:"scrollLeft"`
		BoxLeft       float64 `json:"boxLeft"`
	}
	lay, err := chromedp.Run(ctx, chromedp.Evaluate[layout](`(() => {
		const http = document.querySelector('table.matrix[data-profile="GATEWAY-HTTP"]');
		const box = http.parentElement;
		box.scrollLeft = box.scrollWidth;
		const th = http.querySelector("th.feature"), cs = getComputedStyle(th);
		return {
			changesTop: document.querySelector("#changes").getBoundingClientRect().top + scrollY,
			firstMatrix: document.querySelector("table.matrix").getBoundingClientRect().top + scrollY,
			writingMode: cs.writingMode, transform: cs.transform,
			headerHeight: http.tHead.getBoundingClientRect().height,
			sticky: getComputedStyle(http.querySelector("tbody td")).position,
			scrollWidth: box.scrollWidth, clientWidth: box.clientWidth, scrollLeft: box.scrollLeft,
			firstCellLeft: http.querySelector("tbody td").getBoundingClientRect().left,
			boxLeft: box.getBoundingClientRect().left};
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("index layout at 1280 px: %+v", lay)
	if lay.ChangesTop >= lay.FirstMatrix || lay.ChangesTop > 900 {
		t.Errorf("what changed starts at %.0f px, the first profile table at %.0f px; want the changes first, in the first screen", lay.ChangesTop, lay.FirstMatrix)
	}
	if lay.WritingMode != "horizontal-tb" || lay.Transform != "none" || lay.HeaderHeight > 150 {
		t.Errorf("GATEWAY-HTTP's feature headers: writing mode %s, transform %s, header %.0f px high; want horizontal, unrotated, at most 150 px", lay.WritingMode, lay.Transform, lay.HeaderHeight)
	}
	if lay.Sticky != "sticky" || lay.ScrollLeft > 0 && lay.FirstCellLeft < lay.BoxLeft-1 {
		t.Errorf("GATEWAY-HTTP's first column: position %s, at %.0f px when scrolled by %.0f px (the box at %.0f px); want it sticky, in view", lay.Sticky, lay.FirstCellLeft, lay.ScrollLeft, lay.BoxLeft)
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[int](`(document.querySelector('table.matrix[data-profile="GATEWAY-HTTP"]').parentElement.scrollLeft = 0, 0)`)); err != nil {
		t.Fatal(err)
	}
	changes, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#changes li.change")].map(li => li.innerText)`))
	if err != nil || len(changes) != 1 || changes[0] != "HTTPRouteTimeoutsWithoutRetry: pass → fail (broken)" {
		t.Errorf("what changed = %q (%v), want HTTPRouteTimeoutsWithoutRetry: pass → fail (broken)", changes, err)
	}
	history, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#history tr.run-row").length`))
	if err != nil || history != 3 {
		t.Errorf("the history lists %d runs (%v), want 3", history, err)
	}
	settle()
	shoot("index.png")

	// From the index to the failed run, and on to the failed test.
	click(`tr.series-row[data-series="gatewitness-reference-gateway-default-in-process-v1-6-experimental"] td:nth-child(4) a`)
	// The run page leads with its failures: in the first screen, above
	// the profiles and the facts; the claimed features and the command
	// are folded below.
	type runLayout struct {
		Failures    []string `json:"failures"`
		FailuresTop float64  `json:"failuresTop"`
		ProfilesTop float64  `json:"profilesTop"`
		FactsTop    float64  `json:"factsTop"`
		ClaimsOpen  bool     `json:"claimsOpen"`
		ClaimsShown bool     `json:"claimsShown"`
		Command     bool     `json:"command"`
		CommandOpen bool     `json:"commandOpen"`
	}
	rl, err := chromedp.Run(ctx, chromedp.Evaluate[runLayout](`(() => {
		const top = sel => { const e = document.querySelector(sel); return e ? e.getBoundingClientRect().top + scrollY : -1; };
		const claims = document.querySelector("details.claims"), command = document.querySelector("details.command");
		return {
			failures: [...document.querySelectorAll("tr.failure-row")].map(tr => tr.dataset.test),
			failuresTop: top("#failures"), profilesTop: top("table.profiles"), factsTop: top("table.facts"),
			claimsOpen: claims.open, claimsShown: claims.querySelector("p").checkVisibility(),
			command: !!command, commandOpen: !!command && command.open};
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("run page layout at 1280 px: %+v", rl)
	if !slices.Equal(rl.Failures, []string{"HTTPRouteTimeoutsWithoutRetry"}) || rl.FailuresTop < 0 || rl.FailuresTop > 400 ||
		rl.FailuresTop > rl.ProfilesTop || rl.FailuresTop > rl.FactsTop {
		t.Errorf("the run page's failures %q start at %.0f px (the profiles at %.0f, the facts at %.0f); want the failed test first, in the first screen",
			rl.Failures, rl.FailuresTop, rl.ProfilesTop, rl.FactsTop)
	}
	if rl.ClaimsOpen || rl.ClaimsShown || !rl.Command || rl.CommandOpen {
		t.Errorf("the run page shows its claimed features (open %v, visible %v) or its command (there %v, open %v); want both folded", rl.ClaimsOpen, rl.ClaimsShown, rl.Command, rl.CommandOpen)
	}
	settle()
	shoot("run.png")
	click(`tr.failure-row[data-test="HTTPRouteTimeoutsWithoutRetry"] a`)
	type testView struct {
		Heading  string   `json:"heading"`
		Message  string   `json:"message"`
		Charts   []string `json:"charts"`
		Width    float64  `json:"width"`
		Ledger   int      `json:"ledger"`
		Strip    []string `json:"strip"`
		History  string   `json:"history"`
		GEPLinks int      `json:"gepLinks"`
		State    []string `json:"state"`
		Red      []string `json:"red"`
	}
	v, err := chromedp.Run(ctx, chromedp.Evaluate[testView](`({
		heading: document.querySelector("h1").innerText,
		message: document.querySelector("pre.message").innerText,
		charts: [...document.querySelectorAll("svg.timing")].map(s => s.getAttribute("class")),
		width: document.querySelector("svg.timing.out").getBoundingClientRect().width,
		ledger: document.querySelectorAll("table.ledger tbody tr").length,
		strip: [...document.querySelectorAll(".history ol.strip li")].map(li => li.className + " " + li.innerText),
		history: document.querySelector(".history p").innerText,
		gepLinks: document.querySelectorAll('a[href="https://gateway-api.sigs.k8s.io/geps/gep-1742/"]').length,
		state: [...document.querySelectorAll("table.state tr.state-row")].map(tr => tr.innerText.replace(/\s+/g, " ").trim()),
		red: [...document.querySelectorAll("table.state td")].filter(td => getComputedStyle(td).color === "rgb(207, 34, 46)").map(td => td.innerText.replace(/\s+/g, " ").trim())})`))
	if err != nil {
		t.Fatal(err)
	}
	if v.Heading != "HTTPRouteTimeoutsWithoutRetry fail" {
		t.Errorf("heading = %q", v.Heading)
	}
	if !strings.Contains(v.Message, "want it to end 1s after the request was sent (tolerance 1ms)") {
		t.Errorf("failure message = %q, want the failing assertion", v.Message)
	}
	if !slices.Contains(v.Charts, "timing out") || v.Width < 300 {
		t.Errorf("charts %q, the first late one %.0f px wide; want a chart of a late timing drawn", v.Charts, v.Width)
	}
	if v.Ledger == 0 {
		t.Error("the failed test's page shows no ledger rows")
	}
	if want := []string{"cell pass ✓", "cell fail current ✗"}; !slices.Equal(v.Strip, want) {
		t.Errorf("history strip = %q, want %q: the flip from pass to fail", v.Strip, want)
	}
	if !strings.Contains(v.History, "First failed: "+night(h.Entries[1].Run.Started)) || !strings.Contains(v.History, "Last passed: "+night(h.Entries[0].Run.Started)) {
		t.Errorf("history = %q, want first failed on the second night and last passed on the first", v.History)
	}
	if v.GEPLinks == 0 {
		t.Error("no link to GEP-1742")
	}
	wantState := []string{
		"Gateway gateway-conformance-infra/same-namespace (generation 1) (parent of HTTPRoute gateway-conformance-infra/timeouts) Programmed True (observed 1) Programmed",
		"listener http Accepted True (observed 1) Accepted",
		"listener http Conflicted False (observed 1) NoConflicts",
		"HTTPRoute gateway-conformance-infra/timeouts (generation 2) parent gateway-conformance-infra/same-namespace Accepted False (observed 2) UnsupportedValue timeouts.request is not supported",
		"BackendTLSPolicy gateway-conformance-infra/never-created not found: not created, or deleted before the failure",
		"EndpointSlice gateway-conformance-infra/infra-backend-v1-x Service infra-backend-v1 10.244.0.7:3000 not ready",
	}
	if !slices.Equal(v.State, wantState) {
		t.Errorf("the failed test's state at the failure:\n%q\nwant\n%q", v.State, wantState)
	}
	// Red: the route's Accepted False and the policy not found; not the
	// listener's Conflicted False, which is healthy.
	if wantRed := []string{"False (observed 2)", "BackendTLSPolicy gateway-conformance-infra/never-created", "not found: not created, or deleted before the failure"}; !slices.Equal(v.Red, wantRed) {
		t.Errorf("the state's red cells %q; want %q (Conflicted False is healthy)", v.Red, wantRed)
	}
	settle()
	shoot("failed-test.png")

	// The series page and a passing test's page, for the console.
	open(srv.URL + "/series/gatewitness-reference-gateway-default-in-process-v1-6-experimental.html")
	open(srv.URL + "/runs/" + h.Entries[0].ID + "/tests/HTTPRouteRetryCodesAndAttempts.html")
	settle()
	if p := cons.problems(); len(p) > 0 {
		t.Errorf("the console has errors:\n%s", strings.Join(p, "\n"))
	}
}

// pollProblems waits, until ctx ends, for at least n problems on the
// console, and forgets them.
func pollProblems(ctx context.Context, c *console, n int) error {
	var seen []string
	for {
		seen = append(seen, c.problems()...)
		if len(seen) >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("saw %q: %w", seen, ctx.Err())
		case <-time.After(20 * time.Millisecond): // polling interval, not synchronisation
		}
	}
}
