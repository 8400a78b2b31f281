package userlikes

import (
	"fmt"
	"strconv"
)

// ErrCursor is a paging cursor that no listing of ours returned; ErrLimit a page size out of
// bounds. Both are 400s, and say the range allowed.
var (
	ErrCursor = fmt.Errorf("bad cursor: pass back the next_cursor of the previous page (whole numbers up to %d)", MaxCursor)
	ErrLimit  = fmt.Errorf("bad limit: want 1 to %d", MaxPage)
)

// MaxCursor bounds every number in a paging cursor: a rank in a user's index (a sorted set) or in
// a likers chunk (a list), and a likers chunk's number. Redis holds at most 2^32-1 members in a
// set or list, so no rank of ours reaches it, and a chunk holds at least LikersChunk (128)
// likers, so no post reaches 2^32 chunks. A larger number is forged: refused before any Redis
// work, and all arithmetic on an accepted one stays far from int64's end.
const MaxCursor = 1<<32 - 1

// parseCursorNumber reads one number of a cursor, within [least, MaxCursor].
func parseCursorNumber(v string, least int64) (int64, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < least || n > MaxCursor {
		return 0, ErrCursor
	}
	return n, nil
}

// MaxPage is the most entries one page of a listing holds; DefaultPage is a page's size when the
// request names none.
const (
	MaxPage     = 100
	DefaultPage = 20
)
