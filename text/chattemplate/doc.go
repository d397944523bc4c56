// Package chattemplate renders a model's own chat template: the Jinja
// template in the chat_template field of its tokenizer_config.json, which
// turns a list of chat messages into the one prompt string the model reads.
//
// It renders as Hugging Face transformers' apply_chat_template(tokenize=False)
// does: the template is compiled with trim_blocks and lstrip_blocks (the
// settings transformers uses), and rendered with messages,
// add_generation_prompt, tools (none) and the tokenizer's special tokens
// (bos_token, eos_token, pad_token, unk_token), with raise_exception and
// strftime_now defined. Rendering is done by github.com/ardanlabs/jinja, a
// maintained pure-Go Jinja engine written for LLM chat templates; this
// package finds the template, reads the special tokens and checks the
// result. The tests render hand-written conversations with the templates of
// real models and compare them byte for byte with what transformers renders
// (testdata/gen_expected.py makes the expected files).
//
// agentperf sends chat messages, not rendered prompts, also under
// --apply-chat-template (as aiperf does); see docs/prompt-synthesis.md,
// "The chat template".
package chattemplate
