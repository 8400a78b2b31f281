package ids

import (
	"errors"
	"fmt"
	"strings"
)

// Errors returned by ParsePostList besides ErrPostID; their text is safe to show to a client.
var (
	ErrNoPosts      = errors.New("no posts: give posts=a,b,c")
	ErrTooManyPosts = errors.New("too many posts")
)

// ParsePostList splits a comma-separated list of post ids (a `posts=` query parameter), checks
// every id and drops repeats, keeping the first occurrence's order. A list of more than max
// entries is refused before any id is looked at, so an absurd list costs nothing. The writer's
// reads and the fanout's multi-post streams both use it, so they accept exactly the same lists.
func ParsePostList(list string, max int) ([]string, error) {
	if list == "" {
		return nil, ErrNoPosts
	}
	if n := strings.Count(list, ",") + 1; n > max {
		return nil, fmt.Errorf("%w: %d given, at most %d", ErrTooManyPosts, n, max)
	}
	parts := strings.Split(list, ",")
	posts := make([]string, 0, len(parts))
	seen := make(map[string]bool, len(parts))
	for _, p := range parts {
		if err := ValidPostID(p); err != nil {
			return nil, err
		}
		if !seen[p] {
			seen[p] = true
			posts = append(posts, p)
		}
	}
	return posts, nil
}

// DefaultReactionKinds is REACTION_KINDS' default, the same for the writer (which counts them)
// and the fanout's page (which shows them).
const DefaultReactionKinds = "heart,clap,laugh,wow,fire"

// MaxReactionKinds bounds REACTION_KINDS: every update of a post carries all its kinds' counts.
const MaxReactionKinds = 32

// ParseReactionKinds reads a REACTION_KINDS list: kind names are validated like post ids, so
// that they need no escaping in a key, a path or JSON, and repeats are dropped.
func ParseReactionKinds(list string) ([]string, error) {
	kinds, err := ParsePostList(list, MaxReactionKinds)
	if err != nil {
		return nil, fmt.Errorf("reaction kinds %q: %w", list, err)
	}
	return kinds, nil
}
