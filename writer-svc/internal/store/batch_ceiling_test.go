package store_test

import (
	"context"
	"github.com/likes/likes/writer-svc/internal/store"
	"strconv"
	"testing"
)

// BenchmarkBatchCeiling stores likes of new users on one post in batches of size changes per
// script call, from 4 concurrent callers (writers each keep one call per post in flight). One op
// is one call; the Redis figures are per like (see ceiling_test.go).
func BenchmarkBatchCeiling(b *testing.B) {
	for _, size := range []int{1, 16, 64, 256, store.MaxBatch} {
		b.Run("size="+strconv.Itoa(size), func(b *testing.B) {
			s, rdb := benchStore(b)
			ctx := context.Background()
			measureLikes(b, rdb, 4, func(newUser func() string) (int, error) {
				batch := make([]store.Change, size)
				for i := range batch {
					batch[i].User = newUser()
				}
				_, err := s.Apply(ctx, "hot", batch)
				return size, err
			})
		})
	}
}
