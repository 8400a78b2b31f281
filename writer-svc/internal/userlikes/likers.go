package userlikes

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// maxChunksPerPage bounds the likers chunks one page reads: chunks emptied by unlikes are
// skipped, and a post whose likers mostly left could otherwise make one request read thousands.
// A page that reaches it ends early with a cursor to go on from.
const maxChunksPerPage = 32

// Likers returns post's like count and up to limit of the users who like it, newest first, from
// cursor ("" for the newest), and the cursor of the next page ("" after the last). The likers are the
// chunks the like script keeps (package store), exact in every deployment: the script writes them
// with the dedup keys. A cursor is "<chunk>" (from the top of that chunk) or "<chunk>.<rank>"
// (the entries of that chunk below rank, counted from its oldest): new likes go to the current
// chunk's top and do not shift a next page, an unlike meanwhile shifts it by one.
func (rd *Reader) Likers(ctx context.Context, post, cursor string, limit int) (int64, []string, string, error) {
	if limit < 1 || limit > MaxPage {
		return 0, nil, "", ErrLimit
	}
	chunk, rank, err := parseLikersCursor(cursor)
	if err != nil {
		return 0, nil, "", err
	}
	var countCmd, curCmd *redis.StringCmd
	_, _ = rd.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		countCmd = p.Get(ctx, rd.keys.Count(post))
		curCmd = p.Get(ctx, rd.keys.LikersChunk(post))
		return nil
	})
	count, err := countCmd.Int64()
	if err != nil && !errors.Is(err, redis.Nil) {
		return 0, nil, "", fmt.Errorf("count of %s: %w", post, err)
	}
	cur, err := curCmd.Int64()
	if err != nil && !errors.Is(err, redis.Nil) {
		return 0, nil, "", fmt.Errorf("likers of %s: %w", post, err)
	}
	if cursor == "" || chunk > cur {
		// The first page, or a cursor past the current chunk (forged: chunk numbers only grow):
		// the chunks above the current one are empty, so both start from its top, and a forged
		// cursor cannot make the listing walk down through chunks that never existed.
		chunk, rank = cur, -1
	}
	out := make([]string, 0, limit)
	for read := 0; chunk >= 0; read++ {
		if read == maxChunksPerPage || len(out) == limit {
			return count, out, likersCursor(chunk, rank), nil
		}
		want := int64(limit - len(out))
		users, lo, err := rd.chunkPage(ctx, post, chunk, rank, want)
		if err != nil {
			return 0, nil, "", err
		}
		for i := len(users) - 1; i >= 0; i-- {
			out = append(out, users[i])
		}
		if lo > 0 {
			rank = lo
			continue
		}
		chunk, rank = chunk-1, -1
	}
	return count, out, "", nil
}

// chunkPage reads up to want entries of one likers chunk below rank (-1: from its top), oldest
// first, and returns the rank of the lowest one read.
func (rd *Reader) chunkPage(ctx context.Context, post string, chunk, rank, want int64) ([]string, int64, error) {
	key := rd.keys.Likers(post, chunk)
	if rank >= 0 {
		lo := max(rank-want, 0)
		if rank == 0 {
			return nil, 0, nil
		}
		var card *redis.IntCmd
		var page *redis.StringSliceCmd
		_, err := rd.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			card = p.LLen(ctx, key)
			page = p.LRange(ctx, key, lo, rank-1)
			return nil
		})
		if err != nil {
			return nil, 0, fmt.Errorf("likers of %s: %w", post, err)
		}
		if card.Val() < rank {
			// Every entry is below rank (unlikes since, or a forged rank): read from the top,
			// rather than walk down from rank a page at a time through nothing.
			return rd.chunkPage(ctx, post, chunk, -1, want)
		}
		return page.Val(), lo, nil
	}
	var card *redis.IntCmd
	var page *redis.StringSliceCmd
	_, err := rd.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		card = p.LLen(ctx, key)
		page = p.LRange(ctx, key, -want, -1)
		return nil
	})
	if err != nil {
		return nil, 0, fmt.Errorf("likers of %s: %w", post, err)
	}
	return page.Val(), max(card.Val()-want, 0), nil
}

// likersCursor is the cursor of the entries of chunk below rank (-1: the whole chunk).
func likersCursor(chunk, rank int64) string {
	if rank < 0 {
		return strconv.FormatInt(chunk, 10)
	}
	return strconv.FormatInt(chunk, 10) + "." + strconv.FormatInt(rank, 10)
}

// parseLikersCursor reads a cursor of likersCursor ("" is the first page: chunk and rank 0, -1),
// its numbers within [0, MaxCursor].
func parseLikersCursor(cursor string) (chunk, rank int64, err error) {
	if cursor == "" {
		return 0, -1, nil
	}
	c, r, ranked := strings.Cut(cursor, ".")
	if chunk, err = parseCursorNumber(c, 0); err != nil {
		return 0, 0, err
	}
	if !ranked {
		return chunk, -1, nil
	}
	if rank, err = parseCursorNumber(r, 0); err != nil {
		return 0, 0, err
	}
	return chunk, rank, nil
}
