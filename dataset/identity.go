package dataset

// Identity records where a corpus came from and what it holds, for the run
// metadata: one source of truth for corpus identity that every consumer
// reads. InferenceX named the corpus separately in its downloader and its
// processor, and a stale name silently nulled the theoretical hit rate;
// an older corpus still validated; hand-synced entry counts went stale
// (docs/weka-traces.md, "Corpus identity").
type Identity struct {
	// SourceType is "file", "dir", "hf" or "synthetic".
	SourceType string `json:"source_type"`
	// Loader is the --public-dataset alias (or "weka_trace" for a local
	// path, "weka_hf" for --hf-dataset).
	Loader string `json:"loader,omitempty"`
	// Path is the file or directory read (for HF, the snapshot file).
	Path string `json:"path,omitempty"`
	// HFRepo, HFRevision (as requested), HFCommit (as resolved) and HFSplit
	// identify an HF dataset.
	HFRepo     string `json:"hf_repo,omitempty"`
	HFRevision string `json:"hf_revision,omitempty"`
	HFCommit   string `json:"hf_commit,omitempty"`
	HFSplit    string `json:"hf_split,omitempty"`
	// SHA256 is the hex SHA-256 of the source content (the HF blob name
	// when it is one).
	SHA256 string `json:"sha256,omitempty"`
	// Traces, ParentRequests and SubagentRequests count what was kept after
	// selection.
	Traces           int `json:"traces"`
	ParentRequests   int `json:"parent_requests"`
	SubagentRequests int `json:"subagent_requests"`
	// NumDatasetEntries is the --num-dataset-entries ceiling (0 = all).
	NumDatasetEntries int `json:"num_dataset_entries"`
}
