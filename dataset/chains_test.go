package dataset

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

// cr is a request at t lasting api seconds on model m with the given hash
// ids (In 100, Out 500 unless changed).
func cr(t, api float64, m string, ids ...uint32) Request {
	return Request{T: t, APITime: api, Model: m, In: 100, Out: 500, HashIDs: ids, ThinkTime: math.NaN(), TTFT: math.NaN()}
}

func withIO(r Request, in, out int) Request { r.In, r.Out = in, out; return r }

// describeLayout renders a layout as "main=[…] label=[…] … pre=P seams=S".
func describeLayout(l ChainLayout) string {
	var b strings.Builder
	fmt.Fprintf(&b, "main=%v", l.Main)
	for _, w := range l.Workers {
		fmt.Fprintf(&b, " %s=%v", w.Label, w.Reqs)
	}
	fmt.Fprintf(&b, " pre=%d seams=%d", l.Preamble, l.Seams)
	return b.String()
}

// TestLayoutChainsGolden: one small hand-made request list per rule of
// the pinned loader's chain layout, and the layout it must give.
func TestLayoutChainsGolden(t *testing.T) {
	t.Parallel()
	def := DefaultChainOptions()
	noSplit := def
	noSplit.Split = false
	cases := []struct {
		name string
		reqs []Request
		opt  ChainOptions
		want string
	}{
		{"extension: each request's prefix is the last one's whole list", []Request{
			cr(0, 1, "A", 1), cr(2, 1, "A", 1, 2), cr(4, 1, "A", 1, 2, 3),
		}, def, "main=[0 1 2] pre=-1 seams=0"},
		{"fork on a prefix shrink that a later request pulls back from", []Request{
			cr(0, 1, "A", 1, 2, 3), cr(2, 1, "A", 1, 2, 3, 4), cr(4, 1, "A", 1, 2, 9),
			cr(6, 1, "A", 1, 2, 3, 4, 5), cr(7, 1, "A", 1, 2, 9, 7),
		}, def, "main=[0 1 3] fa:000=[2 4] pre=-1 seams=0"},
		{"fork on a time overlap: the tail had not ended by the start", []Request{
			cr(0, 10, "A", 1), cr(5, 1, "A", 1, 2), cr(12, 1, "A", 1, 5), cr(13, 1, "A", 1, 2, 3),
		}, def, "main=[0 2] fa:000=[1 3] pre=-1 seams=0"},
		{"fork on a model switch, even on a full-prefix match", []Request{
			cr(0, 1, "A", 1), cr(2, 1, "B", 1, 2), cr(4, 1, "B", 1, 2, 3), cr(5, 1, "A", 1, 7),
		}, def, "main=[0 3] fa:000=[1 2] pre=-1 seams=0"},
		{"seam: a compaction continues the dead tail", []Request{
			cr(0, 1, "A", 1, 2, 3), cr(2, 1, "A", 1, 2, 9), cr(4, 1, "A", 1, 2, 9, 10),
		}, def, "main=[0 1 2] pre=-1 seams=1"},
		{"seam refused: over an hour later and under half the tail's blocks", []Request{
			cr(0, 1, "A", 1, 2, 3), cr(4000, 1, "A", 1, 9), cr(4002, 1, "A", 1, 9, 10),
		}, def, "main=[0] fa:000=[1 2] pre=-1 seams=0"},
		{"seam kept: over an hour later but most of the tail's blocks", []Request{
			cr(0, 1, "A", 1, 2, 3), cr(4000, 1, "A", 1, 2, 9), cr(4002, 1, "A", 1, 2, 9, 10),
		}, def, "main=[0 1 2] pre=-1 seams=1"},
		{"seam refused on a model switch", []Request{
			cr(0, 1, "A", 1, 2, 3), cr(2, 1, "B", 1, 2, 9), cr(4, 1, "B", 1, 2, 9, 10),
		}, def, "main=[0] fa:000=[1 2] pre=-1 seams=0"},
		{"deepest fork wins the seam; the other is re-keyed and stays a chain", []Request{
			cr(0, 1, "A", 1, 2, 3, 4), cr(2, 5, "A", 1, 9), cr(3, 1, "A", 1, 2, 8),
			cr(5, 1, "A", 1, 2, 8, 6), cr(8, 1, "A", 1, 9, 5),
		}, def, "main=[0 2 3] fa:000=[1 4] pre=-1 seams=1"},
		{"preamble: a small prefix-disjoint first request rides the main chain", []Request{
			withIO(cr(0, 1, "A", 100), 100, 10), cr(1, 1, "A", 1, 2), cr(2, 3, "A", 1, 2, 3),
			cr(2.5, 1, "A", 1, 5), cr(4, 1, "A", 1, 5, 6),
		}, def, "main=[0 1 2] fa:000=[3 4] pre=0 seams=0"},
		{"preamble: a large first request none of whose blocks recur", []Request{
			withIO(cr(0, 1, "A", 100, 101), 100, 900), cr(1, 1, "A", 1, 2), cr(2, 3, "A", 1, 2, 3),
			cr(2.5, 1, "A", 1, 5), cr(4, 1, "A", 1, 5, 6),
		}, def, "main=[0 1 2] fa:000=[3 4] pre=0 seams=0"},
		{"no preamble: a large first request whose blocks recur later", []Request{
			withIO(cr(0, 1, "A", 100, 101), 100, 900), cr(1, 1, "A", 1, 101), cr(2, 3, "A", 1, 101, 3),
		}, def, "main=[0] fa:000=[1 2] pre=-1 seams=0"},
		{"aux: a one-request chain with a small fresh context", []Request{
			cr(0, 1, "A", 1), cr(2, 9, "A", 1, 2), cr(3, 1, "A", 1, 5), cr(12, 1, "A", 1, 2, 3),
		}, def, "main=[0 1 3] aux:000=[2] pre=-1 seams=0"},
		{"aux: a one-request chain on another model, however large", []Request{
			cr(0, 1, "A", 1), cr(2, 9, "A", 1, 2), withIO(cr(3, 1, "B", 1, 5), 90000, 3000), cr(12, 1, "A", 1, 2, 3),
		}, def, "main=[0 1 3] aux:000=[2] pre=-1 seams=0"},
		{"aux:red: one large-input, short-output request on the main model", []Request{
			cr(0, 1, "A", 1), cr(2, 9, "A", 1, 2), withIO(cr(3, 1, "A", 1, 5), 90000, 300), cr(12, 1, "A", 1, 2, 3),
		}, def, "main=[0 1 3] aux:red:000=[2] pre=-1 seams=0"},
		{"wg: three overlapping workers forked from one request", []Request{
			cr(0, 1, "A", 1, 2), cr(2, 1, "A", 1, 2, 10),
			cr(3, 7, "A", 1, 2, 20), cr(4, 6, "A", 1, 2, 30), cr(5, 5, "A", 1, 2, 40),
			cr(11, 1, "A", 1, 2, 10, 11), cr(12, 1, "A", 1, 2, 20, 21), cr(12.5, 1, "A", 1, 2, 30, 31), cr(13, 1, "A", 1, 2, 40, 41),
		}, def, "main=[0 1 5] wg:000_000=[2 6] wg:000_001=[3 7] wg:000_002=[4 8] pre=-1 seams=0"},
		{"no wg: two overlapping workers are fewer than WORKER_GROUP_MIN", []Request{
			cr(0, 1, "A", 1, 2), cr(2, 1, "A", 1, 2, 10),
			cr(3, 7, "A", 1, 2, 20), cr(4, 6, "A", 1, 2, 30),
			cr(11, 1, "A", 1, 2, 10, 11), cr(12, 1, "A", 1, 2, 20, 21), cr(12.5, 1, "A", 1, 2, 30, 31),
		}, def, "main=[0 1 4] fa:000=[2 5] fa:001=[3 6] pre=-1 seams=0"},
		{"requests without hash ids stay on the main chain", []Request{
			cr(0, 10, "A", 1), cr(1, 1, "A"), cr(5, 1, "A", 1, 2), cr(6, 1, "A", 1, 2, 3),
		}, def, "main=[0 1] fa:000=[2 3] pre=-1 seams=0"},
		{"SPLIT_FLATTENED_AGENTS=false: one chain in time order", []Request{
			cr(0, 10, "A", 1), cr(12, 1, "A", 1, 5), cr(5, 1, "A", 1, 2), cr(13, 1, "A", 1, 2, 3),
		}, noSplit, "main=[0 2 1 3] pre=-1 seams=0"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if got := describeLayout(LayoutChains(c.reqs, c.opt)); got != c.want {
				t.Errorf("layout\n got %s\nwant %s", got, c.want)
			}
		})
	}
}

