package report

import (
	"encoding/csv"
	"fmt"
	"io"
)

// CSV writes one row per phase: every table column, then per node its viewers, CPU, RSS and
// memory per connection (node1_..., node2_...).
func CSV(w io.Writer, r *Result) error {
	cw := csv.NewWriter(w)
	nodes := len(r.Nodes)
	head := make([]string, 0, len(columns)+5*nodes)
	for _, c := range columns {
		head = append(head, c.csv)
	}
	for n := 1; n <= nodes; n++ {
		for _, f := range []string{"viewers", "cpu_pct", "rss_bytes", "mem_per_conn_idle_bytes", "mem_per_conn_bytes"} {
			head = append(head, fmt.Sprintf("node%d_%s", n, f))
		}
	}
	if err := cw.Write(head); err != nil {
		return err
	}
	for k := range r.Phases {
		p := &r.Phases[k]
		row := make([]string, 0, len(head))
		for _, c := range columns {
			row = append(row, c.value(p))
		}
		for n := range nodes {
			if n >= len(p.Nodes) {
				row = append(row, "", "", "", "", "")
				continue
			}
			nd := p.Nodes[n]
			row = append(row, nd.Viewers.format(0), nd.CPUPct.format(1), nd.RSSBytes.format(0),
				nd.MemPerConnIdleB.format(0), nd.MemPerConnB.format(0))
		}
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
