package run

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestApplyShard: the shard the flags pick becomes the lanes' shard, the
// output folder and the rendezvous; what cannot work is refused naming
// the flag.
func TestApplyShard(t *testing.T) {
	noEnv := func(string) string { return "" }
	s := NewSpec()
	s.Replay.Concurrency, s.OutputDir = 4, "out"
	if err := s.ApplyShard(ShardChoice{Shard: "1/2", Rendezvous: "localhost:7000", Args: []string{"profile", "--shard", "1/2"}, Getenv: noEnv}); err != nil {
		t.Fatal(err)
	}
	if s.Replay.Shard.Index != 1 || s.Replay.Shard.Count != 2 || s.OutputDir != filepath.Join("out", "shard-1") || s.Shard.Rendezvous != "localhost:7000" {
		t.Errorf("shard %v, dir %q, rendezvous %q", s.Replay.Shard, s.OutputDir, s.Shard.Rendezvous)
	}
	if len(s.Notes) != 1 || !strings.Contains(s.Notes[0], "lanes i with i mod 2 == 1 of 4") {
		t.Errorf("notes %q", s.Notes)
	}

	s = NewSpec()
	s.Replay.Concurrency, s.OutputDir = 4, "out-{shard}"
	if err := s.ApplyShard(ShardChoice{Shard: "0/1", Getenv: noEnv}); err != nil || s.OutputDir != "out-0" || s.Shard.Rendezvous != "" {
		t.Errorf("{shard}: err %v, dir %q, rendezvous %q", err, s.OutputDir, s.Shard.Rendezvous)
	}

	for _, c := range []struct {
		choice ShardChoice
		want   string
	}{
		{ShardChoice{Shard: "0/8"}, "--shard 0/8: 8 shards for --concurrency 4"},
		{ShardChoice{Shard: "0/2"}, "needs --shard-rendezvous HOST:PORT"},
		{ShardChoice{Shard: "0/2", Rendezvous: "nohost"}, `--shard-rendezvous "nohost": want HOST:PORT`},
		{ShardChoice{Shard: "2/2"}, "--shard:"},
	} {
		s := NewSpec()
		s.Replay.Concurrency = 4
		c.choice.Getenv = noEnv
		if err := s.ApplyShard(c.choice); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", c.choice, err, c.want)
		}
	}
}
