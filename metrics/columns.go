package metrics

// columnChunkRows is the number of rows in one chunk of columns: one
// allocation of about 900 KiB per 4,096 records.
const columnChunkRows = 4096

// columns is chunked columnar storage of rows, the per-record facts the
// aggregates are computed from. Each field of a row is a column (every
// metric value in Metrics order, the times, the block counts, the flags),
// stored in fixed-size chunks: appending copies one row into the last
// chunk and allocates only when a chunk is full, so nothing is allocated
// per record and nothing stored ever moves (no growing slice to copy). A
// metric's values are contiguous within a chunk, which is how the exact
// aggregates read them.
//
// The zero value is an empty store. It is not safe for concurrent use.
type columns struct {
	chunks []*columnChunk
	n      int
}

type columnChunk struct {
	val        [numMetrics][columnChunkRows]float64
	startNs    [columnChunkRows]int64
	endNs      [columnChunkRows]int64
	hit, total [columnChunkRows]int64
	flags      [columnChunkRows]rowFlags
}

// rowFlags are a row's classification bits.
type rowFlags uint8

const (
	flagWarmup    rowFlags = 1 << iota
	flagFailed             // an error record, not cancelled
	flagCancelled          // cancelled
)

func (f rowFlags) warmup() bool { return f&flagWarmup != 0 }

// ok reports whether the row is a successful measurement.
func (f rowFlags) ok() bool { return f&(flagFailed|flagCancelled) == 0 }

func (f rowFlags) failed() bool    { return f&flagFailed != 0 }
func (f rowFlags) cancelled() bool { return f&flagCancelled != 0 }

func flagsOf(r *row) rowFlags {
	var f rowFlags
	if r.warmup {
		f |= flagWarmup
	}
	if r.failed {
		f |= flagFailed
	}
	if r.cancelled {
		f |= flagCancelled
	}
	return f
}

// len returns the number of rows stored.
func (c *columns) len() int { return c.n }

// append stores a copy of r.
func (c *columns) append(r *row) {
	j := c.n % columnChunkRows
	if j == 0 {
		c.chunks = append(c.chunks, new(columnChunk))
	}
	k := c.chunks[len(c.chunks)-1]
	a := r.v.array()
	for m := range a {
		k.val[m][j] = a[m]
	}
	k.startNs[j], k.endNs[j] = r.startNs, r.endNs
	k.hit[j], k.total[j] = r.hit, r.total
	k.flags[j] = flagsOf(r)
	c.n++
}

// flags returns row i's flags.
func (c *columns) flags(i int) rowFlags {
	return c.chunks[i/columnChunkRows].flags[i%columnChunkRows]
}

// value returns metric m (an index into Metrics) of row i.
func (c *columns) value(m, i int) float64 {
	return c.chunks[i/columnChunkRows].val[m][i%columnChunkRows]
}

// times returns row i's start and end (Unix ns).
func (c *columns) times(i int) (start, end int64) {
	k, j := c.chunks[i/columnChunkRows], i%columnChunkRows
	return k.startNs[j], k.endNs[j]
}

// metricIndex is the index in Metrics of tag (which must exist).
func metricIndex(tag string) int {
	i, ok := metricByTag(tag)
	if !ok {
		panic("metrics: no metric " + tag)
	}
	return i
}

// row returns a copy of row i.
func (c *columns) row(i int) row {
	k, j := c.chunks[i/columnChunkRows], i%columnChunkRows
	var a [numMetrics]float64
	for m := range a {
		a[m] = k.val[m][j]
	}
	f := k.flags[j]
	return row{v: valuesFromArray(&a), startNs: k.startNs[j], endNs: k.endNs[j], hit: k.hit[j], total: k.total[j],
		warmup: f.warmup(), failed: f.failed(), cancelled: f.cancelled()}
}

// eachValue calls fn with metric m of every row i (in order) for which
// keep(flags of row i) holds, one chunk at a time.
func (c *columns) eachValue(m int, keep func(rowFlags) bool, fn func(float64)) {
	for ci, k := range c.chunks {
		n := min(columnChunkRows, c.n-ci*columnChunkRows)
		col := &k.val[m]
		for j := range n {
			if keep(k.flags[j]) {
				fn(col[j])
			}
		}
	}
}
