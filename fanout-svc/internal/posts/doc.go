// Package posts is the registry of the posts a fanout node has viewers of: for each, its recent
// frames (an update encoded once for every viewer), its newest watching number, and the node's
// one Redis subscription for it with the references the viewers hold on it.
//
// A subscription's life is a small state machine (subscription.go): a post is subscribed when its
// first viewer arrives, and unsubscribed when the last one left and a grace period passed without
// one coming back (unsubscribe.go), so that a page refresh does not flap it. The hub reads a
// post's frames; it never touches the subscription.
//
// The lock order of the node, these locks included, is written down in fanout-svc/LOCKS.md.
package posts
