package timing

import (
	"crypto/sha256"
	"encoding/binary"
	"math"
	"math/bits"
	"math/rand/v2"
	"strconv"
	"time"
)

// SampleStartTurn returns the legacy start turn k for a lane playing a
// conversation with n turns: 0 when n ≤ 2; otherwise uniform in
// [k_min, k_max] with k_min = min(int(minRatio·n), n−2),
// k_max = min(int(maxRatio·n), n−2) and k_min lowered to k_max when above
// it. The draw is keyed by SHA-256("<seed>:<traceID>:<lane>") (see the
// package doc).
func SampleStartTurn(seed int64, traceID string, lane, n int, minRatio, maxRatio float64) int {
	if n <= 2 {
		return 0
	}
	kmin := min(int(minRatio*float64(n)), n-2)
	kmax := min(int(maxRatio*float64(n)), n-2)
	if kmin > kmax {
		kmin = kmax
	}
	if kmin < 0 {
		kmin = 0
	}
	if kmax <= kmin {
		return kmax
	}
	rng := laneRand(seed, traceID, lane)
	return kmin + int(uniform(rng, uint64(kmax-kmin+1)))
}

// laneRand returns the per-lane generator keyed by
// SHA-256("<seed>:<traceID>:<lane>"): its first 8 bytes, big-endian, seed
// a PCG.
func laneRand(seed int64, traceID string, lane int) *rand.PCG {
	sum := sha256.Sum256([]byte(strconv.FormatInt(seed, 10) + ":" + traceID + ":" + strconv.Itoa(lane)))
	return rand.NewPCG(binary.BigEndian.Uint64(sum[:8]), 0)
}

// uniform returns a uniform value in [0, n) from src, with Lemire's
// multiply-and-reject method (no modulo bias). Written here rather than
// using rand.IntN so the mapping is pinned by this package, not by the
// standard library's implementation.
func uniform(src *rand.PCG, n uint64) uint64 {
	hi, lo := bits.Mul64(src.Uint64(), n)
	if lo < n {
		thresh := -n % n
		for lo < thresh {
			hi, lo = bits.Mul64(src.Uint64(), n)
		}
	}
	return hi
}

// uniformFloat returns a uniform value in [lo, hi) from src (lo when
// hi ≤ lo), from the top 53 bits of one draw.
func uniformFloat(src *rand.PCG, lo, hi float64) float64 {
	if !(hi > lo) {
		return lo
	}
	u := float64(src.Uint64()>>11) / (1 << 53)
	return lo + u*(hi-lo)
}

// thinkTimeDelay is the v0.2 rule for the gap before a turn: its recorded
// think_time when present (not NaN), else the start-time difference from
// the previous turn; clamped at 0 and, when limit > 0, at limit. Missing
// inputs give 0.
func thinkTimeDelay(think, t, prevT float64, limit time.Duration) time.Duration {
	sec := think
	if math.IsNaN(sec) {
		sec = t - prevT
	}
	d := secondsDur(sec)
	if limit > 0 && d > limit {
		d = limit
	}
	return d
}
