package site

import (
	"fmt"
	"html"
	"html/template"
	"strings"
	"time"

	"github.com/gatewitness/gatewitness/contract/observe"
)

// Geometry of a timing chart, in SVG user units (CSS pixels).
const (
	chartWidth  = 360
	chartHeight = 46
	chartLeft   = 10
	chartRight  = 10
	chartAxisY  = 30
)

// timingChart draws a Timing as a small inline SVG: a time axis, the
// window that passes as a band, the configured limit as a dashed line and
// the observed duration as a dot, green inside the window and red outside.
// The axis spans the window, the limit and the observation with a margin
// of a quarter of that span on each side (never below zero), so an
// observation a few milliseconds late is as visible as one seconds late;
// its ends are labelled.
func timingChart(key string, t observe.Timing) template.HTML {
	a := min(t.Earliest, t.Observed, t.Configured)
	b := max(t.Latest, t.Observed, t.Configured)
	w := b - a
	if w <= 0 {
		w = max(b/10, time.Millisecond)
	}
	lo, hi := max(0, a-w/4), b+w/4
	width := float64(chartWidth - chartLeft - chartRight)
	x := func(d time.Duration) float64 {
		d = min(max(d, lo), hi)
		return chartLeft + width*float64(d-lo)/float64(hi-lo)
	}
	state := "in"
	if !t.InWindow() {
		state = "out"
	}
	desc := fmt.Sprintf("%s: observed %v; passes in [%v, %v]; configured %v", key, t.Observed, t.Earliest, t.Latest, t.Configured)
	var sb strings.Builder
	fmt.Fprintf(&sb, `<svg class="timing %s" role="img" aria-label="%s" width="%d" height="%d" viewBox="0 0 %d %d" xmlns="http://www.w3.org/2000/svg">`,
		state, html.EscapeString(desc), chartWidth, chartHeight, chartWidth, chartHeight)
	fmt.Fprintf(&sb, `<title>%s</title>`, html.EscapeString(desc))
	// The window that passes.
	fmt.Fprintf(&sb, `<rect class="window" x="%.1f" y="%d" width="%.1f" height="14"/>`, x(t.Earliest), chartAxisY-10, max(x(t.Latest)-x(t.Earliest), 1))
	// The axis, with zero and the end of the scale.
	fmt.Fprintf(&sb, `<line class="axis" x1="%d" y1="%d" x2="%d" y2="%d"/>`, chartLeft, chartAxisY, chartWidth-chartRight, chartAxisY)
	fmt.Fprintf(&sb, `<text class="tick" x="%d" y="%d" text-anchor="start">%s</text>`, chartLeft, chartHeight-2, html.EscapeString(short(lo)))
	fmt.Fprintf(&sb, `<text class="tick" x="%d" y="%d" text-anchor="end">%s</text>`, chartWidth-chartRight, chartHeight-2, html.EscapeString(short(hi)))
	// The configured limit.
	cx := x(t.Configured)
	fmt.Fprintf(&sb, `<line class="configured" x1="%.1f" y1="%d" x2="%.1f" y2="%d"/>`, cx, chartAxisY-14, cx, chartAxisY+6)
	fmt.Fprintf(&sb, `<text class="tick" x="%.1f" y="%d" text-anchor="middle">%s</text>`, cx, chartHeight-2, html.EscapeString(short(t.Configured)))
	// What was observed.
	ox := x(t.Observed)
	fmt.Fprintf(&sb, `<circle class="observed" cx="%.1f" cy="%d" r="5"/>`, ox, chartAxisY-3)
	anchor := "middle"
	switch {
	case ox < chartLeft+30:
		anchor = "start"
	case ox > chartWidth-chartRight-30:
		anchor = "end"
	}
	fmt.Fprintf(&sb, `<text class="label" x="%.1f" y="%d" text-anchor="%s">%s</text>`, ox, 11, anchor, html.EscapeString(observed(t)))
	sb.WriteString(`</svg>`)
	return template.HTML(sb.String())
}

// observed formats the observed duration to the millisecond, or finer when
// the millisecond would put it on the other side of the window's edge (1.0012s
// against a window ending at 1.001s reads 1.0012s, not 1.001s).
func observed(t observe.Timing) string {
	for _, unit := range []time.Duration{time.Millisecond, 100 * time.Microsecond, 10 * time.Microsecond, time.Microsecond} {
		r := t
		r.Observed = t.Observed.Round(unit)
		if r.InWindow() == t.InWindow() {
			return r.Observed.String()
		}
	}
	return t.Observed.String()
}

// short formats d for a chart's labels: milliseconds below a second,
// seconds with at most three decimals above.
func short(d time.Duration) string {
	if d < time.Second && d > -time.Second {
		return fmt.Sprintf("%dms", d.Milliseconds())
	}
	return d.Round(time.Millisecond).String()
}
