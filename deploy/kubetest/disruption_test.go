package kubetest

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/likes/likes/testkit/clienttest"
	"github.com/likes/likes/testkit/poll"
)

// audience connects n viewers of post through the fanout Service.
func audience(t *testing.T, d deployment, post string, n int) []*clienttest.Viewer {
	t.Helper()
	viewers := make([]*clienttest.Viewer, n)
	for i := range viewers {
		viewers[i] = clienttest.Watch(t, d.fanout+"/sse/"+post)
	}
	poll.Until(t, 30*time.Second, fmt.Sprintf("%d viewers of %s to connect", n, post), func() bool {
		for _, v := range viewers {
			if !v.Connected() {
				return false
			}
		}
		return true
	})
	return viewers
}

// session takes a writer session for a new user. The suite's users all come from this machine's
// one address, which the rollout's flow leaves with its SESSION_RATE spent (30 a minute, burst
// 60): it waits for the bucket to refill rather than fail.
func session(t *testing.T, d deployment) clienttest.Session {
	t.Helper()
	var s clienttest.Session
	await(t, time.Minute, time.Second, "a session from the writer", func() (err error) {
		s, err = clienttest.TakeSession(d.writer)
		return err
	})
	return s
}

// closeAll disconnects the viewers.
func closeAll(viewers []*clienttest.Viewer) {
	for _, v := range viewers {
		v.Close()
	}
}

// awaitConverged waits until every viewer shows the writer's count of post and returns how long
// that took.
func awaitConverged(t *testing.T, d deployment, post string, viewers []*clienttest.Viewer, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	want := clienttest.CountOf(t, d.writer, post)
	clienttest.WaitCount(t, within, post, want, viewers...)
	return time.Since(start)
}

// stepRollout restarts fanout-svc Pod by Pod (`kubectl rollout restart`) while users like and
// watch: viewers move through each Pod's drain window to the others, no acknowledged like is
// lost, and every viewer ends on the final count.
func stepRollout(t *testing.T, d deployment, got *figures) {
	const post = "kube-rollout"
	viewers := audience(t, d, post, 40)
	defer closeAll(viewers)
	flow := clienttest.StartSessionLikeFlow(t, d.writer, post, 100*time.Millisecond)
	start := time.Now()
	mustKubectl(t, time.Minute, "-n", namespace, "rollout", "restart", "deployment/fanout-svc")
	mustKubectl(t, 10*time.Minute, "-n", namespace, "rollout", "status", "deployment/fanout-svc", "--timeout=9m")
	rollout := time.Since(start)
	awaitFanout(t, 4, 2*time.Minute)
	drained := time.Since(start)
	flow.Stop()
	acked, count := flow.Sent(), clienttest.CountOf(t, d.writer, post)
	if count < acked {
		t.Fatalf("rollout: %d likes acknowledged, the count is %d: acknowledged likes were lost", acked, count)
	}
	converged := awaitConverged(t, d, post, viewers, 30*time.Second)
	// Every Pod was replaced, so every viewer moves at least once; the last to leave an old Pod
	// may still be waiting out its retry delay here.
	poll.Until(t, 30*time.Second, "every viewer to move off its replaced Pod and connect again", func() bool {
		for _, v := range viewers {
			if _, _, connects := v.Stats(); connects < 2 || !v.Connected() {
				return false
			}
		}
		return true
	})
	reconnects := 0
	for _, v := range viewers {
		_, backwards, connects := v.Stats()
		if backwards > 0 {
			t.Errorf("rollout: a viewer saw %d updates go backwards", backwards)
		}
		reconnects += connects - 1
	}
	// The flow's refused attempts are mostly POST /session beyond the writer's SESSION_RATE (30 a
	// minute, burst 60, per address): every user of this flow comes from this one machine.
	got.add(t, "rollout: 4 new Pods available %v after kubectl rollout restart, the old ones drained and gone at %v; %d likes acknowledged (%d attempts refused or failed, retried by the same user), count %d; %d reconnects over 40 viewers; all on the final count %v after the likes stopped",
		rollout.Round(time.Second), drained.Round(time.Second), acked, flow.Failed(), count, reconnects, converged.Round(time.Millisecond))
}

