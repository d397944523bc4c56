// Package mergetest checks, for tests only, that a result type's Add or
// Merge handles every field: Fill gives each leaf field of a value a
// distinct non-zero value (recursively), and Check walks the leaves of the
// merged value and compares each with the rule for its path, so a field
// added to the type without a rule, or not merged as its rule says, fails
// the test that calls it.
package mergetest

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"
)

// Rule says what a leaf of the merged value must be, given the leaf's
// value in the receiver (a) and in the argument (b) of the merge.
type Rule func(a, b reflect.Value) any

// Sum is the rule of a count: the merged leaf is a + b (integers, floats,
// durations).
func Sum(a, b reflect.Value) any {
	switch a.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return a.Int() + b.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return a.Uint() + b.Uint()
	case reflect.Float32, reflect.Float64:
		return a.Float() + b.Float()
	}
	panic("mergetest.Sum on a " + a.Kind().String())
}

// First is the rule of a leaf the receiver keeps.
func First(a, _ reflect.Value) any { return a.Interface() }

// Or is the rule of a flag set when either is.
func Or(a, b reflect.Value) any { return a.Bool() || b.Bool() }

// And is the rule of a flag set when both are.
func And(a, b reflect.Value) any { return a.Bool() && b.Bool() }

// Larger is the rule of the larger of two integers.
func Larger(a, b reflect.Value) any { return max(a.Int(), b.Int()) }

// Min is the rule of the earlier of two times.
func Min(a, b reflect.Value) any {
	x, y := a.Interface().(time.Time), b.Interface().(time.Time)
	if y.Before(x) {
		return y
	}
	return x
}

// Max is the rule of the later of two times.
func Max(a, b reflect.Value) any {
	x, y := a.Interface().(time.Time), b.Interface().(time.Time)
	if y.After(x) {
		return y
	}
	return x
}

// base is the first time Fill gives; every further time is a second later.
var base = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// Fill sets every leaf of *ptr to a distinct non-zero value, the n-th
// leaf (from 1, in field order) getting start+n: an integer or float
// start+n, a string "s<start+n>", a bool true, a time base+(start+n) s, a
// pointer a new value filled the same way, a slice two filled elements.
// Fill panics on a kind it does not know (a map, a func, a channel): a
// result type holding one needs a rule of its own.
func Fill(ptr any, start int) {
	n := start
	fill(reflect.ValueOf(ptr).Elem(), &n)
}

func fill(v reflect.Value, n *int) {
	if v.Type() == reflect.TypeFor[time.Time]() {
		*n++
		v.Set(reflect.ValueOf(base.Add(time.Duration(*n) * time.Second)))
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), n)
			}
		}
	case reflect.Array:
		for i := range v.Len() {
			fill(v.Index(i), n)
		}
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 2, 2)
		for i := range 2 {
			fill(s.Index(i), n)
		}
		v.Set(s)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(p.Elem(), n)
		v.Set(p)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		*n++
		v.SetInt(int64(*n))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		*n++
		v.SetUint(uint64(*n))
	case reflect.Float32, reflect.Float64:
		*n++
		v.SetFloat(float64(*n))
	case reflect.String:
		*n++
		v.SetString(fmt.Sprintf("s%d", *n))
	case reflect.Bool:
		v.SetBool(true)
	default:
		panic("mergetest.Fill: no value for a " + v.Kind().String() + " (give the field a rule of its own)")
	}
}

// Leaves returns the leaves of v by path ("Schedule.Sent[1]"): the
// numbers, strings, bools and times inside its structs and arrays; a
// pointer or a slice is one leaf, compared whole.
func Leaves(v any) map[string]reflect.Value {
	m := map[string]reflect.Value{}
	leaves(reflect.ValueOf(v), "", m)
	return m
}

func leaves(v reflect.Value, path string, m map[string]reflect.Value) {
	switch {
	case v.Type() == reflect.TypeFor[time.Time]():
	case v.Kind() == reflect.Struct:
		for i := range v.NumField() {
			if f := v.Type().Field(i); f.IsExported() {
				leaves(v.Field(i), strings.TrimPrefix(path+"."+f.Name, "."), m)
			}
		}
		return
	case v.Kind() == reflect.Array:
		for i := range v.Len() {
			leaves(v.Index(i), fmt.Sprintf("%s[%d]", path, i), m)
		}
		return
	}
	m[path] = v
}

// Check merges: it fills a and b with distinct values (a's below b's,
// then above), calls merge(a, b), and fails t for every leaf of the result
// that is not what its rule in rules says, and for every leaf without a
// rule (a field added to the type: merge it, then give it its rule here).
// A key "Field.*" gives the rule of every leaf under Field. A leaf
// without a rule is a Sum when it is a number. T is the result type.
func Check[T any](t testing.TB, merge func(a, b *T), rules map[string]Rule) {
	t.Helper()
	// Both orders: the receiver's values below the argument's, then above
	// (a Min is not a First, a Max not a Second).
	check(t, merge, rules, 0, 1000)
	check(t, merge, rules, 1000, 0)
}

func check[T any](t testing.TB, merge func(a, b *T), rules map[string]Rule, sa, sb int) {
	t.Helper()
	var a, b T
	Fill(&a, sa)
	Fill(&b, sb)
	before, other := Leaves(a), Leaves(b)
	merge(&a, &b)
	after := Leaves(a)
	paths := make([]string, 0, len(after))
	for p := range after {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		rule, ok := lookup(rules, p)
		if !ok {
			switch after[p].Kind() {
			case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
				reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
				reflect.Float32, reflect.Float64:
				rule = Sum
			default:
				t.Errorf("%T.%s has no merge rule: merge it, then give it its rule in the test", a, p)
				continue
			}
		}
		want := rule(before[p], other[p])
		if got := after[p].Interface(); !reflect.DeepEqual(got, reflect.ValueOf(want).Convert(after[p].Type()).Interface()) {
			t.Errorf("%T.%s after the merge = %v, want %v (before %v, merged in %v): merge the field as its rule says", a, p, got, want, before[p].Interface(), other[p].Interface())
		}
	}
	for p := range rules {
		used := false
		for q := range after {
			used = used || q == p || strings.HasSuffix(p, ".*") && strings.HasPrefix(q, strings.TrimSuffix(p, "*"))
		}
		if !used {
			t.Errorf("rule for %T.%s, which is not a field (any more)", a, p)
		}
	}
}

// lookup returns the rule of path: its own, or that of the nearest
// "Field.*" above it (every leaf of Field).
func lookup(rules map[string]Rule, path string) (Rule, bool) {
	if r, ok := rules[path]; ok {
		return r, true
	}
	for p := path; ; {
		i := strings.LastIndexByte(p, '.')
		if i < 0 {
			return nil, false
		}
		p = p[:i]
		if r, ok := rules[p+".*"]; ok {
			return r, true
		}
	}
}
