package web

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/likes/likes/fanout-svc/internal/hub"
	"github.com/likes/likes/pkg/ids"
)

// MaxPosts bounds the posts on one page: the page follows all its posts on one stream, and a
// stream follows at most hub.MaxPosts.
const MaxPosts = hub.MaxPosts

// Config is what the page needs to know. It is rendered into the page as JSON.
type Config struct {
	// WriterURL is the writer's public base URL as a browser reaches it, for example
	// "https://likes.example.com" or "http://127.0.0.1:8080". Empty means the page's own origin,
	// for deployments that route /like to the writer behind one reverse proxy. The writer must
	// allow the page's origin in CORS_ORIGINS when it differs.
	WriterURL string `json:"writerURL"`
	// Posts are the post IDs shown on the page, in order.
	Posts []string `json:"posts"`
	// Token is an optional bearer token sent as Authorization instead of X-User-ID. It is visible
	// to everyone who loads the page, so it is meant for development only; a user can also paste
	// their own token into the page.
	Token string `json:"token,omitempty"`
	// HeartbeatMS is the node's heartbeat interval in milliseconds, so the page's silence
	// watchdog knows how long a healthy stream can be quiet. 0 leaves the library's default.
	HeartbeatMS int64 `json:"heartbeatMs,omitempty"`
	// Reactions are the reaction kinds the page offers, in order: the deployment's
	// REACTION_KINDS, which the writer also takes. Empty leaves the elements' defaults.
	Reactions []string `json:"reactions,omitempty"`
}

// Validate reports the first problem with c, so a misconfigured service fails at start instead of
// serving a page whose likes can never succeed.
func (c Config) Validate() error {
	if err := validateWriterURL(c.WriterURL); err != nil {
		return fmt.Errorf("writer url: %w", err)
	}
	if err := validatePosts(c.Posts); err != nil {
		return fmt.Errorf("posts: %w", err)
	}
	if err := validateReactions(c.Reactions); err != nil {
		return fmt.Errorf("reactions: %w", err)
	}
	for _, r := range c.Token {
		if r <= ' ' || r > '~' {
			return errors.New("token: must be printable ASCII without spaces")
		}
	}
	return nil
}

func validateWriterURL(raw string) error {
	if raw == "" {
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return err
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("%q: scheme must be http or https", raw)
	case u.Host == "":
		return fmt.Errorf("%q: host is missing", raw)
	case u.User != nil || u.RawQuery != "" || u.Fragment != "":
		return fmt.Errorf("%q: must not carry user info, a query or a fragment", raw)
	}
	return nil
}

func validateReactions(kinds []string) error {
	if len(kinds) > ids.MaxReactionKinds {
		return fmt.Errorf("%d kinds; at most %d", len(kinds), ids.MaxReactionKinds)
	}
	seen := make(map[string]bool, len(kinds))
	for _, k := range kinds {
		// A kind has a post id's form (1-64 of A-Z a-z 0-9 _ -), safe in a URL path and JSON.
		if ids.ValidPostID(k) != nil {
			return fmt.Errorf("%q is not 1-64 of A-Z a-z 0-9 _ -", k)
		}
		if seen[k] {
			return fmt.Errorf("%q is listed twice", k)
		}
		seen[k] = true
	}
	return nil
}

func validatePosts(posts []string) error {
	if len(posts) == 0 {
		return errors.New("at least one post is needed")
	}
	if len(posts) > MaxPosts {
		return fmt.Errorf("%d posts; at most %d fit on one stream", len(posts), MaxPosts)
	}
	seen := make(map[string]bool, len(posts))
	for _, p := range posts {
		if err := ids.ValidPostID(p); err != nil {
			return fmt.Errorf("%q: %w", p, err)
		}
		if seen[p] {
			return fmt.Errorf("%q is listed twice", p)
		}
		seen[p] = true
	}
	return nil
}

// normalized returns c with the writer URL's trailing slashes removed, so the page can append
// "/like/{post}" without doubling a slash.
func (c Config) normalized() Config {
	c.WriterURL = strings.TrimRight(c.WriterURL, "/")
	return c
}

// writerOrigin returns the scheme://host of the writer URL for the Content-Security-Policy, or ""
// when the writer is the page's own origin or the URL does not parse.
func (c Config) writerOrigin() string {
	u, err := url.Parse(c.WriterURL)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host
}