// TestLayoutChainsOptions: each label switch turns its rule off.
func TestLayoutChainsOptions(t *testing.T) {
	t.Parallel()
	aux := []Request{cr(0, 1, "A", 1), cr(2, 9, "A", 1, 2), cr(3, 1, "B", 1, 5), cr(12, 1, "A", 1, 2, 3)}
	red := []Request{cr(0, 1, "A", 1), cr(2, 9, "A", 1, 2), withIO(cr(3, 1, "A", 1, 5), 90000, 300), cr(12, 1, "A", 1, 2, 3)}
	gap := []Request{cr(0, 1, "A", 1, 2, 3), cr(4000, 1, "A", 1, 9), cr(4002, 1, "A", 1, 9, 10)}
	o := func(f func(*ChainOptions)) ChainOptions { c := DefaultChainOptions(); f(&c); return c }
	cases := []struct {
		name string
		reqs []Request
		opt  ChainOptions
		want string
	}{
		{"AUX_MAX_REQUESTS=0", aux, o(func(c *ChainOptions) { c.AuxMaxRequests = 0 }), "main=[0 1 3] fa:000=[2] pre=-1 seams=0"},
		{"AUX_CROSS_MODEL=false keeps the size test", aux, o(func(c *ChainOptions) { c.AuxCrossModel = false }), "main=[0 1 3] aux:000=[2] pre=-1 seams=0"},
		{"AUX_REDUCTION_OSL_MAX=0", red, o(func(c *ChainOptions) { c.ReductionOSLMax = 0 }), "main=[0 1 3] fa:000=[2] pre=-1 seams=0"},
		{"SEAM_MAX_GAP_SECONDS=5000", gap, o(func(c *ChainOptions) { c.SeamMaxGap = 5000 }), "main=[0 1 2] pre=-1 seams=1"},
		{"SEAM_MIN_OVERLAP_RATIO=0", gap, o(func(c *ChainOptions) { c.SeamMinOverlap = 0 }), "main=[0 1 2] pre=-1 seams=1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if got := describeLayout(LayoutChains(c.reqs, c.opt)); got != c.want {
				t.Errorf("layout\n got %s\nwant %s", got, c.want)
			}
		})
	}
}

