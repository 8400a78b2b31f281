package redistest

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/likes/likes/testkit/poll"
)

// StartReplica starts a redis-server that replicates primary (--replicaof), as Start does
// otherwise, and waits until it has synced. Restart brings it back as primary's replica; call
// WaitReplicating after it.
func StartReplica(t testing.TB, primary *Server, extra ...string) *Server {
	t.Helper()
	// A replica's first sync would otherwise wait 5 s for other replicas to share it.
	if _, err := primary.Do("CONFIG", "SET", "repl-diskless-sync-delay", "0"); err != nil {
		t.Fatalf("primary %s: %v", primary.Addr, err)
	}
	s := Start(t, append([]string{"--replicaof", "127.0.0.1", strconv.Itoa(primary.port)}, extra...)...)
	s.WaitReplicating(t)
	return s
}

// WaitReplicating waits until s, a replica, has finished its sync and confirms its primary's
// writes (WAIT), failing t after 30 seconds. The replica's own "link up" is not enough: for up to
// a second after a sync it does not answer the primary's requests for acknowledgement, and a
// WAIT then times out (seen one run in two).
func (s *Server) WaitReplicating(t testing.TB) {
	t.Helper()
	if err := poll.For(30*time.Second, s.replicating); err != nil {
		t.Fatalf("replica not in sync after 30s: %v", err)
	}
}

func (s *Server) replicating() error {
	info, err := replicationInfo(s)
	if err != nil {
		return err
	}
	if info["master_link_status"] != "up" || info["master_sync_in_progress"] != "0" {
		return fmt.Errorf("replica %s: link %q, sync in progress %q", s.Addr,
			info["master_link_status"], info["master_sync_in_progress"])
	}
	primary := redis.NewClient(&redis.Options{Addr: net.JoinHostPort(info["master_host"], info["master_port"])})
	defer primary.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// A PUBLISH is a write that replicas get and that leaves no key; WAIT, on the same connection
	// (a pipeline), asks for it to be acknowledged.
	var acked *redis.Cmd
	if _, err := primary.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Publish(ctx, "redistest:replicating", s.Addr)
		acked = p.Do(ctx, "WAIT", 1, 200)
		return nil
	}); err != nil {
		return fmt.Errorf("primary of %s: %w", s.Addr, err)
	}
	if n, _ := acked.Int64(); n < 1 {
		return fmt.Errorf("replica %s does not acknowledge its primary's writes yet", s.Addr)
	}
	return nil
}
