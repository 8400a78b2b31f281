package auth

import (
	"fmt"

	"github.com/likes/likes/pkg/sessiontoken"
)

// ErrReservedUser is a site JWT or an X-User-ID that names a user of the benchmark namespace
// (sessiontoken.BenchUserPrefix). It is a 401, as for any identity the writer does not accept.
var ErrReservedUser = fmt.Errorf("%w: user ids beginning with %q are reserved for load tests", ErrUnauthenticated, sessiontoken.BenchUserPrefix)

// notReserved refuses a user id from a site JWT or X-User-ID that only a benchmark token may
// name. Whoever holds a benchmark key (BENCH_SESSION_KEY_FILE) can like, unlike and read the likes
// of every user in that namespace, so a site or gateway user given such an id would be a real
// person that key could act for. They are refused whether benchmark mode is on or not: a user's
// standing must not change with a setting turned on for a load test and off again (and which may
// differ between replicas during a rollout), and a namespace that holds load-test users only is
// one whose data can be told apart, and removed, by its prefix. The writer's own sessions never
// fall in it (their ids begin with "anon-").
func notReserved(user string) error {
	if sessiontoken.IsBenchUser(user) {
		return ErrReservedUser
	}
	return nil
}