// evict asks the Eviction API to evict a Pod, as `kubectl drain` does; it returns the API's
// refusal, if any.
func evict(name string) error {
	body := fmt.Sprintf(`{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":%q,"namespace":%q}}`, name, namespace)
	_, err := kubectl(time.Minute, body, "create", "--raw", "/api/v1/namespaces/"+namespace+"/pods/"+name+"/eviction", "-f", "-")
	return err
}

// stepEvict: the fanout PodDisruptionBudget (maxUnavailable 1) lets one eviction through and
// refuses a second while the first Pod's replacement is not Ready; once it is, the second goes.
func stepEvict(t *testing.T, got *figures) {
	fanout := awaitFanout(t, 4, time.Minute)
	first, second := fanout[0].Metadata.Name, fanout[1].Metadata.Name
	// The budget's status follows the Pods a moment later (the disruption controller): the first
	// eviction may be refused until it counts the four Ready.
	var start time.Time
	await(t, time.Minute, 250*time.Millisecond, "the first eviction", func() error {
		start = time.Now()
		return evict(first)
	})
	err := evict(second)
	if err == nil {
		t.Fatalf("evict %s right after %s: allowed; want the PodDisruptionBudget to refuse it", second, first)
	}
	if !strings.Contains(err.Error(), "disruption budget") {
		t.Fatalf("evict %s: %v; want a refusal that names the disruption budget", second, err)
	}
	var admitted time.Duration
	await(t, 3*time.Minute, 250*time.Millisecond, "the second eviction, once the replacement is Ready", func() error {
		if err := evict(second); err != nil {
			return err
		}
		admitted = time.Since(start)
		return nil
	})
	awaitFanout(t, 4, 3*time.Minute)
	got.add(t, "evict: the second eviction refused by the PodDisruptionBudget, admitted %v after the first (its replacement Ready); 4 Pods Ready again %v after the first",
		admitted.Round(100*time.Millisecond), time.Since(start).Round(time.Second))
}

