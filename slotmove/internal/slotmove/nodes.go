package slotmove

import (
	"fmt"
	"strconv"
	"strings"
)

// node is one line of CLUSTER NODES: who a node is, whether it is a master, and which slots it
// owns. The mover reads CLUSTER NODES rather than CLUSTER SLOTS because it needs node ids (SETSLOT
// names nodes by id) and masters that own no slot yet (a new node being filled).
type node struct {
	id     string
	addr   string // host:port, without the cluster bus port
	master bool
	failed bool
	slots  [][2]int // owned ranges, inclusive
}

// parseNodes reads the reply of CLUSTER NODES:
//
//	<id> <ip:port@cport[,hostname]> <flags> <master> <ping> <pong> <epoch> <link> <slot>...
//
// where a slot is "n", "a-b", or "[n->-id]" / "[n-<-id]" for one migrating or importing
// (ignored: they are not owned ranges).
func parseNodes(text string) ([]node, error) {
	var nodes []node
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			return nil, fmt.Errorf("cluster nodes: malformed line %q", line)
		}
		addr, _, _ := strings.Cut(f[1], "@")
		addr, _, _ = strings.Cut(addr, ",")
		flags := "," + f[2] + ","
		n := node{id: f[0], addr: addr, master: strings.Contains(flags, ",master,"),
			failed: strings.Contains(flags, ",fail,") || strings.Contains(flags, ",noaddr,")}
		for _, s := range f[8:] {
			if strings.HasPrefix(s, "[") {
				continue
			}
			lo, hi, isRange := strings.Cut(s, "-")
			if !isRange {
				hi = lo
			}
			a, err1 := strconv.Atoi(lo)
			b, err2 := strconv.Atoi(hi)
			if err1 != nil || err2 != nil || a > b {
				return nil, fmt.Errorf("cluster nodes: malformed slot %q in %q", s, line)
			}
			n.slots = append(n.slots, [2]int{a, b})
		}
		nodes = append(nodes, n)
	}
	return nodes, nil
}

// owns reports whether n owns slot.
func (n node) owns(slot int) bool {
	for _, r := range n.slots {
		if slot >= r[0] && slot <= r[1] {
			return true
		}
	}
	return false
}
