//go:build unix

package replay

import (
	"syscall"
	"time"
)

// processCPU is the CPU time the whole process has used so far, user and
// system (getrusage RUSAGE_SELF).
func processCPU() (user, sys time.Duration, ok bool) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0, 0, false
	}
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano()), true
}
