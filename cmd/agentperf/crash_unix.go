//go:build unix

package main

import "syscall"

// noCoreFile sets the process's soft core-file limit to 0.
func noCoreFile() {
	var lim syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_CORE, &lim) == nil && lim.Cur != 0 {
		lim.Cur = 0
		syscall.Setrlimit(syscall.RLIMIT_CORE, &lim)
	}
}
