"""Write a tiny random-weight Llama-architecture GGUF for bench/real-engine.

The model is useless as a language model (random weights) but real to the
server: llama.cpp loads it, tokenizes with the real BPE tokenizer given
(HF tokenizer.json, optionally .zst), renders prompts with its chat
template, and runs a real forward pass (2 layers, hidden 128), so prefill
and decode cost, the KV cache, slots and context limits are llama.cpp's own.

usage: make_gguf.py TOKENIZER_JSON[.zst] TOKENIZER_CONFIG_JSON OUT.gguf
"""
import io
import json
import sys

import gguf
import numpy as np


def load_json(path):
    if path.endswith(".zst"):
        import subprocess
        data = subprocess.run(["zstd", "-dc", path], check=True, capture_output=True).stdout
        return json.loads(data)
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def main():
    tok_path, cfg_path, out = sys.argv[1:4]
    tok = load_json(tok_path)
    cfg = load_json(cfg_path)
    model = tok["model"]
    if model.get("type") != "BPE":
        sys.exit(f"{tok_path}: a byte-level BPE tokenizer is needed, got {model.get('type')}")
    vocab = model["vocab"]
    added = {a["id"]: a for a in tok.get("added_tokens", [])}
    n_vocab = max(list(vocab.values()) + list(added)) + 1
    tokens = [f"[PAD{i}]" for i in range(n_vocab)]
    types = [gguf.TokenType.UNUSED] * n_vocab
    for t, i in vocab.items():
        tokens[i], types[i] = t, gguf.TokenType.NORMAL
    for i, a in added.items():
        tokens[i] = a["content"]
        types[i] = gguf.TokenType.CONTROL if a.get("special") else gguf.TokenType.USER_DEFINED
    merges = [m if isinstance(m, str) else " ".join(m) for m in model["merges"]]
    by_text = {t: i for i, t in enumerate(tokens)}

    n_embd, n_layer, n_head, n_kv, n_ff = 128, 2, 4, 4, 256
    w = gguf.GGUFWriter(out, "llama")
    w.add_name("agentperf-bench-tiny-random")
    w.add_context_length(262144)
    w.add_embedding_length(n_embd)
    w.add_block_count(n_layer)
    w.add_feed_forward_length(n_ff)
    w.add_head_count(n_head)
    w.add_head_count_kv(n_kv)
    w.add_rope_dimension_count(n_embd // n_head)
    w.add_rope_freq_base(1e6)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("qwen2")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    for name, fn in (("eos_token", w.add_eos_token_id), ("bos_token", w.add_bos_token_id), ("pad_token", w.add_pad_token_id)):
        t = cfg.get(name)
        if isinstance(t, dict):
            t = t.get("content")
        if t in by_text:
            fn(by_text[t])
    w.add_add_bos_token(bool(cfg.get("add_bos_token", False)))
    if cfg.get("chat_template"):
        w.add_chat_template(cfg["chat_template"])

    rng = np.random.default_rng(0)

    def rnd(*shape, dtype=np.float32):
        return (rng.standard_normal(shape) * 0.02).astype(dtype)

    w.add_tensor("token_embd.weight", rnd(n_vocab, n_embd, dtype=np.float16))
    w.add_tensor("output_norm.weight", np.ones(n_embd, dtype=np.float32))
    w.add_tensor("output.weight", rnd(n_vocab, n_embd, dtype=np.float16))
    hd = n_embd // n_head
    for i in range(n_layer):
        p = f"blk.{i}."
        w.add_tensor(p + "attn_norm.weight", np.ones(n_embd, dtype=np.float32))
        w.add_tensor(p + "attn_q.weight", rnd(n_embd, n_embd))
        w.add_tensor(p + "attn_k.weight", rnd(n_kv * hd, n_embd))
        w.add_tensor(p + "attn_v.weight", rnd(n_kv * hd, n_embd))
        w.add_tensor(p + "attn_output.weight", rnd(n_embd, n_embd))
        w.add_tensor(p + "ffn_norm.weight", np.ones(n_embd, dtype=np.float32))
        w.add_tensor(p + "ffn_gate.weight", rnd(n_ff, n_embd))
        w.add_tensor(p + "ffn_up.weight", rnd(n_ff, n_embd))
        w.add_tensor(p + "ffn_down.weight", rnd(n_embd, n_ff))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print(f"wrote {out}: llama, {n_layer} layers, hidden {n_embd}, vocab {n_vocab}, chat template {len(cfg.get('chat_template') or '')} chars")


if __name__ == "__main__":
    main()
