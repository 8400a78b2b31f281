package redistest

import (
	"context"
	"testing"
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
