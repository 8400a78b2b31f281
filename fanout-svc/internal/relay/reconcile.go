package relay

import (
	"context"
	"slices"
	"time"

	"go.uber.org/zap"
)

// Reconciler pacing: rounds that follow each other closely (a node refusing again and again, a
// node down) back off up to maxPace; after a quiet second the pace starts over.
const (
	minPace = 50 * time.Millisecond
	maxPace = 2 * time.Second
)

// reconcileLoop puts dirty slots back on the node that owns them, until ctx is done.
func (b *clusterBus) reconcileLoop(ctx context.Context) {
	pace, last := minPace, time.Time{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-b.wake:
		}
		if time.Since(last) > time.Second {
			pace = minPace
		}
		b.reconcile(ctx)
		last = time.Now()
		select {
		case <-ctx.Done():
			return
		case <-time.After(pace):
		}
		pace = min(2*pace, maxPace)
	}
}

// reconcile resubscribes every dirty slot (and every slot of a dirty connection) on its owner, and
// drops the connections to nodes that no longer own slots. A slot that fails stays dirty for the
// next round.
func (b *clusterBus) reconcile(ctx context.Context) {
	b.mu.Lock()
	slots := b.dirtySlots
	b.dirtySlots = make(map[int]string)
	for mc := range b.dirtyConns {
		for slot, ss := range b.slots {
			if _, ok := slots[slot]; !ok && ss.conn == mc {
				slots[slot] = ""
			}
		}
	}
	clear(b.dirtyConns)
	b.mu.Unlock()

	if err := b.topo.refresh(ctx, 100*time.Millisecond); err != nil {
		b.r.stats.RedisErrors.Add(1)
		b.r.log.Debug("reload slot map", zap.Error(err))
	}
	for slot, hint := range slots {
		if err := b.resubscribeSlot(ctx, slot, hint); err != nil {
			b.r.stats.RedisErrors.Add(1)
			b.r.log.Debug("resubscribe slot", zap.Int("slot", slot), zap.Error(err))
			b.markSlot(slot, "")
		}
	}
	b.dropUnusedConns()
}

// resubscribeSlot subscribes the slot's channels on the node that owns it now (hint, when a
// MOVED named it, else the slot map), moving them off the node that had them if that changed.
// Subscribing again where they already are is harmless: Redis confirms and the relay re-reads.
// No lock is held across the commands; a channel that left the slot meanwhile is unsubscribed
// again afterwards, so a move never resurrects a subscription the registry of posts dropped.
func (b *clusterBus) resubscribeSlot(ctx context.Context, slot int, hint string) error {
	b.mu.Lock()
	ss := b.slots[slot]
	if ss == nil {
		b.mu.Unlock()
		return nil
	}
	old := ss.conn
	channels := make([]string, 0, len(ss.channels))
	for ch := range ss.channels {
		channels = append(channels, ch)
	}
	b.mu.Unlock()

	addr := hint
	if addr == "" {
		addr = b.topo.ownerOf(slot)
	}
	target := old
	if addr != "" && addr != old.addr {
		mc, err := b.connFor(addr)
		if err != nil {
			return err
		}
		target = mc
		b.mu.Lock()
		ss.conn = target // before the SUNSUBSCRIBE below, so its MOVED answer reads as stale
		b.mu.Unlock()
		b.r.stats.Reroutes.Add(1)
		// The old node dropped them already or will answer MOVED; this makes go-redis forget
		// them there, or it would resubscribe them on that node after its next reconnect.
		uctx, cancel := context.WithTimeout(ctx, time.Second)
		_ = old.rc.ps.SUnsubscribe(uctx, channels...)
		cancel()
	}
	sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := target.rc.ps.SSubscribe(sctx, channels...); err != nil {
		return err
	}
	b.mu.Lock()
	var gone []string
	for _, ch := range channels {
		if cur := b.slots[slot]; cur == nil || cur.conn != target || !has(cur.channels, ch) {
			gone = append(gone, ch)
		}
	}
	b.mu.Unlock()
	if len(gone) > 0 {
		_ = target.rc.ps.SUnsubscribe(sctx, gone...)
	}
	return nil
}

func has(set map[string]struct{}, k string) bool {
	_, ok := set[k]
	return ok
}

// dropUnusedConns stops the connections to nodes that own no slots and carry no subscription.
// They are picked under b.mu and stopped after it is released (see masterConn.stop).
func (b *clusterBus) dropUnusedConns() {
	masters := b.topo.masters()
	if len(masters) == 0 {
		return
	}
	b.mu.Lock()
	inUse := make(map[*masterConn]bool, len(b.conns))
	for _, ss := range b.slots {
		inUse[ss.conn] = true
	}
	var unused []*masterConn
	for addr, mc := range b.conns {
		if !inUse[mc] && !slices.Contains(masters, addr) {
			delete(b.conns, addr)
			delete(b.dirtyConns, mc)
			unused = append(unused, mc)
		}
	}
	b.mu.Unlock()
	for _, mc := range unused {
		mc.stop()
	}
}
