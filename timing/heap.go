package timing

// ref names one turn of one stream of a tree.
type ref struct{ stream, turn int32 }

// entry is a pending turn: due at virtual time due (see Tree).
type entry struct {
	due int64
	ref
}

// less orders entries by due time, then stream, then turn, so equal due
// times release in a fixed order.
func (a entry) less(b entry) bool {
	if a.due != b.due {
		return a.due < b.due
	}
	if a.stream != b.stream {
		return a.stream < b.stream
	}
	return a.turn < b.turn
}

// turnHeap is a binary min-heap of entries. It is written out rather than
// built on container/heap to avoid boxing entries in interfaces on every
// push and pop.
type turnHeap []entry

func (h turnHeap) Len() int { return len(h) }

func (h turnHeap) peek() entry { return h[0] }

func (h *turnHeap) push(e entry) {
	*h = append(*h, e)
	a := *h
	i := len(a) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !a[i].less(a[p]) {
			break
		}
		a[i], a[p] = a[p], a[i]
		i = p
	}
}

func (h *turnHeap) pop() entry {
	a := *h
	top := a[0]
	n := len(a) - 1
	a[0] = a[n]
	a = a[:n]
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && a[r].less(a[l]) {
			m = r
		}
		if !a[m].less(a[i]) {
			break
		}
		a[i], a[m] = a[m], a[i]
		i = m
	}
	*h = a
	return top
}
