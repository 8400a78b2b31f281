// Package epoll is the small Linux layer under the fan-out engine: an epoll instance with an
// eventfd to wake it, non-blocking writes and reads on raw socket descriptors, and the descriptor
// of a hijacked connection. It knows nothing about viewers or posts.
//
// The engine is Linux-only: epoll and eventfd have no portable equivalent in the standard
// library, and one goroutine per viewer (the portable way) is what the engine exists to avoid. On
// any other system this package does not build, with a message that says so.
package epoll
