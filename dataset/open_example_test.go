package dataset_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentperf/agentperf/dataset"
)

// Open a corpus through the content-addressed cache: the first Open builds
// the cache file, the second maps it without reading the source.
func ExampleOpen() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	src := filepath.Join(dir, "traces.jsonl")
	f, _ := os.Create(src)
	dataset.WriteJSONL(f, dataset.Synthesize(dataset.SynthOptions{Seed: 1, Traces: 5}))
	f.Close()

	opt := dataset.Options{
		Select:       dataset.SelectOptions{NumEntries: 3},
		CacheEnabled: true,
		CacheDir:     filepath.Join(dir, "cache"),
		Logf:         func(format string, args ...any) { fmt.Printf("warning: "+format+"\n", args...) },
	}
	for range 2 {
		c, err := dataset.Open(context.Background(), dataset.Source{InputFile: src}, opt)
		if err != nil {
			fmt.Println(err)
			return
		}
		st := c.LoadStats().Select
		fmt.Printf("loaded %d of %d traces, from cache: %v\n", c.Len(), st.Loaded, c.FromCache())
		c.Close()
	}
	// Output:
	// loaded 3 of 5 traces, from cache: false
	// loaded 3 of 5 traces, from cache: true
}

// A cache file can also be written and mapped directly. Hash ids of a
// mapped corpus are views into the file, valid until Close.
func ExampleOpenCache() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "corpus.dscache")
	traces := []dataset.Trace{{ID: "t1", BlockSize: 64, HashIDScope: "local", Requests: []dataset.Request{{In: 128, Out: 10, HashIDs: []uint32{1, 2}}}}}
	if err := dataset.WriteCache(path, traces, dataset.Identity{SourceType: "file"}); err != nil {
		fmt.Println(err)
		return
	}
	c, err := dataset.OpenCache(path)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	t := c.Trace(0)
	fmt.Println(t.ID, t.Requests[0].In, t.Requests[0].HashIDs)
	// Output:
	// t1 128 [1 2]
}
