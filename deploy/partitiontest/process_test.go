package partitiontest

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"

	"github.com/likes/likes/testkit/netnstest"
)

// proc is the process a host runs and how to start it again: the nemesis pauses it (SIGSTOP),
// kills it (SIGKILL) and restarts it with the same command, as a crash and a supervisor would.
type proc struct {
	host *netnstest.Host
	dir  string
	env  []string
	name string
	args []string
	cmd  *exec.Cmd // nil while killed
	log  *os.File
}

// launch starts p's command in its host; its output is appended to logPath(dir).
func (c *cluster) launch(p *proc) {
	c.t.Helper()
	f, err := os.OpenFile(logPath(p.dir), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		c.t.Fatal(err)
	}
	cmd := p.host.Command(p.name, p.args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = append(os.Environ(), p.env...)
	if err := cmd.Start(); err != nil {
		_ = f.Close()
		c.t.Fatalf("start %s in %s: %v", p.name, p.host.Name, err)
	}
	// ip netns exec execs name in place: the process is cmd's own.
	p.cmd, p.log = cmd, f
}

// kill ends p with SIGKILL (a stopped process too) and reaps it; a no-op while it is down.
func (p *proc) kill() {
	if p.cmd == nil {
		return
	}
	_ = p.cmd.Process.Kill()
	_ = p.cmd.Wait()
	_ = p.log.Close()
	p.cmd, p.log = nil, nil
}

// signal sends sig to p's running process.
func (c *cluster) signal(h *netnstest.Host, sig syscall.Signal) {
	c.t.Helper()
	p := c.procs[h]
	if p.cmd == nil {
		c.t.Fatalf("%s: no process to send %v", h.Name, sig)
	}
	if err := p.cmd.Process.Signal(sig); err != nil {
		c.t.Fatalf("%s: %v: %v", h.Name, sig, err)
	}
}

// pause freezes h's process (SIGSTOP): it holds its connections and answers nothing.
func (c *cluster) pause(h *netnstest.Host) { c.signal(h, syscall.SIGSTOP) }

// resume lets a paused process go on (SIGCONT).
func (c *cluster) resume(h *netnstest.Host) { c.signal(h, syscall.SIGCONT) }

// crash kills h's process with SIGKILL: no shutdown, a data node's AOF as far as it was written.
func (c *cluster) crash(h *netnstest.Host) { c.procs[h].kill() }

// restart starts h's process again after a crash. A data node comes back as a replica of the
// primary the Sentinels name (or as itself when they still name it), as likes-redis.sh asks
// the Sentinels on start; the others with their command as it was.
func (c *cluster) restart(h *netnstest.Host) {
	c.t.Helper()
	p := c.procs[h]
	if strings.HasPrefix(h.Name, "redis-") {
		p.args = dataArgs(h, p.dir, c.named(h))
	}
	c.launch(p)
}

// named is the address of the primary the Sentinels name, or "" when they name h or none answers.
func (c *cluster) named(h *netnstest.Host) string {
	for _, s := range c.sentinels {
		v, err := redisDo(s.HostPort(26379), "sentinel", "get-master-addr-by-name", master)
		if l, ok := v.([]any); err == nil && ok && len(l) == 2 {
			if addr := fmt.Sprint(l[0]); addr != h.Addr.String() {
				return addr
			}
			return ""
		}
	}
	return ""
}

// dataArgs is a data node's command line: a replica of primary, or a primary when it is "".
func dataArgs(h *netnstest.Host, dir, primary string) []string {
	args := append([]string{"--port", "6379", "--dir", dir, "--replica-announce-ip", h.Addr.String()}, nodeArgs...)
	if primary != "" {
		args = append(args, "--replicaof", primary, "6379")
	}
	return args
}

// logPath is where the process of dir writes its output: beside dir, not in it, so that a full
// disk (disk_test.go) does not cut the log of what the process did about it.
func logPath(dir string) string { return dir + ".log" }

// exited reports whether p's process has ended on its own (reaping it), as a data node does
// that cannot write its append-only file as a replica (disk_test.go).
func (p *proc) exited() bool {
	if p.cmd == nil {
		return false
	}
	var ws syscall.WaitStatus
	pid, err := syscall.Wait4(p.cmd.Process.Pid, &ws, syscall.WNOHANG, nil)
	return err == nil && pid == p.cmd.Process.Pid
}

// reviveIfExited restarts h's process when it has ended on its own, as a supervisor (compose's
// restart policy, a StatefulSet) would, and reports whether it had to.
func (c *cluster) reviveIfExited(h *netnstest.Host) bool {
	c.t.Helper()
	p := c.procs[h]
	if !p.exited() {
		return false
	}
	p.kill() // the log closed; the process is reaped already
	c.t.Logf("%s had exited; restarting it", h.Name)
	c.restart(h)
	return true
}
