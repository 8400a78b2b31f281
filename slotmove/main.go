// Command slotmove moves one Redis Cluster hash slot, with all its keys, to another master in as
// few MIGRATE calls as it can (see package slotmove for why not `redis-cli --cluster reshard`):
//
//	slotmove -seed 10.0.0.1:6379 -post 42 -to 10.0.0.4:6379
//	slotmove -seed 10.0.0.1:6379 -slot 8000 -to 10.0.0.4:6379
//
// -post moves the slot of a post (every key of a post shares its slot, through the {post} hash
// tag). It prints one line: what moved, in how many calls, and how long the slot was migrating,
// which is how long likes of the posts in it waited. docs/SCALING.md says when to use it.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/likes/likes/pkg/rediskeys"
	"github.com/likes/likes/slotmove/internal/slotmove"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "slotmove:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("slotmove", flag.ContinueOnError)
	seed := fs.String("seed", "", "any node of the cluster (host:port)")
	to := fs.String("to", "", "the master to move the slot to (host:port, as CLUSTER NODES lists it)")
	slot := fs.Int("slot", -1, "the slot to move (or -post)")
	post := fs.String("post", "", "move the slot of this post id (or -slot)")
	prefix := fs.String("prefix", rediskeys.DefaultPrefix, "key prefix of the deployment (REDIS_PREFIX), with -post")
	batch := fs.Int("batch", slotmove.DefaultBatch, "most keys per MIGRATE call")
	timeout := fs.Duration("timeout", slotmove.DefaultTimeout, "MIGRATE timeout per batch")
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch {
	case *seed == "" || *to == "":
		return fmt.Errorf("-seed and -to are required")
	case (*slot >= 0) == (*post != ""):
		return fmt.Errorf("give one of -slot and -post")
	}
	if *post != "" {
		s, err := postSlot(ctx, *seed, rediskeys.New(*prefix).Count(*post))
		if err != nil {
			return err
		}
		*slot = s
	}
	res, err := slotmove.Move(ctx, *seed, *slot, *to, slotmove.Options{Batch: *batch, Timeout: *timeout})
	if res.From == res.To && err == nil {
		fmt.Fprintf(out, "slot %d is already on %s\n", res.Slot, res.To)
		return nil
	}
	fmt.Fprintf(out, "slot %d from %s to %s: %d keys in %d MIGRATE calls; migrating for %s\n",
		res.Slot, res.From, res.To, res.Keys, res.Migrates, res.Moving.Round(time.Microsecond))
	return err
}

// postSlot asks the cluster for the slot of key (any key of the post: they share its hash tag).
func postSlot(ctx context.Context, seed, key string) (int, error) {
	c := redis.NewClient(&redis.Options{Addr: seed})
	defer c.Close()
	n, err := c.ClusterKeySlot(ctx, key).Result()
	if err != nil {
		return 0, fmt.Errorf("slot of %s: %w", key, err)
	}
	return int(n), nil
}
