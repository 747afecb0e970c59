package event

import (
	"cmp"
	"strconv"
	"strings"
)

// ComparePos compares two stream positions ("ms-seq", as XADD gives them)
// numerically: -1, 0 or +1. A part that is not a number counts as 0.
func ComparePos(a, b string) int {
	ams, aseq := splitPos(a)
	bms, bseq := splitPos(b)
	if c := cmp.Compare(ams, bms); c != 0 {
		return c
	}
	return cmp.Compare(aseq, bseq)
}

func splitPos(p string) (ms, seq uint64) {
	a, b, _ := strings.Cut(p, "-")
	ms, _ = strconv.ParseUint(a, 10, 64)
	seq, _ = strconv.ParseUint(b, 10, 64)
	return ms, seq
}
