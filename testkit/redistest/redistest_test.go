package redistest

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestStartKillRestartWithAOF(t *testing.T) {
	s := Start(t, "--appendonly", "yes", "--appendfsync", "always")
	ctx := context.Background()
	c := s.Client(t)
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("set: %v", err)
	}
	s.Kill()
	if err := c.Ping(ctx).Err(); err == nil {
		t.Fatal("ping succeeded after kill; want error")
	}
	s.Restart()
	got, err := c.Get(ctx, "k").Result()
	if err != nil || got != "v" {
		t.Errorf("after restart got %q, %v; want v from the append-only file", got, err)
	}
}

// TestReplica: a write that WAIT says one replica has is on the replica, and after a restart the
// replica syncs again.
func TestReplica(t *testing.T) {
	primary := Start(t)
	replica := StartReplica(t, primary)
	ctx := context.Background()
	p := primary.Client(t)
	for _, step := range []string{"first sync", "after a restart"} {
		if err := p.Set(ctx, "k", step, 0).Err(); err != nil {
			t.Fatal(err)
		}
		if n, err := p.Wait(ctx, 1, 5*time.Second).Result(); err != nil || n != 1 {
			t.Fatalf("%s: WAIT 1 = %d, %v; want 1", step, n, err)
		}
		if got, err := replica.Client(t).Get(ctx, "k").Result(); err != nil || got != step {
			t.Errorf("%s: replica has %q, %v; want %q", step, got, err, step)
		}
		replica.Restart()
		replica.WaitReplicating(t)
	}
}

// TestSignalFreezesAndThaws: a server frozen with SIGSTOP keeps its port but answers nothing;
// after SIGCONT it answers again.
func TestSignalFreezesAndThaws(t *testing.T) {
	s := Start(t)
	c := redis.NewClient(&redis.Options{Addr: s.Addr, ReadTimeout: 200 * time.Millisecond, MaxRetries: -1})
	defer c.Close()
	ctx := context.Background()
	s.Signal(syscall.SIGSTOP)
	if err := c.Ping(ctx).Err(); err == nil {
		t.Fatal("PING to a frozen server answered; want a timeout")
	}
	s.Signal(syscall.SIGCONT)
	if err := c.Ping(ctx).Err(); err != nil {
		t.Errorf("PING after SIGCONT: %v; want PONG", err)
	}
}
