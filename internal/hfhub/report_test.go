package hfhub

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestResultWriteFiles(t *testing.T) {
	t.Parallel()
	r := &Result{Files: []FileResult{
		{Name: "a.jsonl", Path: "/c/a.jsonl", Size: 1536},
		{Name: "b.jsonl", Path: "/c/b.jsonl", Size: 3 << 20, Downloaded: true, Resumed: 1 << 20},
		{Name: "c.json", Path: "/c/c.json", Size: 12, Downloaded: true},
		{Name: "d.json", Path: "/c/d.json", Size: 12, Downloaded: true, Repaired: true},
	}}
	var b strings.Builder
	r.WriteFiles(&b)
	want := "  a.jsonl  1.5 KiB  in the cache, verified\n    /c/a.jsonl\n" +
		"  b.jsonl  3.0 MiB  downloaded (resumed at 1.0 MiB)\n    /c/b.jsonl\n" +
		"  c.json  12 B  downloaded\n    /c/c.json\n" +
		"  d.json  12 B  was damaged in the cache: downloaded again\n    /c/d.json\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

func TestDownloadAdvice(t *testing.T) {
	t.Parallel()
	other := errors.New("404")
	if got := DownloadAdvice(other, "x", "/c", "", "alt"); got != other {
		t.Errorf("another error changed: %v", got)
	}
	cut := fmt.Errorf("%w: dial tcp: connection refused\nset HF_HUB_OFFLINE=1 to use the cache", ErrUnreachable)
	got := DownloadAdvice(cut, "dataset download a/b", "/hub", "", "or use --input-file").Error()
	for _, want := range []string{"dataset download a/b: cannot download: the Hugging Face hub cannot be reached: dial tcp: connection refused\n",
		"the hub https://huggingface.co (HF_ENDPOINT unset) is not reachable", "copy its hub cache to /hub here", "  - or use --input-file"} {
		if !strings.Contains(got, want) {
			t.Errorf("advice lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "set HF_HUB_OFFLINE=1 to use") {
		t.Errorf("the hub's own advice was kept:\n%s", got)
	}
	if got := DownloadAdvice(cut, "x", "/hub", "http://mirror", "alt").Error(); !strings.Contains(got, "the hub http://mirror is not") {
		t.Errorf("endpoint: %s", got)
	}
}
