package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/likes/likes/testkit/clienttest"
	"github.com/likes/likes/testkit/redistest"
)

// abuseSiteSecret and abuseAudience are the site's own JWTs in TestIdentityAbuse.
const (
	abuseSiteSecret = "e2e-abuse-site-secret-at-least-32-bytes"
	abuseAudience   = "likes-api"
)

// TestIdentityAbuse is one client address attacking a writer in the default identity mode
// (sessions, beside the site's JWTs with an audience; X-User-ID believed from no one), on one
// Redis and on a Cluster: forged and foreign tokens are 401, a thousand sessions at once get 429
// past SESSION_RATE's burst, ten thousand likes by one user count once, and none of it changes
// any other user's likes or counts.
func TestIdentityAbuse(t *testing.T) {
	for _, backend := range []struct {
		name  string
		start func(t *testing.T) (redisURL string, env []string)
	}{
		{"single", func(t *testing.T) (string, []string) { return redistest.Start(t).URL, nil }},
		{"cluster", func(t *testing.T) (string, []string) {
			c := redistest.StartCluster(t, 3)
			return c.Nodes[0].URL, []string{"REDIS_CLUSTER_ADDRS=" + c.AddrList()}
		}},
	} {
		t.Run(backend.name, func(t *testing.T) {
			redisURL, env := backend.start(t)
			// The writer's own defaults for the per-address limits: an empty LIKE_ADDR_RATE is
			// unset, undoing the "off" StartWriter gives tests that like from one address.
			writer := StartWriter(t, redisURL, append(env, "TRUST_USER_HEADER=false", "LIKE_ADDR_RATE=",
				"AUTH_JWT_SECRET="+abuseSiteSecret, "AUTH_JWT_AUDIENCE="+abuseAudience)...)
			runAbuse(t, writer.URL)
		})
	}
}

func runAbuse(t *testing.T, writerURL string) {
	// Two honest users first: one with the site's token, one with a session.
	site := signTokenFor(t, abuseSiteSecret, "bystander", abuseAudience)
	victim, err := clienttest.TakeSession(writerURL)
	if err != nil {
		t.Fatal(err)
	}
	for _, like := range []struct{ post, token string }{{"target", site}, {"elsewhere", site}, {"target", victim.Token}} {
		if status, r, err := clienttest.TryLikeBearer(writerURL, like.post, like.token); err != nil || status != http.StatusOK || !r.Liked {
			t.Fatalf("an honest like of %s: %d %+v %v; want 200 liked", like.post, status, r, err)
		}
	}
	attacker, err := clienttest.TakeSession(writerURL)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("forged and foreign identities are 401", func(t *testing.T) {
		if status, _, err := clienttest.TryLike(writerURL, "target", "bystander"); err != nil || status != http.StatusUnauthorized {
			t.Errorf("a like naming bystander in X-User-ID: %d %v; want 401", status, err)
		}
		for name, token := range forgedTokens(t, victim.Token) {
			if status, _, err := clienttest.TryLikeBearer(writerURL, "target", token); err != nil || status != http.StatusUnauthorized {
				t.Errorf("a like with %s: %d %v; want 401", name, status, err)
			}
		}
		if n := clienttest.CountOf(t, writerURL, "target"); n != 2 {
			t.Errorf("target counts %d after the refused likes; want 2", n)
		}
	})

	t.Run("a thousand sessions at once get 429 past the burst", func(t *testing.T) {
		const tries, burst = 1000, 60 // SESSION_RATE's default: 30 a minute, burst 60
		statuses, elapsed := takeSessions(t, writerURL, tries)
		// Two sessions of the burst went to the victim and the attacker above; the rate refills
		// one every 2 s meanwhile.
		refill := int(elapsed/(2*time.Second)) + 1
		if got := statuses[http.StatusOK]; got < burst-2-1 || got > burst-2+refill {
			t.Errorf("%d of %d sessions issued in %v; want the burst's %d (+%d refilled)", got, tries, elapsed.Round(time.Millisecond), burst-2, refill)
		}
		if got := statuses[http.StatusOK] + statuses[http.StatusTooManyRequests]; got != tries {
			t.Errorf("answers %v; want only 200 and 429", statuses)
		}
	})

	t.Run("ten thousand likes by one user count once", func(t *testing.T) {
		const likes, workers = 10000, 32
		var next, liked, refused, other atomic.Int64
		var wg sync.WaitGroup
		for range workers {
			wg.Add(1)
			go func() { // exits when the likes are all sent
				defer wg.Done()
				for next.Add(1) <= likes {
					status, r, err := clienttest.TryLikeAs(writerURL, "target", attacker)
					switch {
					case err == nil && status == http.StatusOK && r.Liked:
						liked.Add(1)
					case err == nil && status == http.StatusOK:
					case err == nil && status == http.StatusTooManyRequests: // LIKE_ADDR_RATE
						refused.Add(1)
					default:
						other.Add(1)
					}
				}
			}()
		}
		wg.Wait()
		if liked.Load() != 1 || other.Load() != 0 {
			t.Errorf("%d likes answered liked:true and %d neither 200 nor 429; want 1 and 0", liked.Load(), other.Load())
		}
		if n := clienttest.CountOf(t, writerURL, "target"); n != 3 {
			t.Errorf("target counts %d after 10,000 likes by one user; want 3", n)
		}
		t.Logf("%d of %d likes refused by the per-address limit", refused.Load(), likes)
	})

	t.Run("nobody else's likes changed", func(t *testing.T) {
		for _, who := range []struct {
			name, token string
			want        map[string]readPost
		}{
			{"bystander", site, map[string]readPost{"target": {"target", 3, true}, "elsewhere": {"elsewhere", 1, true}}},
			{"victim", victim.Token, map[string]readPost{"target": {"target", 3, true}, "elsewhere": {"elsewhere", 1, false}}},
		} {
			got := readLikesAs(t, writerURL, who.token, "target,elsewhere")
			for post, want := range who.want {
				if got[post] != want {
					t.Errorf("%s reads %s as %+v; want %+v", who.name, post, got[post], want)
				}
			}
		}
	})
}

