// Package plan builds the replay plans of a weka corpus: it turns each
// dataset.Trace into timing's turn model (timing.Trace) and has timing
// plan it (timing.BuildPlan). It is the one place where the corpus model
// meets the replay core, so that timing never reads the corpus and the
// corpus knows nothing of replay.
//
// The turn model carries what planning reads: the recorded start, server
// time and think time of every request, the subagent entries (their
// position, start, duration and tool/system sizes; nested entries only
// counted), and, for a generation whose Layout is timing.LayoutChains, the
// v1.0 chain layout of every level, which Convert computes here with
// dataset.LayoutChains from the hash ids (and dataset.ChainPrefixTokens for
// each chain's declared prefix). The chain detection stays in dataset: it
// is the loader's algorithm over the recorded requests (hash ids, models,
// token counts), none of which timing needs once the chains are known.
//
// A plan's turns point back into their trace (timing.Stream.Subagent and
// timing.Turn.Inner); Requests returns a stream's recorded requests in
// turn order, which is what the engine builds prompts and request bodies
// from.
package plan
