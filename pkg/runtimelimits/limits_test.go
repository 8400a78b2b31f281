package runtimelimits

import (
	"os"
	"path/filepath"
	"testing"
)

func TestRead(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  Limits
	}{
		{"v2 quarter CPU and 256 MiB", map[string]string{"cpu.max": "25000 100000\n", "memory.max": "268435456\n"},
			Limits{CPU: 0.25, Memory: 256 << 20}},
		{"v2 unlimited", map[string]string{"cpu.max": "max 100000\n", "memory.max": "max\n"}, Limits{}},
		{"v1 short period", map[string]string{"cpu/cpu.cfs_quota_us": "2500", "cpu/cpu.cfs_period_us": "10000",
			"memory/memory.limit_in_bytes": "536870912"}, Limits{CPU: 0.25, Memory: 512 << 20}},
		{"v1 unlimited", map[string]string{"cpu,cpuacct/cpu.cfs_quota_us": "-1", "cpu,cpuacct/cpu.cfs_period_us": "100000",
			"memory/memory.limit_in_bytes": "9223372036854771712"}, Limits{}},
		{"v1 combined controller dir", map[string]string{"cpu,cpuacct/cpu.cfs_quota_us": "150000",
			"cpu,cpuacct/cpu.cfs_period_us": "100000"}, Limits{CPU: 1.5}},
		{"nothing mounted", nil, Limits{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			for name, body := range tt.files {
				path := filepath.Join(root, name)
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if got := Read(root); got != tt.want {
				t.Errorf("Read = %+v; want %+v", got, tt.want)
			}
		})
	}
}

func TestSoftMemoryLimit(t *testing.T) {
	tests := []struct {
		limit, total, want int64
	}{
		{limit: 1000, total: 5000, want: 900},
		{limit: 0, total: 5000, want: 4500},    // no container limit: the machine's memory
		{limit: 9000, total: 5000, want: 4500}, // a limit above the machine is the machine
		{limit: 0, total: 0, want: 0},          // nothing known: no limit set
	}
	for _, tt := range tests {
		if got := SoftMemoryLimit(tt.limit, tt.total); got != tt.want {
			t.Errorf("SoftMemoryLimit(%d, %d) = %d; want %d", tt.limit, tt.total, got, tt.want)
		}
	}
}
