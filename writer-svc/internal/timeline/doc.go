// Package timeline reads a post's likes and reactions over time: what the speaker of a talk looks
// at afterwards. The like script writes it (writer-svc/internal/store, changeScript), in the
// batch's own call: per post, per series (likes stored, likes removed, each reaction kind) and per
// minute, a string of one counter per second (rediskeys.Timeline), kept TIMELINE_RETENTION after
// the minute. This package reads those seconds back, sums them into steps, finds the peaks, and serves
// GET /posts/{postID}/timeline as JSON or CSV.
package timeline
