package sim

// block is one full KV block of prompt tokens, identified by its chained
// hash. A block with ref == 0 stays cached in an LRU list until evicted.
type block struct {
	hash       uint64
	ref        int32
	prev, next *block
}

// lruList is an intrusive doubly linked list; head is the least recently
// used block.
type lruList struct {
	head, tail *block
	n          int
}

func (l *lruList) pushBack(b *block) {
	b.prev, b.next = l.tail, nil
	if l.tail != nil {
		l.tail.next = b
	} else {
		l.head = b
	}
	l.tail = b
	l.n++
}

func (l *lruList) remove(b *block) {
	if b.prev != nil {
		b.prev.next = b.next
	} else {
		l.head = b.next
	}
	if b.next != nil {
		b.next.prev = b.prev
	} else {
		l.tail = b.prev
	}
	b.prev, b.next = nil, nil
	l.n--
}

// kvCache is one engine's KV memory: a GPU tier of total blocks and an
// optional offload tier. Not safe for concurrent use (the engine's mutex
// guards it).
//
// GPU blocks are in one of three states: used (a hashed block with
// ref > 0, or an unhashed block: a partial prompt block or a decode block,
// counted in unhashed), cached (hashed, ref == 0, in free, evictable) or
// empty. used + free.n ≤ total.
type kvCache struct {
	total int
	used  int
	gpu   map[uint64]*block
	free  lruList

	offCap int
	off    map[uint64]*block
	offLRU lruList

	// counters, in blocks
	evictions    int64 // GPU blocks evicted
	offEvictions int64 // offload blocks evicted
	gpuToCPU     int64 // blocks written to the offload tier
	cpuToGPU     int64 // blocks loaded from the offload tier
}

func newKVCache(totalBlocks, offloadBlocks int) *kvCache {
	kv := &kvCache{total: totalBlocks, gpu: make(map[uint64]*block, totalBlocks), offCap: offloadBlocks}
	if offloadBlocks > 0 {
		kv.off = make(map[uint64]*block, offloadBlocks)
	}
	return kv
}

// lookup returns the number of leading blocks of hashes (at most maxHit)
// cached on the GPU, and how many of the following ones the offload tier
// holds. It changes nothing.
func (kv *kvCache) lookup(hashes []uint64, maxHit int) (gpu, ext int) {
	maxHit = min(maxHit, len(hashes))
	for gpu < maxHit {
		if _, ok := kv.gpu[hashes[gpu]]; !ok {
			break
		}
		gpu++
	}
	if kv.off != nil {
		for gpu+ext < maxHit {
			if _, ok := kv.off[hashes[gpu+ext]]; !ok {
				break
			}
			ext++
		}
	}
	return gpu, ext
}

// available is the number of blocks that can be handed out (empty plus
// evictable).
func (kv *kvCache) available() int { return kv.total - kv.used }

// acquire references one block per hash (sharing cached ones, allocating
// and inserting the others) plus unhashed anonymous blocks, evicting
// unreferenced blocks as needed. extFrom..extTo are the indexes loaded from
// the offload tier (counted as transfers). It returns nil, false and
// changes nothing when the blocks do not fit.
func (kv *kvCache) acquire(hashes []uint64, unhashed, extFrom, extTo int) ([]*block, bool) {
	need := unhashed
	for _, h := range hashes {
		if b, ok := kv.gpu[h]; !ok || b.ref == 0 {
			need++
		}
	}
	// Hashes repeated inside one prompt are counted twice above; that only
	// makes the check conservative.
	if need > kv.available() {
		return nil, false
	}
	blocks := make([]*block, len(hashes))
	// Pass 1: reference what is cached, so allocation cannot evict it.
	for i, h := range hashes {
		if b, ok := kv.gpu[h]; ok {
			kv.ref(b)
			blocks[i] = b
		}
	}
	// Pass 2: allocate the rest.
	for i, h := range hashes {
		if blocks[i] != nil {
			continue
		}
		if b, ok := kv.gpu[h]; ok { // a repeat of an earlier hash of this prompt
			kv.ref(b)
			blocks[i] = b
			continue
		}
		kv.makeRoom()
		b := &block{hash: h, ref: 1}
		kv.gpu[h] = b
		kv.used++
		blocks[i] = b
		if i >= extFrom && i < extTo {
			kv.cpuToGPU++
			if ob, ok := kv.off[h]; ok { // touch
				kv.offLRU.remove(ob)
				kv.offLRU.pushBack(ob)
			}
		}
	}
	for range unhashed {
		kv.makeRoom()
		kv.used++
	}
	return blocks, true
}

