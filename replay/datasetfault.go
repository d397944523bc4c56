package replay

import (
	"github.com/agentperf/agentperf/dataset"
	"github.com/agentperf/agentperf/timing"
)

// AbortDatasetCacheChanged is Result.Aborted when the mapped dataset cache
// file changed under the run (truncated by another process): the prompts
// cannot be built any more.
const AbortDatasetCacheChanged = "dataset_cache_changed"

// execute sends one turn and emits its record. Building the prompt reads
// the trace's hash ids (the conversation, the theoretical prefix hits, the
// message bytes), which for a corpus served from the dataset cache are
// views into the mapped file; dataset.Guard turns a fault on that file
// into an error. The request is then not sent (nor counted), the core is
// told it was cancelled, and the run is aborted: every artifact is written
// from what was recorded.
func (e *engine) execute(l *lane, s *timing.Send, st *stream, sl *slot) (o execOut) {
	err := dataset.Guard(func() error {
		o = e.executeRequest(l, s, st, sl)
		return nil
	})
	if err != nil {
		e.abort(AbortDatasetCacheChanged, err.Error())
		return execOut{Outcome: timing.Outcome{Cancelled: true}, endNs: e.nowNs()}
	}
	return o
}
