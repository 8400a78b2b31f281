package redisconn

import (
	"context"
	"testing"
	"time"

	"github.com/likes/likes/testkit/redistest"
)

func TestPingClusterSucceedsWhileAnyMasterAnswers(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	c, err := New(Config{ClusterAddrs: cl.Addrs(), Timeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	if err := Ping(ctx, c); err != nil {
		t.Fatalf("healthy cluster: %v", err)
	}
	cl.Kill(0)
	if err := Ping(ctx, c); err != nil {
		t.Errorf("one master down: %v; want ready (the other shards serve)", err)
	}
}

func TestPingSingle(t *testing.T) {
	rs := redistest.Start(t)
	c, err := New(Config{URL: rs.URL, Timeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := Ping(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	rs.Kill()
	if err := Ping(context.Background(), c); err == nil {
		t.Error("ping succeeded with Redis down")
	}
}