func (kv *kvCache) ref(b *block) {
	if b.ref == 0 {
		kv.free.remove(b)
		kv.used++
	}
	b.ref++
}

// makeRoom ensures one empty block exists, evicting the least recently
// used cached block if needed. The caller checked available() > 0.
func (kv *kvCache) makeRoom() {
	if kv.used+kv.free.n < kv.total {
		return
	}
	v := kv.free.head
	kv.free.remove(v)
	delete(kv.gpu, v.hash)
	kv.evictions++
	kv.offload(v)
}

// offload stores an evicted GPU block in the offload tier, if any.
func (kv *kvCache) offload(v *block) {
	if kv.off == nil {
		return
	}
	kv.gpuToCPU++
	if ob, ok := kv.off[v.hash]; ok {
		kv.offLRU.remove(ob)
		kv.offLRU.pushBack(ob)
		return
	}
	if kv.offLRU.n >= kv.offCap {
		old := kv.offLRU.head
		kv.offLRU.remove(old)
		delete(kv.off, old.hash)
		kv.offEvictions++
	}
	v.ref = 0
	kv.off[v.hash] = v
	kv.offLRU.pushBack(v)
}

// reset empties the prefix cache: every cached GPU block no running
// request references, and the whole offload tier. Blocks in use stay (their
// requests still need them) but lose nothing else. It returns the number
// of blocks dropped.
func (kv *kvCache) reset() int {
	n := 0
	for b := kv.free.head; b != nil; {
		next := b.next
		kv.free.remove(b)
		delete(kv.gpu, b.hash)
		n++
		b = next
	}
	if kv.off != nil {
		n += kv.offLRU.n
		clear(kv.off)
		kv.offLRU = lruList{}
	}
	return n
}

// grow takes one more unhashed block (a decode block), evicting if needed.
func (kv *kvCache) grow() bool {
	if kv.available() < 1 {
		return false
	}
	kv.makeRoom()
	kv.used++
	return true
}

// release drops the references of blocks (in reverse, so a prompt's tail
// blocks become the least recently used and are evicted first, as vLLM
// does) and frees unhashed anonymous blocks.
func (kv *kvCache) release(blocks []*block, unhashed int) {
	for i := len(blocks) - 1; i >= 0; i-- {
		b := blocks[i]
		b.ref--
		if b.ref == 0 {
			kv.used--
			kv.free.pushBack(b)
		}
	}
	kv.used -= unhashed
}

// usage is the fraction of GPU blocks in use by running requests, as
// vLLM's kv_cache_usage_perc (cached but unreferenced blocks count as free).
func (kv *kvCache) usage() float64 {
	if kv.total == 0 {
		return 0
	}
	return float64(kv.used) / float64(kv.total)
}

// offUsage is the fraction of the offload tier holding blocks.
func (kv *kvCache) offUsage() float64 {
	if kv.offCap == 0 {
		return 0
	}
	return float64(kv.offLRU.n) / float64(kv.offCap)
}

// blockHashes appends to dst the chained hashes of the full blocks of ids:
// hash i covers ids[0 : (i+1)·size] through hash i-1.
func blockHashes(dst []uint64, ids []uint32, size int) []uint64 {
	h := uint64(0xcbf29ce484222325)
	for end := size; end <= len(ids); end += size {
		for _, t := range ids[end-size : end] {
			h ^= uint64(t)
			h *= 0x100000001b3
			h ^= h >> 29
		}
		h = mix64(h)
		dst = append(dst, h)
	}
	return dst
}

// mix64 is the splitmix64 finalizer.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
