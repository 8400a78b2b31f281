// Package rediscpu reads the CPU time a redis-server has used (INFO cpu), so that a ramp can say
// what Redis spent in a window: run the same ramp with a feature on and off, and the difference
// is what the feature costs Redis.
package rediscpu

import (
	"bufio"
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Read returns the server's CPU time so far: used_cpu_sys + used_cpu_user (main thread and
// background threads together).
func Read(ctx context.Context, c redis.UniversalClient) (time.Duration, error) {
	info, err := c.Info(ctx, "cpu").Result()
	if err != nil {
		return 0, fmt.Errorf("redis info cpu: %w", err)
	}
	return parse(info)
}

// parse reads used_cpu_sys and used_cpu_user (seconds, as decimals) from an INFO reply.
func parse(info string) (time.Duration, error) {
	var total float64
	found := 0
	sc := bufio.NewScanner(strings.NewReader(info))
	for sc.Scan() {
		name, value, ok := strings.Cut(strings.TrimSpace(sc.Text()), ":")
		if !ok || (name != "used_cpu_sys" && name != "used_cpu_user") {
			continue
		}
		secs, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return 0, fmt.Errorf("redis info cpu: %s: %w", name, err)
		}
		total += secs
		found++
	}
	if found != 2 {
		return 0, fmt.Errorf("redis info cpu: used_cpu_sys and used_cpu_user not both present")
	}
	return time.Duration(total * float64(time.Second)), nil
}
