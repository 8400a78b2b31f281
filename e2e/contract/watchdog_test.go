package contract

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// watchdog kills a service whose RSS passes its start plus hardCap, checking every 50 ms. The
// fuzzer hunts for requests that make a process grow without bound (a loop that appends until the
// machine runs out of memory): without it, one such draw would take down the shared machine
// before the request's own timeout even fires. The kill is recorded on the service, so the draw
// fails naming it, and the next draw restarts the process.
type watchdog struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// startWatchdog watches services until stop.
func startWatchdog(hardCap int64, services ...*service) *watchdog {
	ctx, cancel := context.WithCancel(context.Background())
	w := &watchdog{cancel: cancel}
	w.wg.Add(1)
	go func() { // exits when stop cancels ctx
		defer w.wg.Done()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			for _, s := range services {
				rss, err := s.rss()
				if base := s.base(); err == nil && base > 0 && rss-base > hardCap {
					s.kill(fmt.Sprintf("RSS %d MiB, %d MiB above its start (the cap is %d MiB)", rss>>20, (rss-base)>>20, hardCap>>20))
				}
			}
		}
	}()
	return w
}

// stop ends the watch and waits for its goroutine.
func (w *watchdog) stop() {
	w.cancel()
	w.wg.Wait()
}
