// Command fanout-svc holds Server-Sent Events connections and fans each post's updates out to its
// local viewers. It keeps one Redis subscription per post that has local viewers (package posts,
// subscribed through package relay), encodes each update once, and writes it to every viewer from
// a few epoll event loops (package hub). Add nodes, not cores, to hold more viewers.
//
// node.go assembles the node; LOCKS.md gives the order of its locks.
//
// Browsers reach fanout nodes through a balancer that terminates TLS and HTTP/2 and speaks
// HTTP/1.1 to the node: a stream leaves net/http by Hijack, which HTTP/2 does not allow.
package main
