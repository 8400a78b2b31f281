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

func (b *singleBus) run(ctx context.Context) {
	defer b.rc.ps.Close()
	b.rc.loop(ctx, &b.r.stats, b.r.handle, nil)
}

func (b *singleBus) healthy() bool { return b.rc.up.Load() }
