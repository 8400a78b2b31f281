package timeline

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/redis/go-redis/v9"

	"github.com/likes/likes/pkg/rediskeys"
)

// counterBytes is the size of one second's counter in a timeline minute (BITFIELD u32).
const counterBytes = 4

// The series a Timeline has besides its reaction kinds.
const (
	Likes   = "likes"   // likes stored
	Unlikes = "unlikes" // likes removed
)

// Timeline is a post's activity from From to To (unix seconds, To excluded) in steps of Step
// seconds: each series holds one sum per step, the first starting at From.
type Timeline struct {
	PostID string `json:"post_id"`
	From   int64  `json:"from"`
	To     int64  `json:"to"`
	Step   int64  `json:"step"`
	// Series are "likes", "unlikes" and each reaction kind, one number per step.
	Series map[string][]int64 `json:"series"`
	// Peaks are the steps with the most likes and reactions together, the busiest first (at most
	// MaxPeaks, none without activity).
	Peaks []Peak `json:"peaks"`
}

// Peak is one busy step of a Timeline.
type Peak struct {
	T         int64 `json:"t"` // the step's start, unix seconds
	Likes     int64 `json:"likes"`
	Reactions int64 `json:"reactions"` // of every kind together
}

// MaxPeaks is how many peaks a Timeline lists.
const MaxPeaks = 5

// errOutOfBounds is a read past Read's caps: a caller's bug, since ParseQuery refuses such a query.
var errOutOfBounds = errors.New("timeline read out of bounds")

// bounds checks a read's range and step and returns how many minutes it spans: from and to within
// [MinTime, MaxTime] (to excluded), step at least 1, at most MaxMinutes minutes. Every value it
// lets through keeps Read's arithmetic far from int64's end (MaxTime says how far).
func bounds(from, to, step int64) (minutes int64, err error) {
	if from < MinTime || to > MaxTime || from >= to || step < 1 {
		return 0, fmt.Errorf("%w: range [%d, %d) step %d: want %d <= from < to <= %d, step >= 1", errOutOfBounds, from, to, step, MinTime, MaxTime)
	}
	minutes = (to-1)/60 - from/60 + 1
	if minutes > MaxMinutes {
		return 0, fmt.Errorf("%w: %d minutes; at most %d", errOutOfBounds, minutes, MaxMinutes)
	}
	return minutes, nil
}

// Reader reads timelines.
type Reader struct {
	rdb   redis.UniversalClient
	keys  rediskeys.Scheme
	kinds []string // the reaction kinds the writer takes
}

// NewReader returns a Reader of the series of likes, unlikes and each of kinds.
func NewReader(rdb redis.UniversalClient, keys rediskeys.Scheme, kinds []string) *Reader {
	return &Reader{rdb: rdb, keys: keys, kinds: slices.Clone(kinds)}
}

// Read returns post's timeline from from to to (unix seconds, to excluded) in steps of step
// seconds, in one pipeline: one GETRANGE per series and minute, of the seconds asked only. A
// second nobody acted in reads 0, as does a minute past its retention. The caller bounds the
// range (Handler: ParseQuery); Read checks it again all the same (bounds), so that no caller can
// make it loop past int64's end or send more than MaxCommands: it counts the minutes before it
// builds anything and refuses a read past either cap with an error.
func (rd *Reader) Read(ctx context.Context, post string, from, to, step int64) (Timeline, error) {
	minutes, err := bounds(from, to, step)
	if err != nil {
		return Timeline{}, err
	}
	series := append([]string{rediskeys.TimelineLikes, rediskeys.TimelineUnlikes}, rd.kinds...)
	names := append([]string{Likes, Unlikes}, rd.kinds...)
	if n, most := minutes*int64(len(series)), MaxCommands(len(rd.kinds)); n > most {
		return Timeline{}, fmt.Errorf("%w: %d commands; at most %d", errOutOfBounds, n, most)
	}
	type read struct {
		series int
		first  int64 // the unix second of the range's first byte
		cmd    *redis.StringCmd
	}
	reads := make([]read, 0, minutes*int64(len(series)))
	_, err = rd.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for m := range minutes {
			minute := from/60 + m
			start, end := max(from, minute*60), min(to, (minute+1)*60)
			off := (start - minute*60) * counterBytes
			last := (end-minute*60)*counterBytes - 1
			for i, s := range series {
				reads = append(reads, read{i, start, p.GetRange(ctx, rd.keys.Timeline(post, s, minute), off, last)})
			}
		}
		if n, most := int64(p.Len()), MaxCommands(len(rd.kinds)); n > most { // never sent
			return fmt.Errorf("%w: %d commands built; at most %d", errOutOfBounds, n, most)
		}
		return nil
	})
	if err != nil {
		return Timeline{}, fmt.Errorf("read timeline: %w", err)
	}
	steps := stepsIn(to-from, step)
	tl := Timeline{PostID: post, From: from, To: to, Step: step, Series: make(map[string][]int64, len(names))}
	sums := make([][]int64, len(series))
	for i, name := range names {
		sums[i] = make([]int64, steps)
		tl.Series[name] = sums[i]
	}
	for _, r := range reads {
		b, err := r.cmd.Bytes()
		if err != nil && !errors.Is(err, redis.Nil) {
			return Timeline{}, fmt.Errorf("read timeline: %w", err)
		}
		for k := 0; k+counterBytes <= len(b); k += counterBytes {
			if v := binary.BigEndian.Uint32(b[k:]); v != 0 {
				sums[r.series][(r.first+int64(k/counterBytes)-from)/step] += int64(v)
			}
		}
	}
	tl.Peaks = peaks(tl, sums, len(series)-len(rd.kinds))
	return tl, nil
}

// peaks returns the MaxPeaks steps with the most likes and reactions together, the busiest first
// (the earlier of two as busy); sums are the series in Read's order, the reactions from index
// reactions on.
func peaks(tl Timeline, sums [][]int64, reactions int) []Peak {
	out := []Peak{} // [] in JSON, not null, for a timeline without activity
	for i := range sums[0] {
		p := Peak{T: tl.From + int64(i)*tl.Step, Likes: sums[0][i]}
		for _, s := range sums[reactions:] {
			p.Reactions += s[i]
		}
		if p.Likes+p.Reactions > 0 {
			out = append(out, p)
		}
	}
	slices.SortStableFunc(out, func(a, b Peak) int {
		return cmp.Compare(b.Likes+b.Reactions, a.Likes+a.Reactions)
	})
	return out[:min(len(out), MaxPeaks)]
}
