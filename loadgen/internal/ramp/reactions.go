package ramp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// postsPerRead is how many posts one GET /counts names: the writer's default MAX_POSTS_PER_READ.
const postsPerRead = 100

// reactionTotals returns each post's stored reactions, all kinds added up, from the writer's
// GET /counts.
func (r *Ramp) reactionTotals(ctx context.Context) ([]int64, error) {
	out := make([]int64, len(r.posts))
	index := make(map[string]int, len(r.posts))
	for p, id := range r.posts {
		index[id] = p
	}
	for lo := 0; lo < len(r.posts); lo += postsPerRead {
		chunk := r.posts[lo:min(lo+postsPerRead, len(r.posts))]
		req, err := http.NewRequestWithContext(ctx, http.MethodGet,
			r.cfg.Writer+"/counts?posts="+url.QueryEscape(strings.Join(chunk, ",")), nil)
		if err != nil {
			return nil, err
		}
		resp, err := r.client.Do(req)
		if err != nil {
			return nil, fmt.Errorf("writer counts: %w", err)
		}
		var body struct {
			Posts []struct {
				PostID    string           `json:"post_id"`
				Reactions map[string]int64 `json:"reactions"`
			} `json:"posts"`
		}
		err = json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&body)
		resp.Body.Close()
		switch {
		case resp.StatusCode != http.StatusOK:
			return nil, fmt.Errorf("writer counts: status %d%s", resp.StatusCode, readRefusedHint(resp.StatusCode))
		case err != nil:
			return nil, fmt.Errorf("writer counts: %w", err)
		}
		for _, p := range body.Posts {
			i, ok := index[p.PostID]
			if !ok {
				continue
			}
			for _, n := range p.Reactions {
				out[i] += n
			}
		}
	}
	return out, nil
}
