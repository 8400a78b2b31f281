package main

import (
	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// raiseFileLimit lifts the soft open-file limit to the hard one: every viewer is a descriptor.
func raiseFileLimit(log *zap.Logger) {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil || lim.Cur >= lim.Max {
		return
	}
	lim.Cur = lim.Max
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		log.Warn("raise open-file limit", zap.Error(err))
	}
}
