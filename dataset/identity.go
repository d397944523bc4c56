package dataset

// Identity records where a corpus came from, for run metadata.
type Identity struct {
	SourceType                               string // "file", "dir", "hf", "synthetic"
	Loader                                   string
	Path                                     string
	HFRepo, HFRevision, HFCommit, HFSplit    string
	SHA256                                   string
	Traces, ParentRequests, SubagentRequests int
	NumDatasetEntries                        int
}
