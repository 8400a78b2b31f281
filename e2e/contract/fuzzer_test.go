package contract

import (
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/likes/likes/pkg/ids"
	"github.com/likes/likes/testkit/apicheck"
	"github.com/likes/likes/testkit/clienttest"
)

// fuzzer holds what every draw shares.
type fuzzer struct {
	ops      []*operation
	weighted []*operation // ops, each as often as it has parameters, plus once
	services []*service
	bases    map[string]string // target -> base URL
	fx       *fixtures
	ids      *identities
	client   *http.Client

	t        *testing.T
	start    time.Time
	sent     int
	failures int
	findings []*finding             // -contract.collect
	writes   int                    // 2xx replies to a method other than GET and HEAD: what may cost Redis memory
	counts   map[string]map[int]int // operation -> status -> replies
}

// newFuzzer loads the documents, lists their operations and makes the fixtures: sessions, and a
// like of every fixture post by every session, so that reads find data.
func newFuzzer(t *testing.T, writer, fanout *service) *fuzzer {
	t.Helper()
	f := &fuzzer{t: t, services: []*service{writer, fanout}, bases: map[string]string{"writer": writer.url, "fanout": fanout.url},
		client: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}, counts: map[string]map[int]int{},
		fx: &fixtures{posts: []string{"p1", "p2", "p3", "p-4", "post_5", "42"}, kinds: strings.Split(ids.DefaultReactionKinds, ","), now: time.Now()}, ids: &identities{admin: adminToken}}
	t.Cleanup(f.client.CloseIdleConnections)
	f.ops = append(operations("writer", apicheck.Writer()), operations("fanout", apicheck.Fanout())...)
	if *opsFilter != "" {
		re, err := regexp.Compile(*opsFilter)
		if err != nil {
			t.Fatalf("-contract.ops: %v", err)
		}
		f.ops = slices.DeleteFunc(f.ops, func(op *operation) bool { return !re.MatchString(op.String()) })
	}
	slices.SortFunc(f.ops, func(a, b *operation) int { return strings.Compare(a.String(), b.String()) })
	if len(f.ops) == 0 {
		t.Fatal("the documents have no operations")
	}
	for _, op := range f.ops { // an operation is drawn 1 + its parameters times as often as /healthz
		for range 1 + len(op.params) {
			f.weighted = append(f.weighted, op)
		}
	}
	t.Cleanup(clienttest.CloseIdleConnections)
	for range 4 {
		s, err := clienttest.TakeSession(writer.url)
		if err != nil {
			t.Fatal(err)
		}
		f.ids.sessions = append(f.ids.sessions, s.Token)
		f.fx.users = append(f.fx.users, s.UserID)
		for _, p := range f.fx.posts {
			if code, _, err := clienttest.TryLikeAs(writer.url, p, s); err != nil || code != http.StatusOK {
				t.Fatalf("fixture like of %s: %d %v", p, code, err)
			}
		}
	}
	return f
}

func (f *fuzzer) serviceOf(c *call) *service {
	if c.op.target == "fanout" {
		return f.services[1]
	}
	return f.services[0]
}

// health describes each service's state for a failure's log.
func (f *fuzzer) health() string {
	var b strings.Builder
	for _, s := range f.services {
		state := s.health()
		if state == "" {
			rss, _ := s.rss()
			state = fmt.Sprintf("running, RSS %d MiB (%+d MiB from its start)", rss>>20, (rss-s.base())>>20)
		}
		fmt.Fprintf(&b, "  %s: %s\n", s.name, state)
	}
	return b.String()
}

// record counts a reply, and a write that may cost Redis memory.
func (f *fuzzer) record(c *call, r reply) {
	if r.status/100 == 2 && c.op.method != http.MethodGet && c.op.method != http.MethodHead {
		f.writes++
	}
	k := c.op.String()
	if f.counts[k] == nil {
		f.counts[k] = map[int]int{}
	}
	f.counts[k][r.status]++ // 0: the connection was reset (refusedHead)
}

// summary lists the replies by operation and status: which operations the draws reached past
// their validation (a 2xx), and which only ever answered 4xx.
func (f *fuzzer) summary() string {
	var b strings.Builder
	for _, op := range f.ops {
		k := op.String()
		codes := make([]int, 0, len(f.counts[k]))
		for code := range f.counts[k] {
			codes = append(codes, code)
		}
		slices.Sort(codes)
		fmt.Fprintf(&b, "  %-45s", k)
		for _, code := range codes {
			fmt.Fprintf(&b, " %d:%d", code, f.counts[k][code])
		}
		b.WriteByte('\n')
	}
	return b.String()
}
