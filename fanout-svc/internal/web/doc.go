// Package web serves the live page of likes: a few posts, each with a like button and a count that
// updates live over one EventSource for all posts on the page. The page is plain HTML, CSS and
// JavaScript embedded in the binary (no build step, nothing fetched from a CDN), so a newcomer can
// open fanout-svc in a browser and watch the system work.
//
// The page learns its configuration (the writer's public URL, the posts to show, an optional
// development token) from a JSON data block in the HTML rather than from a second request, so it
// renders with one round trip and the configuration can never be served stale or out of step.
package web