func TestChainPrefixTokens(t *testing.T) {
	t.Parallel()
	base := []uint32{1, 2, 3}
	cases := []struct {
		tool, sys    int
		chain        []uint32
		wantT, wantS int
	}{
		{100, 28, []uint32{1, 2, 9}, 100, 28}, // 2 declared blocks shared
		{100, 29, []uint32{1, 2, 9}, 0, 0},    // 3 declared blocks, the third differs
		{0, 0, []uint32{1, 2, 3}, 0, 0},       // nothing declared
		{64, 0, []uint32{}, 0, 0},             // chain shorter than the declared prefix
	}
	for _, c := range cases {
		if gt, gs := ChainPrefixTokens(c.tool, c.sys, 64, base, c.chain); gt != c.wantT || gs != c.wantS {
			t.Errorf("ChainPrefixTokens(%d, %d, %v) = %d, %d; want %d, %d", c.tool, c.sys, c.chain, gt, gs, c.wantT, c.wantS)
		}
	}
}

func TestChainOptionsValidate(t *testing.T) {
	t.Parallel()
	if err := DefaultChainOptions().Validate(); err != nil {
		t.Fatal(err)
	}
	bad := DefaultChainOptions()
	bad.SeamMinOverlap = 1.5
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "overlap") {
		t.Errorf("overlap 1.5: %v, want an error naming the overlap ratio", err)
	}
}
