package relay

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
)

// errStopped is returned for subscriptions asked for after Run returned.
var errStopped = errors.New("relay stopped")

// clusterBus subscribes with sharded pub/sub (SSUBSCRIBE) on a Redis Cluster, so that each
// update is handled by the one shard that owns the post instead of being copied to every node.
//
// go-redis's ClusterClient.SSubscribe binds one PubSub to the node that owns its first channel
// (go-redis#3133), and after a reconnect it resubscribes every channel in one SSUBSCRIBE, which a
// cluster refuses with CROSSSLOT when they span slots. So the bus keeps its own map of slot
// owners, one PubSub per master node (a shard), sends one SSUBSCRIBE per slot, and puts slots
// back on the right node itself: when a node pushes `sunsubscribe` (its slot moved away), answers
// MOVED, refuses a subscription (CROSSSLOT, CLUSTERDOWN, TRYAGAIN) or loses its connection.
// Every channel confirmed again is re-read by the relay, so viewers converge.
type clusterBus struct {
	r      *Relay
	client *redis.ClusterClient
	topo   *topology

	// mu guards the maps below; it is never held across a Redis call. No lock is held across
	// SSUBSCRIBE or CLUSTER SLOTS either: the registry of posts never has a subscribe and an
	// unsubscribe of the same post in flight at once, each pub/sub connection writes its commands
	// in order, and where a reconciliation races with a subscription (a slot moving while a channel
	// joins or leaves it), the loser puts things right afterwards (see resubscribeSlot and
	// subscribe).
	mu         sync.Mutex
	conns      map[string]*masterConn // master address -> its pub/sub connection
	slots      map[int]*slotSubs      // slot -> its subscribed channels
	dirtySlots map[int]string         // slots to resubscribe -> node a MOVED named ("": ask the topology)
	dirtyConns map[*masterConn]bool   // nodes all of whose slots must be resubscribed
	running    bool                   // run is running: new connections start their loop at once
	stopped    bool                   // run returned: no new connection loops
	loops      sync.WaitGroup         // the connections' receive loops
	wake       chan struct{}          // work for the reconciler
}

// slotSubs is what the node is subscribed to in one slot, and on which master connection.
type slotSubs struct {
	conn     *masterConn
	channels map[string]struct{}
}

// masterConn is the sharded pub/sub connection to one master node, read by its own loop.
type masterConn struct {
	addr    string
	client  *redis.Client
	rc      receiver
	cancel  context.CancelFunc // stops the loop; nil until started
	started bool
}

func newClusterBus(r *Relay, client *redis.ClusterClient) *clusterBus {
	return &clusterBus{
		r:          r,
		client:     client,
		topo:       newTopology(client),
		conns:      make(map[string]*masterConn),
		slots:      make(map[int]*slotSubs),
		dirtySlots: make(map[int]string),
		dirtyConns: make(map[*masterConn]bool),
		wake:       make(chan struct{}, 1),
	}
}

func (b *clusterBus) subscribe(ctx context.Context, ch string) error {
	slot := keySlot(ch)
	mc, err := b.connForSlot(ctx, slot) // may read CLUSTER SLOTS; nothing is locked meanwhile
	if err != nil {
		return err
	}
	b.mu.Lock()
	ss := b.slots[slot]
	if ss == nil {
		ss = &slotSubs{conn: mc, channels: make(map[string]struct{})}
		b.slots[slot] = ss
	}
	ss.channels[ch] = struct{}{}
	target := ss.conn
	b.mu.Unlock()
	if err := target.rc.ps.SSubscribe(ctx, ch); err != nil {
		return err
	}
	b.mu.Lock()
	moved := b.slots[slot] != ss || ss.conn != target
	b.mu.Unlock()
	if moved {
		// The reconciler moved the slot while this SSUBSCRIBE was on its way to the old node:
		// have it subscribe the slot again where it is now.
		b.markSlot(slot, "")
	}
	return nil
}

