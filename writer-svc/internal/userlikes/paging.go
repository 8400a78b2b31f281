package userlikes

import (
	"errors"
	"fmt"
)

// ErrCursor is a paging cursor that no listing of ours returned; ErrLimit a page size out of
// bounds. Both are 400s.
var (
	ErrCursor = errors.New("bad cursor: pass back the next_cursor of the previous page")
	ErrLimit  = fmt.Errorf("bad limit: want 1 to %d", MaxPage)
)

// MaxPage is the most entries one page of a listing holds; DefaultPage is a page's size when the
// request names none.
const (
	MaxPage     = 100
	DefaultPage = 20
)
