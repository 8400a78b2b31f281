// Package watching counts how many viewers follow each post across all fanout nodes, at a cost
// that grows with nodes x posts and never with viewers.
//
// Time is cut into intervals of the same length on every node (interval n is the n-th Interval
// since the unix epoch). Once per interval, a quarter of the way into it, each node runs one
// pipeline per batch of its posts: for every post with local viewers it adds its number of
// viewers to the post's key for the current interval (INCRBY, then PEXPIRE of three intervals)
// and reads the post's key for the previous interval (GET), to which every node finished adding a
// whole interval ago. Only posts that exist are counted (a like or a reaction gave them a
// version): anyone can open streams of made-up posts, and their keys would be Redis memory an
// attacker could grow at will; a post shows "watching now" from its first like on. So a post's total is exact for the previous interval, and a node that dies
// or loses its viewers simply adds nothing to the next one: its share is gone from what readers
// see within two intervals, and nothing has to clean up after it.
//
// Every total goes to a Sink (the hub) once per interval, as an update.Watching that every node
// labels with the same interval start; the sink passes a number on to viewers only when what
// they are shown changed (the hub rounds large numbers), so it also decides for a post that came
// back after its viewers had left. A changed number reaches viewers with their next write (a
// count or a heartbeat), not within the interval.
package watching