// unsubscribe drops each channel from its slot's node, one SUNSUBSCRIBE per channel (the posts of
// one batch live on different slots, and usually on different nodes), all within ctx.
func (b *clusterBus) unsubscribe(ctx context.Context, chs []string) {
	for _, ch := range chs {
		b.unsubscribeOne(ctx, ch)
	}
}

func (b *clusterBus) unsubscribeOne(ctx context.Context, ch string) {
	slot := keySlot(ch)
	b.mu.Lock()
	var mc *masterConn
	if ss := b.slots[slot]; ss != nil {
		if _, ok := ss.channels[ch]; ok {
			delete(ss.channels, ch)
			mc = ss.conn
		}
		if len(ss.channels) == 0 {
			delete(b.slots, slot)
		}
	}
	b.mu.Unlock()
	if mc == nil {
		return
	}
	if err := mc.rc.ps.SUnsubscribe(ctx, ch); err != nil {
		b.r.log.Debug("sunsubscribe", zap.String("channel", ch), zap.String("node", mc.addr), zap.Error(err))
	}
}

// connForSlot returns the connection to the master that owns slot, loading the slot map if needed.
func (b *clusterBus) connForSlot(ctx context.Context, slot int) (*masterConn, error) {
	addr := b.topo.ownerOf(slot)
	if addr == "" {
		if err := b.topo.refresh(ctx, 100*time.Millisecond); err != nil {
			return nil, err
		}
		if addr = b.topo.ownerOf(slot); addr == "" {
			return nil, errors.New("no cluster node owns slot " + strconv.Itoa(slot))
		}
	}
	return b.connFor(addr)
}

// connFor returns the connFor for a master address, connecting a new one (and starting its loop if
// run is running) the first time.
func (b *clusterBus) connFor(addr string) (*masterConn, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopped {
		return nil, errStopped
	}
	if mc := b.conns[addr]; mc != nil {
		return mc, nil
	}
	client := redis.NewClient(nodeOptions(b.client.Options(), addr))
	mc := &masterConn{addr: addr, client: client, rc: receiver{ps: client.SSubscribe(context.Background()), log: b.r.log.With(zap.String("node", addr))}}
	b.conns[addr] = mc
	if b.running {
		b.start(mc)
	}
	return mc, nil
}

// start runs the connection's receive loop; b.mu is held. The loop exits when the connection is
// stopped (by dropUnusedConns, or for every connection when run ends) and closes the connection's
// client on its way out.
func (b *clusterBus) start(mc *masterConn) {
	ctx, cancel := context.WithCancel(context.Background())
	mc.cancel, mc.started = cancel, true
	b.loops.Add(1)
	go func() { // exits when mc.stop cancels ctx
		defer b.loops.Done()
		defer mc.client.Close()
		defer mc.rc.ps.Close()
		mc.rc.loop(ctx, &b.r.stats, func(m any) { b.handle(mc, m) }, func(err error) bool { return b.failed(mc, err) })
	}()
}

// stop ends the connection's loop (closing the PubSub wakes a pending read). It must be called without
// b.mu: PubSub.Close takes the PubSub's own lock, which go-redis holds while it redials a broken
// connection (up to the dial timeout, per attempt), and every subscribe, unsubscribe and
// `sunsubscribe` push of every connection needs b.mu meanwhile. Callers take the connection out of
// b.conns under the lock, so no one else reaches it, and stop it after unlocking.
func (mc *masterConn) stop() {
	if mc.cancel != nil {
		mc.cancel()
	}
	_ = mc.rc.ps.Close()
	if !mc.started {
		_ = mc.client.Close()
	}
}

// handle passes messages and confirmations to the relay. A `sunsubscribe` for a channel the node
// still wants there was pushed by Redis: the slot moved to another node.
func (b *clusterBus) handle(mc *masterConn, msg any) {
	if s, ok := msg.(*redis.Subscription); ok && s.Kind == "sunsubscribe" {
		slot := keySlot(s.Channel)
		b.mu.Lock()
		ss := b.slots[slot]
		wanted := false
		if ss != nil && ss.conn == mc {
			_, wanted = ss.channels[s.Channel]
		}
		b.mu.Unlock()
		if wanted {
			b.markSlot(slot, "")
		}
		return
	}
	b.r.handle(msg)
}