// stepKill deletes the fanout Pod that holds the most viewers, at once (no grace, no drain),
// and proves its viewers moved before it sends a like: each viewer is placed on its Pod as it
// connects (the one Pod whose own count of viewers, read at its Pod IP, went up by one), the
// victim's viewers are seen from the client side to lose their stream and connect again, and the
// Pods still there (the others and the replacement) then hold all 40. Only then goes the like,
// and every viewer must show it: a like sent while the killed Pod's container may still run
// could reach its viewers from that Pod, and prove nothing about the move.
func stepKill(t *testing.T, d deployment, got *figures) {
	const (
		post = "kube-kill"
		n    = 40
	)
	fanout := awaitFanout(t, 4, time.Minute)
	viewers, on := placedAudience(t, d, post, n, fanout)
	defer closeAll(viewers)
	held := map[string]int{}
	for _, name := range on {
		held[name]++
	}
	victim := fanout[0]
	for _, p := range fanout {
		if held[p.Metadata.Name] > held[victim.Metadata.Name] {
			victim = p
		}
	}
	var moving []*clienttest.Viewer
	for i, v := range viewers {
		if on[i] == victim.Metadata.Name {
			moving = append(moving, v)
		}
	}
	if len(moving) == 0 {
		t.Fatalf("no viewer on any fanout Pod: %v", held)
	}
	before := make([]int, len(viewers))
	for i, v := range viewers {
		_, _, before[i] = v.Stats()
	}
	s := session(t, d) // before the kill, so that the time measured is the viewers' alone
	start := time.Now()
	mustKubectl(t, time.Minute, "-n", namespace, "delete", "pod", victim.Metadata.Name, "--grace-period=0", "--force")

	await(t, 30*time.Second, 100*time.Millisecond, fmt.Sprintf("the %d viewers of %s to connect again", len(moving), victim.Metadata.Name), func() error {
		for i, v := range viewers {
			if _, _, c := v.Stats(); on[i] == victim.Metadata.Name && (c <= before[i] || !v.Connected()) {
				return fmt.Errorf("viewer %d: %d connects (%d before the kill), connected %v", i, c, before[i], v.Connected())
			}
		}
		return nil
	})
	reconnected := time.Since(start)
	var elsewhere map[string]float64
	await(t, 30*time.Second, 250*time.Millisecond, fmt.Sprintf("the Pods other than %s to hold all %d viewers", victim.Metadata.Name, n), func() error {
		elsewhere = map[string]float64{}
		total := 0.0
		for _, p := range pods(t, "fanout-svc") {
			if p.Metadata.Name == victim.Metadata.Name || p.Status.PodIP == "" || p.Metadata.DeletionTimestamp != nil {
				continue
			}
			if c, err := viewersOn(p); err == nil {
				elsewhere[p.Metadata.Name] = c
				total += c
			}
		}
		if total != n {
			return fmt.Errorf("%v viewers on the Pods still there (%v); want %d", total, elsewhere, n)
		}
		return nil
	})
	stayed := 0
	for i, v := range viewers {
		if _, _, c := v.Stats(); on[i] != victim.Metadata.Name && c == before[i] {
			stayed++
		}
	}
	moved := time.Since(start)

	if code, _, err := clienttest.TryLikeAs(d.writer, post, s); err != nil || code != 200 {
		t.Fatalf("like after the viewers moved: %d %v", code, err)
	}
	liked := time.Now()
	want := clienttest.CountOf(t, d.writer, post)
	clienttest.WaitCount(t, 10*time.Second, post, want, viewers...)
	delivered := time.Since(liked)
	awaitFanout(t, 4, 3*time.Minute)
	got.add(t, "kill: Pod %s with %d of %d viewers deleted with --grace-period=0 --force; all %d connected again %v later, the Pods still there holding all %d at %v (%v; %d of the other %d viewers kept their stream); a like sent then on every viewer %v after it; 4 Pods Ready again %v after the kill",
		victim.Metadata.Name, len(moving), n, len(moving), reconnected.Round(time.Millisecond), n, moved.Round(time.Millisecond), elsewhere,
		stayed, n-len(moving), delivered.Round(time.Millisecond), time.Since(start).Round(time.Second))
}

// placedAudience connects n viewers of post through the fanout Service one at a time and returns
// them with the name of the Pod each landed on: the one Pod of fanout whose own viewer count
// went up by one when it connected (read at each Pod's IP, as nothing in the stream names its
// node). The step's earlier viewers must be gone: it waits for the Pods to hold none first.
func placedAudience(t *testing.T, d deployment, post string, n int, fanout []pod) ([]*clienttest.Viewer, []string) {
	t.Helper()
	counts := func() (map[string]float64, error) {
		c := map[string]float64{}
		for _, p := range fanout {
			v, err := viewersOn(p)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", p.Metadata.Name, err)
			}
			c[p.Metadata.Name] = v
		}
		return c, nil
	}
	var last map[string]float64
	await(t, 30*time.Second, 250*time.Millisecond, "the fanout Pods to hold no viewers", func() (err error) {
		if last, err = counts(); err != nil {
			return err
		}
		for name, c := range last {
			if c != 0 {
				return fmt.Errorf("%s holds %v viewers", name, c)
			}
		}
		return nil
	})
	viewers := make([]*clienttest.Viewer, n)
	on := make([]string, n)
	for i := range viewers {
		viewers[i] = clienttest.Watch(t, d.fanout+"/sse/"+post)
		await(t, 30*time.Second, 20*time.Millisecond, fmt.Sprintf("viewer %d to land on one Pod", i), func() error {
			if !viewers[i].Connected() {
				return errors.New("not connected")
			}
			now, err := counts()
			if err != nil {
				return err
			}
			var up []string
			for name, c := range now {
				switch {
				case c == last[name]+1:
					up = append(up, name)
				case c != last[name]:
					return fmt.Errorf("%s went from %v to %v viewers", name, last[name], c)
				}
			}
			if len(up) != 1 {
				return fmt.Errorf("Pods up by one: %v (before %v, now %v)", up, last, now)
			}
			on[i], last = up[0], now
			return nil
		})
	}
	return viewers, on
}

