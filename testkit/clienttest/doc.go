// Package clienttest plays the users of a running likes deployment in tests: viewers that behave
// like a browser's EventSource, likes sent as a client sends them, a steady flow of likes that
// counts what was acknowledged, a user's likes and a post's likers read page by page and erased,
// reads of a node's /metrics and of haproxy's statistics, and polling with a deadline. The e2e
// suite (processes on loopback) and the Docker suite (the compose stack on a real engine) share
// it, so both judge a deployment the same way.
package clienttest
