package inferencex

import (
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

var (
	reTPToken   = regexp.MustCompile(`(?i)(?:^|[^a-z0-9])tp(\d{1,4})(?:[^0-9]|$)`)
	reConcToken = regexp.MustCompile(`(?i)(?:^|[^a-z0-9])conc(\d{1,6})(?:[^0-9]|$)`)
)

// LabelsFromPath reads the tensor-parallel size and the concurrency from
// the names of a folder's path, as InferenceX names its result files and
// uploads (…_tp8-pp1-…_conc32_…): the innermost path element holding a
// "tp<N>" (or "conc<N>") token wins. 0 means not found.
func LabelsFromPath(dir string) (tp, conc int) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	parts := strings.Split(filepath.ToSlash(abs), "/")
	for i := len(parts) - 1; i >= 0 && (tp == 0 || conc == 0); i-- {
		if tp == 0 {
			if m := reTPToken.FindStringSubmatch(parts[i]); m != nil {
				tp, _ = strconv.Atoi(m[1])
			}
		}
		if conc == 0 {
			if m := reConcToken.FindStringSubmatch(parts[i]); m != nil {
				conc, _ = strconv.Atoi(m[1])
			}
		}
	}
	return tp, conc
}