// forgedTokens are bearer tokens that must name nobody: made with the wrong key, for another
// audience, without one, altered after signing, or unsigned. real is a genuine session token,
// whose key id and claims the forgeries borrow.
func forgedTokens(t *testing.T, real string) map[string]string {
	t.Helper()
	parsed, _, err := jwt.NewParser().ParseUnverified(real, jwt.MapClaims{})
	if err != nil {
		t.Fatal(err)
	}
	claims := parsed.Claims.(jwt.MapClaims)
	sign := func(method jwt.SigningMethod, key any, c jwt.MapClaims) string {
		tok := jwt.NewWithClaims(method, c)
		tok.Header["kid"] = parsed.Header["kid"]
		s, err := tok.SignedString(key)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	asMallory := jwt.MapClaims{}
	for k, v := range claims {
		asMallory[k] = v
	}
	asMallory["sub"] = "mallory"
	head, _, _ := strings.Cut(real, ".")
	_, sig, _ := strings.Cut(real[len(head)+1:], ".")
	payload, err := json.Marshal(asMallory)
	if err != nil {
		t.Fatal(err)
	}
	return map[string]string{
		"a session token for another user, signed with a guessed key": sign(jwt.SigningMethodHS256, []byte("a-guessed-session-key-of-32-bytes!!"), asMallory),
		"a session token with its user changed after signing":         head + "." + base64.RawURLEncoding.EncodeToString(payload) + "." + sig,
		"an unsigned session token (alg none)":                        sign(jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, asMallory),
		"a session token signed with the site's key":                  sign(jwt.SigningMethodHS256, []byte(abuseSiteSecret), asMallory),
		"a site token signed with a guessed key":                      signTokenFor(t, "a-guessed-site-secret-of-32-bytes!!!", "bystander", abuseAudience),
		"a site token for another audience":                           signTokenFor(t, abuseSiteSecret, "bystander", "billing-api"),
		"a site token without an audience":                            signTokenFor(t, abuseSiteSecret, "bystander", ""),
		"no token at all":                                             "",
		"garbage":                                                     "not-a-token",
	}
}

// takeSessions asks for n sessions at once from this one address and returns how many got each
// status, and how long it took.
func takeSessions(t *testing.T, writerURL string, n int) (map[int]int, time.Duration) {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 50}}
	defer client.CloseIdleConnections()
	var mu sync.Mutex
	statuses := map[int]int{}
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range 50 {
		wg.Add(1)
		go func() { // exits when the n requests are sent
			defer wg.Done()
			for next.Add(1) <= int64(n) {
				status := -1
				if resp, err := client.Post(writerURL+"/session", "", nil); err == nil {
					status = resp.StatusCode
					if status == http.StatusTooManyRequests && resp.Header.Get("Retry-After") == "" {
						status = -2 // a 429 must say when to come back
					}
					resp.Body.Close()
				}
				mu.Lock()
				statuses[status]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return statuses, time.Since(start)
}

// readLikesAs reads posts (comma-separated) with GET /likes as the bearer of token.
func readLikesAs(t *testing.T, writerURL, token, posts string) map[string]readPost {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, writerURL+"/likes?posts="+posts, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r struct{ Posts []readPost }
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /likes?posts=%s: %d %v", posts, resp.StatusCode, err)
	}
	got := map[string]readPost{}
	for _, p := range r.Posts {
		got[p.PostID] = p
	}
	return got
}
