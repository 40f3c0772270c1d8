// Package txncoord is Kafka's transaction coordinator as a deterministic
// state machine (docs/design.md §13), in the style of groupcoord: no
// goroutines, clock, network or storage inside. The gateway feeds it
// client requests (Step), the state records it persisted or loaded
// (Persisted, Load), the outcome of the markers it asked for
// (MarkersWritten) and time (Tick), and carries out what Ready returns:
// state records to persist, markers to write into data partitions, offsets
// to commit, and responses, each released only once the state record it
// depends on is persisted, as Kafka answers only after its log append.
//
// A transactional id moves Empty → Ongoing → PrepareCommit|PrepareAbort →
// CompleteCommit|CompleteAbort → Ongoing … as in Kafka. Both transaction
// versions are served, per producer: version 1 (clients add partitions and
// offsets with AddPartitionsToTxn and AddOffsetsToTxn; EndTxn keeps the
// epoch) and version 2 (KIP-890 part 2: partitions join implicitly, and
// every EndTxn bumps the epoch, so a delayed request of an ended
// transaction is fenced).
package txncoord
