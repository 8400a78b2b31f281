package hub

// dueList is a loop's viewers by the tick at which each may next need the sweep: a heartbeat (a
// heartbeat interval after its last write) or, while its socket is full, a stall check (each
// tick). The sweep visits only the ticks that are due, so an idle viewer costs one
// visit a heartbeat interval, not one every tick: a pass over every viewer each tick (up to once a
// second) cost a node 0.19 µs a viewer each second, 19% of a core at a million viewers on 56
// nodes. Entries are lazy: a write moves no viewer; the visit reads lastWrite and files the viewer
// again at its new time. A viewer has at most one entry: filed earlier than the entry it has, it
// moves (the later entry is cleared), and a viewer removed from the loop takes its entry out
// (drop), so that no closed viewer stays reachable from the list until a later tick. Ticks count
// from 1: a viewer's due of 0 means it is not filed.
type dueList struct {
	tick  int64               // ns a tick
	next  int64               // the first tick not yet visited
	ticks map[int64][]*viewer // tick -> viewers filed for it
	spare [][]*viewer         // emptied lists, reused
}

func newDueList(tick, now int64) dueList {
	return dueList{tick: tick, next: now / tick, ticks: map[int64][]*viewer{}}
}

// file makes v due no later than at (ns on the loop's clock).
func (d *dueList) file(v *viewer, at int64) {
	t := (at + d.tick - 1) / d.tick // the first tick at or after at
	t = max(t, d.next, 1)
	if v.due != 0 {
		if v.due <= t {
			return // already due as early: that visit files it again
		}
		d.unlink(v) // due earlier now: its later entry goes
	}
	l, ok := d.ticks[t]
	if !ok && len(d.spare) > 0 {
		l, d.spare = d.spare[len(d.spare)-1], d.spare[:len(d.spare)-1]
	}
	v.due, v.dueIdx = t, len(l)
	d.ticks[t] = append(l, v)
}

// drop takes v's entry out of the list (a viewer removed from the loop).
func (d *dueList) drop(v *viewer) {
	if v.due != 0 {
		d.unlink(v)
	}
	v.due = 0
}

// unlink clears v's entry in the list of its tick, v.due.
func (d *dueList) unlink(v *viewer) {
	if l := d.ticks[v.due]; v.dueIdx < len(l) && l[v.dueIdx] == v {
		l[v.dueIdx] = nil
	}
}

// take calls visit for each viewer due at a tick up to now, each once, with its entry cleared.
func (d *dueList) take(now int64, visit func(*viewer)) {
	last := now / d.tick
	for d.next <= last {
		t := d.next
		d.next++ // a viewer filed again during its visit goes to a later tick
		l, ok := d.ticks[t]
		if !ok {
			continue
		}
		delete(d.ticks, t)
		for i, v := range l {
			l[i] = nil
			if v != nil && v.due == t && !v.doomed {
				v.due = 0
				visit(v)
			}
		}
		d.spare = append(d.spare, l[:0])
	}
}