// failed classifies an error read from a master connection. A MOVED names the slot and its new
// node; another error reply refused a subscription without saying which, and a read error means
// the connection broke (go-redis reconnects): either way the connection's slots are resubscribed.
// It reports whether err was a reply, which needs no backoff.
func (b *clusterBus) failed(mc *masterConn, err error) bool {
	var reply redis.Error
	if !errors.As(err, &reply) {
		b.markConn(mc)
		return false
	}
	if slot, addr, ok := parseMoved(err); ok {
		b.mu.Lock()
		ss := b.slots[slot]
		current := ss == nil || ss.conn.addr == addr // already there: a late answer to an old command
		b.mu.Unlock()
		if !current {
			b.topo.moved(slot, addr)
			b.markSlot(slot, addr)
		}
		return true
	}
	b.r.log.Debug("pubsub refused", zap.String("node", mc.addr), zap.Error(err))
	b.markConn(mc)
	return true
}

// parseMoved reads "MOVED <slot> <host:port>".
func parseMoved(err error) (slot int, addr string, ok bool) {
	f := strings.Fields(err.Error())
	if len(f) != 3 || f[0] != "MOVED" {
		return 0, "", false
	}
	slot, perr := strconv.Atoi(f[1])
	if perr != nil || slot < 0 || slot >= slotCount {
		return 0, "", false
	}
	return slot, f[2], true
}

func (b *clusterBus) markSlot(slot int, addr string) {
	b.mu.Lock()
	if old, ok := b.dirtySlots[slot]; !ok || old == "" {
		b.dirtySlots[slot] = addr
	}
	b.mu.Unlock()
	b.signal()
}

func (b *clusterBus) markConn(mc *masterConn) {
	b.mu.Lock()
	b.dirtyConns[mc] = true
	b.mu.Unlock()
	b.signal()
}

func (b *clusterBus) signal() {
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// run starts the connection loops and the reconciler and waits for ctx; then it stops them all.
func (b *clusterBus) run(ctx context.Context) {
	b.mu.Lock()
	b.running = true
	for _, mc := range b.conns {
		b.start(mc)
	}
	b.mu.Unlock()
	done := make(chan struct{})
	go func() { // exits when ctx is done
		defer close(done)
		b.reconcileLoop(ctx)
	}()
	<-ctx.Done()
	<-done
	b.mu.Lock()
	b.stopped, b.running = true, false
	conns := make([]*masterConn, 0, len(b.conns))
	for _, mc := range b.conns {
		conns = append(conns, mc)
	}
	b.mu.Unlock()
	for _, mc := range conns { // after unlocking: see stop
		mc.stop()
	}
	b.loops.Wait()
}

func (b *clusterBus) healthy() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, mc := range b.conns {
		if !mc.rc.up.Load() {
			return false
		}
	}
	return true
}

// nodeOptions are the options of the cluster client, for a client of one node.
func nodeOptions(o *redis.ClusterOptions, addr string) *redis.Options {
	return &redis.Options{
		Addr:                       addr,
		ClientName:                 o.ClientName,
		Dialer:                     o.Dialer,
		OnConnect:                  o.OnConnect,
		Protocol:                   o.Protocol,
		Username:                   o.Username,
		Password:                   o.Password,
		CredentialsProvider:        o.CredentialsProvider,
		CredentialsProviderContext: o.CredentialsProviderContext,
		DialTimeout:                o.DialTimeout,
		ReadTimeout:                o.ReadTimeout,
		WriteTimeout:               o.WriteTimeout,
		TLSConfig:                  o.TLSConfig,
		DisableIdentity:            o.DisableIdentity,
		PoolSize:                   1, // only the pub/sub connection is used
	}
}
