package metrics

import (
	"math"
	"reflect"
	"testing"
)

// distinctRow returns a row whose every field (each Values field
// included) holds a value derived from i and its position.
func distinctRow(i int) row {
	var v Values
	rv := reflect.ValueOf(&v).Elem()
	for f := range rv.NumField() {
		rv.Field(f).SetFloat(float64(i*100 + f))
	}
	if i%7 == 0 {
		v.TTFT = math.NaN() // an absent value survives too
	}
	return row{v: v, startNs: int64(i) * 1000, endNs: int64(i)*1000 + 7, hit: int64(i % 5), total: int64(i%5 + 3),
		warmup: i%3 == 0, failed: i%4 == 1, cancelled: i%6 == 5}
}

func sameRow(a, b row) bool {
	av, bv := reflect.ValueOf(a.v), reflect.ValueOf(b.v)
	for f := range av.NumField() {
		x, y := av.Field(f).Float(), bv.Field(f).Float()
		if x != y && !(math.IsNaN(x) && math.IsNaN(y)) {
			return false
		}
	}
	a.v, b.v = Values{}, Values{}
	return a == b
}

// TestColumnsRoundTrip stores rows across several chunks and reads every
// field back: by row, by column, flags and times.
func TestColumnsRoundTrip(t *testing.T) {
	t.Parallel()
	var c columns
	n := 2*columnChunkRows + 123
	for i := range n {
		r := distinctRow(i)
		c.append(&r)
	}
	if c.len() != n || len(c.chunks) != 3 {
		t.Fatalf("len %d in %d chunks, want %d in 3", c.len(), len(c.chunks), n)
	}
	for _, i := range []int{0, 1, 7, columnChunkRows - 1, columnChunkRows, columnChunkRows + 1, 2 * columnChunkRows, n - 1} {
		want := distinctRow(i)
		if got := c.row(i); !sameRow(got, want) {
			t.Errorf("row(%d) = %+v, want %+v", i, got, want)
		}
		if s, e := c.times(i); s != want.startNs || e != want.endNs {
			t.Errorf("times(%d) = %d, %d", i, s, e)
		}
		f := c.flags(i)
		if f.warmup() != want.warmup || f.failed() != want.failed || f.cancelled() != want.cancelled || f.ok() != want.ok() {
			t.Errorf("flags(%d) = %b, want %+v", i, f, want)
		}
		a := want.v.array()
		for m := range Metrics {
			if got := c.value(m, i); got != a[m] && !(math.IsNaN(got) && math.IsNaN(a[m])) {
				t.Errorf("value(%s, %d) = %v, want %v", Metrics[m].Tag, i, got, a[m])
			}
		}
	}
}

// TestColumnsEachValue reads one metric in row order, filtered by flags,
// across chunk boundaries.
func TestColumnsEachValue(t *testing.T) {
	t.Parallel()
	var c columns
	n := columnChunkRows + 50
	for i := range n {
		r := distinctRow(i)
		c.append(&r)
	}
	osl := metricIndex("output_sequence_length")
	var got []float64
	c.eachValue(osl, func(f rowFlags) bool { return f.warmup() }, func(x float64) { got = append(got, x) })
	var want []float64
	for i := range n {
		if r := distinctRow(i); r.warmup {
			want = append(want, r.v.OSL)
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("eachValue gave %d values, want %d (first %v vs %v)", len(got), len(want), got[:3], want[:3])
	}
	var empty columns
	empty.eachValue(osl, func(rowFlags) bool { return true }, func(float64) { t.Fatal("value from an empty store") })
}

// TestValuesFromArrayInvertsArray keeps valuesFromArray in step with
// Values.array and with every field of Values.
func TestValuesFromArrayInvertsArray(t *testing.T) {
	t.Parallel()
	v := distinctRow(3).v
	a := v.array()
	if got := valuesFromArray(&a); got != v {
		t.Fatalf("valuesFromArray(array(v)) = %+v, want %+v", got, v)
	}
}

// BenchmarkColumnsAppend is the per-record cost of storing a row; compare
// with BenchmarkRowSliceAppend, the growing slice it replaced.
func BenchmarkColumnsAppend(b *testing.B) {
	r := distinctRow(1)
	b.ReportAllocs()
	var c columns
	for b.Loop() {
		c.append(&r)
	}
}

func BenchmarkRowSliceAppend(b *testing.B) {
	r := distinctRow(1)
	b.ReportAllocs()
	var rows []row
	for b.Loop() {
		rows = append(rows, r)
	}
	if len(rows) == 0 {
		b.Fatal("no rows appended")
	}
}
