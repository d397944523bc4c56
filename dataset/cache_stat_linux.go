//go:build linux

package dataset

import (
	"os"
	"syscall"
)

func sysStamp(fi os.FileInfo, s *fileStamp) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		s.CtimeNs = st.Ctim.Nano()
		s.Ino = st.Ino
		s.Dev = uint64(st.Dev)
	}
}
