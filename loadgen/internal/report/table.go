package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Table writes the ramp as aligned text: a row per phase, then each node per phase, then notes.
// Latencies are milliseconds; CPU is percent of one core.
func Table(w io.Writer, r *Result) error {
	feed := ""
	if r.Feed > 1 {
		feed = fmt.Sprintf(" (each viewer follows %d on one stream)", r.Feed)
	}
	fmt.Fprintf(w, "ramp: %s, %d posts%s, warmup %s, window %s, %d fanout node(s), generator on %d CPU(s)\n",
		r.Mode, r.Posts, feed, r.Warmup, r.Window, len(r.Nodes), r.GenCPUs)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	heads := make([]string, len(columns))
	for k, c := range columns {
		heads[k] = c.head
	}
	fmt.Fprintln(tw, strings.Join(heads, "\t")+"\t")
	for k := range r.Phases {
		row := make([]string, len(columns))
		for j, c := range columns {
			row[j] = c.value(&r.Phases[k])
		}
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nper node (memory: "+r.MemMethod+"):")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "conns\tnode\tviewers\tCPU%\tRSS MiB\twindow RSS growth MiB\tKiB/conn idle\tKiB/conn\t")
	for k := range r.Phases {
		p := &r.Phases[k]
		for _, n := range p.Nodes {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", p.ConnsWanted, n.URL, n.Viewers.format(0),
				n.CPUPct.format(0), (n.RSSBytes / (1 << 20)).format(1), ((n.RSSBytes - n.RSSStartBytes) / (1 << 20)).format(1),
				kib(n.MemPerConnIdleB), kib(n.MemPerConnB))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for k := range r.Phases {
		p := &r.Phases[k]
		if len(p.Broke) > 0 {
			fmt.Fprintf(w, "slo (%d conns, %s updates/s): broke %s: %s\n", p.ConnsWanted, rate(float64(p.UpdatesPerSec)), r.Objective, strings.Join(p.Broke, ", "))
		}
		for _, note := range p.Notes {
			fmt.Fprintf(w, "note (%d conns): %s\n", p.ConnsWanted, note)
		}
	}
	if r.Capacity != nil {
		fmt.Fprintf(w, "\n%s\n(%d steps in %.0f s; stopped: %s)\n", CapacityLine(r.Capacity), r.Capacity.Steps, r.Capacity.Seconds, r.Capacity.Stopped)
	}
	if p := r.ProbeAlone; p != nil {
		fmt.Fprintf(w, "\n%s\n", ProbeLine(p))
	}
	if o := r.OneLike; o != nil {
		fmt.Fprintf(w, "\n%s\n", OneLikeLine(o))
	}
	return nil
}
