#!/usr/bin/env python3
"""Writes tiny.tiktoken: the 256 single bytes (ranks 0-255) and up to 60
byte-level BPE merges learned from the small corpus below (most frequent pair
first, ties broken by the larger pair). Run from this directory:
python3 gen_tiny_tiktoken.py"""
import base64, collections, re

corpus = """func main() {
	fmt.Println("hello, world")
	for i := 0; i < 10; i++ {
		if err := run(i); err != nil {
			return err
		}
	}
}
The quick brown fox jumps over the lazy dog. The dog sleeps in the sun.
def main():
    for i in range(10):
        print("hello", i)
"""
words = re.findall(r" ?\w+| ?[^\w\s]+|\s+", corpus)
seqs = collections.Counter(tuple(bytes([b]) for b in w.encode()) for w in words)
ranks = {bytes([b]): b for b in range(256)}
for _ in range(60):
    pairs = collections.Counter()
    for seq, n in seqs.items():
        for a, b in zip(seq, seq[1:]):
            pairs[(a, b)] += n
    if not pairs:
        break
    (a, b), n = max(pairs.items(), key=lambda kv: (kv[1], kv[0]))
    if n < 2:
        break
    ranks[a + b] = len(ranks)
    new = collections.Counter()
    for seq, c in seqs.items():
        out, i = [], 0
        while i < len(seq):
            if i + 1 < len(seq) and seq[i] == a and seq[i + 1] == b:
                out.append(a + b)
                i += 2
            else:
                out.append(seq[i])
                i += 1
        new[tuple(out)] += c
    seqs = new
with open("tiny.tiktoken", "w") as f:
    for tok, r in sorted(ranks.items(), key=lambda kv: kv[1]):
        f.write(base64.b64encode(tok).decode() + " " + str(r) + "\n")
