package run

// shardManifest writes a shard's manifest (FileShard, with the run's
// Result) beside its artifacts, for Merge. Shards only (Input.Shard).
type shardManifest struct{}

func (shardManifest) Stage() Stage { return StageSeal }

func (shardManifest) Write(f *Finishing) {
	if f.Folder() || f.Input.Shard == nil {
		return
	}
	if err := writeShardManifest(f.Dir, *f.Input, f.Result); err != nil {
		f.WriteProblem(FileShard, err)
	}
}
