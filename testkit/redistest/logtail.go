package redistest

import "sync"

// logTailLines is how many of a process's last log lines a Server keeps: enough to show a
// failover's election and promotion, bounded so a chatty process costs little.
const logTailLines = 200

// logTail keeps a process's last log lines, so that a failing test can show what Redis or a
// Sentinel did (LogTail).
type logTail struct {
	mu    sync.Mutex
	lines []string
}

func (l *logTail) add(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.lines) == logTailLines {
		l.lines = append(l.lines[:0], l.lines[1:]...)
	}
	l.lines = append(l.lines, line)
}

func (l *logTail) snapshot() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

// LogTail returns the process's last log lines, oldest first, across restarts.
func (s *Server) LogTail() []string { return s.log.snapshot() }
