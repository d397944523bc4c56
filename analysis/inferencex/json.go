package inferencex

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
)

// obj is a JSON object that keeps its key order.
type obj []field

type field struct {
	k string
	v any
}

// get returns the value of key k.
func (o obj) get(k string) (any, bool) {
	for _, f := range o {
		if f.k == k {
			return f.v, true
		}
	}
	return nil, false
}

// MarshalJSON writes the fields in order.
func (o obj) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(f.k)
		b.Write(k)
		b.WriteByte(':')
		v, err := json.Marshal(f.v)
		if err != nil {
			return nil, err
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// num is a float value for the output: NaN and ±Inf (no data) become
// null.
func num(x float64) any {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	return x
}

// optNum is num(x) when ok, else null.
func optNum(x float64, ok bool) any {
	if !ok {
		return nil
	}
	return num(x)
}

// roundTree applies the v3 rounding to every float of v in place: five
// decimals, and a rounded value that is whole and at least 1 becomes an
// integer.
func roundTree(v any) any {
	switch t := v.(type) {
	case float64:
		r := round5(t)
		if r >= 1 && r == math.Trunc(r) && r < 1<<53 {
			return int64(r)
		}
		return r
	case obj:
		for i := range t {
			t[i].v = roundTree(t[i].v)
		}
		return t
	case []any:
		for i := range t {
			t[i] = roundTree(t[i])
		}
		return t
	case map[string]any:
		for k, x := range t {
			t[k] = roundTree(x)
		}
		return t
	}
	return v
}

// round5 rounds half to even at five decimals on the decimal
// representation, as Python's round(x, 5) does.
func round5(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) || math.Abs(x) >= 1e15 {
		return x
	}
	r, err := strconv.ParseFloat(strconv.FormatFloat(x, 'f', 5, 64), 64)
	if err != nil {
		return x
	}
	return r
}
