package scenario

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"github.com/agentperf/agentperf/internal/suggest"
	"strconv"
	"strings"
)

// MarkerLen is the length of a cache-bust marker: "[rid:" + 12 hex + "]".
const MarkerLen = 18

// Marker returns the cache-bust marker of a session (docs/replay.md,
// "Cache-bust markers"):
// "[rid:" + the first 12 lowercase hex characters of
// SHA-256("<benchmarkID>:<recyclePass>:<lane>:<base trace id>") + "]".
// The base trace id is traceID up to its first "::" (subagent children
// share their root's marker). The phase is deliberately not an input: a
// session's warmup request and its profiling turns carry the same marker, so
// the KV built in warmup is reused. benchmarkID is the per-run id, so
// markers differ across runs by design; recyclePass is the per-trace-id
// session count (timing.Send.RecyclePass).
func Marker(benchmarkID string, recyclePass, lane int, traceID string) string {
	return string(AppendMarker(make([]byte, 0, MarkerLen), benchmarkID, recyclePass, lane, traceID))
}

// AppendMarker appends Marker(...) to dst and returns the extended slice.
func AppendMarker(dst []byte, benchmarkID string, recyclePass, lane int, traceID string) []byte {
	var stack [160]byte
	key := stack[:0]
	key = append(key, benchmarkID...)
	key = append(key, ':')
	key = strconv.AppendInt(key, int64(recyclePass), 10)
	key = append(key, ':')
	key = strconv.AppendInt(key, int64(lane), 10)
	key = append(key, ':')
	key = append(key, BaseTraceID(traceID)...)
	sum := sha256.Sum256(key)
	var hx [12]byte
	hex.Encode(hx[:], sum[:6])
	dst = append(dst, "[rid:"...)
	dst = append(dst, hx[:]...)
	return append(dst, ']')
}

// BaseTraceID strips a child suffix ("::sa:…", "::fa:…", …) from a
// conversation id, giving the root trace id.
func BaseTraceID(id string) string {
	if i := strings.Index(id, "::"); i >= 0 {
		return id[:i]
	}
	return id
}

// CacheBust is a --cache-bust target: where the marker goes.
type CacheBust string

// The supported targets.
const (
	// CacheBustNone injects nothing.
	CacheBustNone CacheBust = "none"
	// CacheBustSystemPrefix prepends marker+"\n\n" to the system message.
	CacheBustSystemPrefix CacheBust = "system_prefix"
	// CacheBustSystemSuffix appends "\n\n"+marker to the system message.
	CacheBustSystemSuffix CacheBust = "system_suffix"
	// CacheBustFirstTurnPrefix prepends marker+"\n\n" to the first user
	// message of the session's effective prefix (the scenario's lock).
	CacheBustFirstTurnPrefix CacheBust = "first_turn_prefix"
	// CacheBustFirstTurnSuffix appends "\n\n"+marker to that message.
	CacheBustFirstTurnSuffix CacheBust = "first_turn_suffix"
)

// CacheBusts lists the supported targets.
var CacheBusts = []CacheBust{CacheBustNone, CacheBustSystemPrefix, CacheBustSystemSuffix, CacheBustFirstTurnPrefix, CacheBustFirstTurnSuffix}

// ParseCacheBust parses a --cache-bust value (case-insensitive, "-" and "_"
// alike). aiperf's warmup_isolation_* targets are recognised and refused as
// not supported yet; anything else is an error listing the valid values.
func ParseCacheBust(s string) (CacheBust, error) {
	v := strings.ReplaceAll(strings.ToLower(strings.TrimSpace(s)), "-", "_")
	for _, c := range CacheBusts {
		if v == string(c) {
			return c, nil
		}
	}
	if strings.HasPrefix(v, "warmup_isolation") {
		return "", fmt.Errorf("--cache-bust %s is not supported yet (it isolates warmup traffic only, which AgentX does not use); use one of %s", s, cacheBustList())
	}
	names := make([]string, len(CacheBusts))
	for i, c := range CacheBusts {
		names[i] = string(c)
	}
	return "", fmt.Errorf("--cache-bust %q is not a cache-bust target%s; use one of %s", s, suggest.DidYouMean(v, names), cacheBustList())
}

func cacheBustList() string {
	var b strings.Builder
	for i, c := range CacheBusts {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(string(c))
	}
	return b.String()
}
