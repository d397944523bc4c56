// Package rendezvous coordinates the shards of one sharded run
// (docs/distributed.md). Shard 0 listens at one address; every other
// shard dials it. Over that one connection per shard the shards pass:
//
//   - the join, once each has loaded its corpus: every shard's key (seed,
//     command line, corpus digest, lanes) must equal shard 0's, or the
//     shard is refused; Join returns when every shard has joined, with
//     shard 0's run id;
//   - a clock measurement (the round trip of a few pings; the shard's
//     offset from shard 0's wall clock is taken from the fastest);
//   - the run's barriers (replay.Coordinator): each releases when every
//     shard reached it, at one instant shard 0 chooses a little ahead and
//     each shard converts to its own clock, with the shards' profiling
//     alignments combined;
//   - the failed-request threshold over every shard: each shard reports
//     its counts, shard 0 judges the totals (scenario.ExceedsThreshold);
//   - the stop: a shard that aborts tells shard 0, which tells the others;
//     a shard whose connection closes without its goodbye, or that sends
//     nothing (not even the heartbeat) for the dead time, has vanished,
//     and the others are stopped the same way; a shard that loses shard 0
//     stops.
//
// The protocol is one JSON object per line; a peer that sends anything
// else is dropped. Nothing here sends requests or reads records.
package rendezvous
