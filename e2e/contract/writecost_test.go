package contract

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/likes/likes/pkg/ids"
	"github.com/likes/likes/testkit/clienttest"
	"github.com/likes/likes/testkit/redistest"
)

// TestWriteCost measures what the fuzz's writes legitimately cost Redis, the figure its memory
// bound allows per write (redisPerWrite): the costliest write the API has, each one bringing a new
// post into existence (a like: count, version, dedup key, likers list, the user's index, the
// timeline's minute counter; a reaction: the post's reaction hash, its interval key and its
// timeline counter), by a few users, as the fuzz's writes are.
func TestWriteCost(t *testing.T) {
	rdb := redistest.Start(t)
	writer := startService(t, "writer-svc", append([]string{"REDIS_URL=" + rdb.URL}, writerEnv...)...)
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	t.Cleanup(client.CloseIdleConnections)
	rc := rdb.Client(t)
	t.Cleanup(clienttest.CloseIdleConnections)
	var tokens []string
	for range 4 {
		s, err := clienttest.TakeSession(writer.url)
		if err != nil {
			t.Fatal(err)
		}
		tokens = append(tokens, s.Token)
	}
	before, err := usedMemory(context.Background(), rc)
	if err != nil {
		t.Fatal(err)
	}
	kinds := strings.Split(ids.DefaultReactionKinds, ",")
	const posts = 200
	writes := 0
	for i := range posts {
		token := tokens[i%len(tokens)]
		post(t, client, fmt.Sprintf("%s/like/cost-%d", writer.url, i), token)
		post(t, client, fmt.Sprintf("%s/react/cost-r%d/%s", writer.url, i, kinds[i%len(kinds)]), token)
		writes += 2
	}
	after, err := usedMemory(context.Background(), rc)
	if err != nil {
		t.Fatal(err)
	}
	per := (after - before) / int64(writes)
	t.Logf("%d writes of new posts cost Redis %d KiB: %d bytes each (the fuzz's bound allows %d)", writes, (after-before)>>10, per, redisPerWrite)
	if per > redisPerWrite {
		t.Errorf("a write costs Redis %d bytes; want at most redisPerWrite, %d: the fuzz's memory bound would be too tight", per, redisPerWrite)
	}
}

// post sends a POST with an optional bearer and returns the body of its 200.
func post(t *testing.T, client *http.Client, url, token string) []byte {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: %d %s", url, resp.StatusCode, body)
	}
	return body
}
