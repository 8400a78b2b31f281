package store

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// scriptError names a failed script call, as ErrExpired when the script refused the batch.
func scriptError(err error) error {
	if redis.HasErrorPrefix(err, "DEADLINE") {
		return fmt.Errorf("like script: %w (%w)", ErrExpired, err)
	}
	if errors.Is(err, ErrNotReplicated) {
		return err
	}
	return fmt.Errorf("like script: %w", err)
}

// Settled reports whether a batch that failed with err can no longer take effect: Redis ran it
// (its reply came back, or WAIT followed it), refused it for its deadline, or refused it for
// memory (OOM: a data node at its maxmemory refuses a script before it runs any of it). Any other
// failure, such as a lost connection or a timeout, may leave the call on the wire or in Redis'
// input buffer, to run later, until its deadline passes.
func Settled(err error) bool {
	return errors.Is(err, ErrExpired) || errors.Is(err, ErrNotReplicated) || errors.Is(err, errReply) ||
		errors.Is(err, errChunkCalls) || errors.Is(err, errIndex) || redis.HasErrorPrefix(err, "OOM")
}

// results turns the script's reply, {count before the batch, one byte per change: 1 if it
// changed something, current likers chunk, reactions, version, buckets}, into each change's and
// each reaction's result, counting as the script did, and returns the chunk too (-1 when the reply
// is a re-run's, which has none). gates are the changes' bucket numbers as sent (limits). A reply
// of another shape is an error, never a panic: the flusher that calls this serves a whole post.
func results(reply []any, changes []Change, reactions int, gates []int) (likes, reacts []Result, chunk int64, err error) {
	if len(reply) != 7 {
		return nil, nil, 0, fmt.Errorf("%w: %d values; want a count, flags, a chunk, reactions, a version, buckets and a state", errReply, len(reply))
	}
	count, ok := reply[0].(int64)
	if !ok {
		return nil, nil, 0, fmt.Errorf("%w: count %T; want an integer", errReply, reply[0])
	}
	flags, ok := reply[1].(string)
	if !ok || len(flags) != len(changes) {
		return nil, nil, 0, fmt.Errorf("%w: flags %v for %d changes", errReply, reply[1], len(changes))
	}
	cur, ok := reply[2].(int64)
	if !ok {
		return nil, nil, 0, fmt.Errorf("%w: chunk %T; want an integer", errReply, reply[2])
	}
	ver, ok := reply[4].(int64)
	if !ok {
		return nil, nil, 0, fmt.Errorf("%w: version %T; want an integer", errReply, reply[4])
	}
	if reacts, err = reactionResults(reply[3], reactions, ver); err != nil {
		return nil, nil, 0, err
	}
	waits, err := bucketWaits(reply[5], gates)
	if err != nil {
		return nil, nil, 0, err
	}
	likes = make([]Result, len(changes))
	for i, c := range changes {
		res := Result{}
		switch flags[i] {
		case '1':
			res.Changed = true
			if c.Unlike {
				count = max(count-1, 0)
			} else {
				count++
			}
		case 'a':
			res.Limited = 1
		case 'u':
			res.Limited = 2
		}
		res.Count = count
		if waits != nil {
			res.Waits = waits.of(gates, i)
			if res.Limited > 0 {
				res.RetryAfter = max(res.Waits[res.Limited-1], time.Microsecond)
			}
		}
		likes[i] = res
	}
	return likes, reacts, cur, nil
}

// reactionResults reads the script's reactions, one number per reaction: the kind's count after
// it, or -1 - the milliseconds its user must still wait.
func reactionResults(v any, n int, ver int64) ([]Result, error) {
	s, ok := v.(string)
	if !ok {
		return nil, fmt.Errorf("%w: reactions %T; want a string", errReply, v)
	}
	if n == 0 {
		if s != "" {
			return nil, fmt.Errorf("%w: reactions %q for none", errReply, s)
		}
		return nil, nil
	}
	out := make([]Result, 0, n)
	for f := range strings.SplitSeq(s, ",") {
		x, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%w: reactions %q", errReply, s)
		}
		if x >= 0 {
			out = append(out, Result{Count: x, Changed: true, Version: ver})
		} else {
			out = append(out, Result{RetryAfter: time.Duration(-1-x) * time.Millisecond, Version: ver})
		}
	}
	if len(out) != n {
		return nil, fmt.Errorf("%w: reactions %q for %d", errReply, s, n)
	}
	return out, nil
}
