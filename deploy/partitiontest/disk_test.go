package partitiontest

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"github.com/likes/likes/testkit/netnstest"
)

// diskSize is each data node's tmpfs: room for the suite's append-only files many times over,
// small enough that a filler file takes it all at once.
const diskSize = "32m"

// mountDisk puts dir on a tmpfs of its own, so that a nemesis can fill a data node's disk
// (fillDisk) without touching the machine's; the test's cleanup unmounts it, after the data
// node's process is killed (cleanups run last-registered first).
func (c *cluster) mountDisk(dir string) {
	c.t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		c.t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+diskSize, "tmpfs", dir).CombinedOutput(); err != nil {
		c.t.Fatalf("mount a tmpfs on %s: %v: %s", dir, err, out)
	}
	c.t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			c.t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
}

// filler is the file that takes a data node's free space.
func filler(c *cluster, h *netnstest.Host) string { return filepath.Join(c.procs[h].dir, "filler") }

// fillDisk writes zeros to a file on h's tmpfs until no byte more fits (ENOSPC), as a disk that
// filled up: the append-only file's next write fails.
func (c *cluster) fillDisk(h *netnstest.Host) {
	c.t.Helper()
	f, err := os.Create(filler(c, h))
	if err != nil {
		c.t.Fatal(err)
	}
	defer f.Close()
	zeros := make([]byte, 64<<10)
	for {
		if _, err := f.Write(zeros); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				break
			}
			c.t.Fatalf("fill %s's disk: %v", h.Name, err)
		}
	}
	for { // the last partial writes: down to the byte
		if _, err := f.Write(zeros[:1]); err != nil {
			return
		}
	}
}

// freeDisk gives the space back.
func (c *cluster) freeDisk(h *netnstest.Host) {
	c.t.Helper()
	if err := os.Remove(filler(c, h)); err != nil {
		c.t.Fatal(err)
	}
}
