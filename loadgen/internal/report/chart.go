package report

import (
	"fmt"
	"html"
	"math"
	"strconv"
	"strings"
)

// series is one line of a chart.
type series struct {
	name  string
	color string
	ys    []float64 // NaN: no point
}

const (
	chartW, chartH                     = 560, 320
	padLeft, padRight, padTop, padBott = 64, 16, 48, 44
)

// lineChart renders an SVG line chart of series against xs (connections). Everything is inline,
// so the page works offline.
func lineChart(title, yLabel string, xs []float64, ss []series) string {
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="%s">`,
		chartW, chartH, chartW, chartH, html.EscapeString(title))
	fmt.Fprintf(&b, `<text x="%d" y="18" font-size="14" font-weight="bold">%s</text>`, padLeft, html.EscapeString(title))
	xmax, ymax := 0.0, 0.0
	for _, x := range xs {
		xmax = math.Max(xmax, x)
	}
	for _, s := range ss {
		for _, y := range s.ys {
			if !math.IsNaN(y) && !math.IsInf(y, 0) {
				ymax = math.Max(ymax, y)
			}
		}
	}
	if xmax == 0 {
		xmax = 1
	}
	ymax = niceCeil(ymax)
	plotW, plotH := float64(chartW-padLeft-padRight), float64(chartH-padTop-padBott)
	px := func(x float64) float64 { return float64(padLeft) + x/xmax*plotW }
	py := func(y float64) float64 { return float64(padTop) + plotH - y/ymax*plotH }
	// Axes, grid and ticks.
	fmt.Fprintf(&b, `<g stroke="#ccc" stroke-width="1">`)
	for k := 0; k <= 4; k++ {
		y := ymax * float64(k) / 4
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f"/>`, padLeft, chartW-padRight, py(y), py(y))
	}
	b.WriteString(`</g><g font-size="11" fill="#333">`)
	for k := 0; k <= 4; k++ {
		y := ymax * float64(k) / 4
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`, padLeft-6, py(y)+4, short(y))
	}
	for _, x := range xs {
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`, px(x), chartH-padBott+16, short(x))
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">connections</text>`, padLeft+int(plotW/2), chartH-8)
	fmt.Fprintf(&b, `<text x="14" y="%d" text-anchor="middle" transform="rotate(-90 14 %d)">%s</text>`,
		padTop+int(plotH/2), padTop+int(plotH/2), html.EscapeString(yLabel))
	b.WriteString(`</g>`)
	// Lines, points and legend.
	for k, s := range ss {
		var pts []string
		for j, y := range s.ys {
			if j < len(xs) && !math.IsNaN(y) && !math.IsInf(y, 0) {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(xs[j]), py(y)))
			}
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`, s.color, strings.Join(pts, " "))
		for _, p := range pts {
			xy := strings.Split(p, ",")
			fmt.Fprintf(&b, `<circle cx="%s" cy="%s" r="3" fill="%s"/>`, xy[0], xy[1], s.color)
		}
		lx := padLeft + 8 + k*130
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="10" height="10" fill="%s"/><text x="%d" y="%d" font-size="11">%s</text>`,
			lx, padTop-22, s.color, lx+14, padTop-13, html.EscapeString(s.name))
	}
	b.WriteString(`</svg>`)
	return b.String()
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten, so axis ticks are round numbers.
func niceCeil(v float64) float64 {
	if v <= 0 || math.IsNaN(v) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

// short formats a number compactly: 64000 -> 64k, 1.5e6 -> 1.5M.
func short(v float64) string {
	switch {
	case v >= 1e6:
		return strconv.FormatFloat(v/1e6, 'g', 3, 64) + "M"
	case v >= 1e4:
		return strconv.FormatFloat(v/1e3, 'g', 3, 64) + "k"
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}