// stepRedisRestart deletes every Redis data Pod at once, as a node reboot or an operator's
// mistake would. Each comes back on its own volume (the claims of deploy/base's
// volumeClaimTemplates): the primary reloads its append-only file, so every acknowledged like is
// still counted, and the writers and fanout nodes find Redis again by themselves. On emptyDir,
// every like would be gone.
func stepRedisRestart(t *testing.T, d deployment, got *figures) {
	const posts = 10
	post := func(i int) string { return fmt.Sprint("kube-redis-", i) }
	s := session(t, d)
	for i := range posts {
		if code, reply, err := clienttest.TryLikeAs(d.writer, post(i), s); err != nil || code != 200 || reply.Count != 1 {
			t.Fatalf("like %s: %d %+v %v", post(i), code, reply, err)
		}
	}
	viewers := audience(t, d, post(0), 8)
	defer closeAll(viewers)
	start := time.Now()
	mustKubectl(t, 5*time.Minute, "-n", namespace, "delete", "pod", "-l", "app.kubernetes.io/name=redis", "--wait=true", "--timeout=4m")
	gone := time.Since(start)
	mustKubectl(t, 4*time.Minute, "-n", namespace, "rollout", "status", "statefulset/redis", "--timeout=3m")
	mustKubectl(t, 3*time.Minute, "-n", namespace, "wait", "--for=condition=Ready", "pod", "-l", "app.kubernetes.io/name=redis", "--timeout=2m")
	ready := time.Since(start)
	var answered time.Duration
	await(t, 2*time.Minute, 250*time.Millisecond, "the writer to count again after Redis came back", func() error {
		_, err := clienttest.TryCountOf(d.writer, post(0))
		answered = time.Since(start)
		return err
	})
	for i := range posts {
		if n := clienttest.CountOf(t, d.writer, post(i)); n != 1 {
			t.Fatalf("after every Redis Pod was deleted, %s counts %d; its acknowledged like is lost", post(i), n)
		}
	}
	// The same user again, then a new one: the first is already counted (the dedup set came back
	// too), the second reaches the viewers (the fanout nodes subscribed again). A like may get 503
	// while the replicas resync (a write needs one), and is retried by the same user.
	likeOnce := func(s clienttest.Session, want int64) {
		await(t, time.Minute, 250*time.Millisecond, "a like of "+post(0)+" after Redis came back", func() error {
			code, reply, err := clienttest.TryLikeAs(d.writer, post(0), s)
			if err != nil {
				return err
			}
			if code != 200 {
				return fmt.Errorf("like: %d", code)
			}
			if reply.Count != want {
				t.Fatalf("a like of %s after Redis came back counts %d; want %d", post(0), reply.Count, want)
			}
			return nil
		})
	}
	likeOnce(s, 1)
	likeOnce(session(t, d), 2)
	acked := time.Since(start)
	clienttest.WaitCount(t, time.Minute, post(0), 2, viewers...)
	got.add(t, "redis: all 3 data Pods deleted (gone in %v, each shutting down gracefully); Ready again on their volumes %v after the delete, the writer counting at %v with all %d acknowledged likes; a new like acknowledged at %v, on every viewer at %v",
		gone.Round(100*time.Millisecond), ready.Round(time.Second), answered.Round(100*time.Millisecond), posts, acked.Round(100*time.Millisecond), time.Since(start).Round(100*time.Millisecond))
}
