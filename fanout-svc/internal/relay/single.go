package relay

import (
	"context"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
)

// singleBus subscribes with classic SUBSCRIBE over one connection to one Redis server. go-redis
// reconnects and resubscribes by itself; Relay.confirm notices the repeated confirmations.
type singleBus struct {
	r  *Relay
	rc receiver
}

func newSingleBus(r *Relay, client redis.UniversalClient) *singleBus {
	return &singleBus{r: r, rc: receiver{ps: client.Subscribe(context.Background()), log: r.log}}
}

func (b *singleBus) subscribe(ctx context.Context, ch string) error {
	return b.rc.ps.Subscribe(ctx, ch)
}

func (b *singleBus) unsubscribe(ctx context.Context, chs []string) {
	if err := b.rc.ps.Unsubscribe(ctx, chs...); err != nil {
		b.r.log.Debug("unsubscribe", zap.Int("channels", len(chs)), zap.Error(err))
	}
}

// run also carries the creations channel (created.go) on the same connection, so that a node
// holds one pub/sub connection to its Redis; its messages and confirmations go to handleCreated.
func (b *singleBus) run(ctx context.Context) {
	defer b.rc.ps.Close()
	created := b.r.keys.Created()
	b.r.subscribeCreated(ctx, b.rc.ps)
	b.rc.loop(ctx, &b.r.stats, func(msg any) {
		switch m := msg.(type) {
		case *redis.Message:
			if m.Channel == created {
				b.r.handleCreated(msg)
				return
			}
		case *redis.Subscription:
			if m.Channel == created {
				b.r.handleCreated(msg)
				return
			}
		}
		b.r.handle(msg)
	}, nil)
}

func (b *singleBus) healthy() bool { return b.rc.up.Load() }
