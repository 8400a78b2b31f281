package e2e

import "github.com/likes/likes/testkit/clienttest"

// The e2e tests watch streams with the viewer of testkit/clienttest, which the compose suite
// (deploy/dockertest) shares: one SSE test client for both.
type Viewer = clienttest.Viewer

var (
	// Watch opens a viewer of url that reconnects until the test ends.
	Watch = clienttest.Watch
	// WaitCount waits until every viewer shows want for post.
	WaitCount = clienttest.WaitCount
)
