package rediscpu

import (
	"context"
	"strconv"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/likes/likes/testkit/redistest"
)

// TestMain fails the package's tests if any of them leaves a goroutine running.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		give    string
		want    time.Duration
		wantErr bool
	}{
		{"both", "# CPU\r\nused_cpu_sys:1.500000\r\nused_cpu_user:0.250000\r\nused_cpu_sys_children:9.0\r\n", 1750 * time.Millisecond, false},
		{"one missing", "# CPU\r\nused_cpu_sys:1.5\r\n", 0, true},
		{"garbled", "used_cpu_sys:x\r\nused_cpu_user:1\r\n", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parse(tt.give)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("got %v, %v; want %v, error %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

// TestReadGrowsWithWork reads a real server before and after some work: its CPU time must grow.
func TestReadGrowsWithWork(t *testing.T) {
	client := redistest.Start(t).Client(t)
	ctx := context.Background()
	before, err := Read(ctx, client)
	if err != nil {
		t.Fatal(err)
	}
	for round := 0; ; round++ {
		pipe := client.Pipeline()
		for i := range 20000 {
			pipe.Set(ctx, "k"+strconv.Itoa(i), i, 0)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatal(err)
		}
		after, err := Read(ctx, client)
		if err != nil {
			t.Fatal(err)
		}
		if after > before {
			return
		}
		if round == 50 {
			t.Fatalf("CPU time stayed at %v after a million SETs; want it to grow", after)
		}
	}
}
