// Package sharestate is the delivery state of one share-partition (a share
// group's view of one topic partition, KIP-932) as a deterministic state
// machine (docs/design.md §14), in the style of txncoord and groupcoord: no
// goroutines, clock, network or storage inside, so every path through it,
// crashes included, can be driven by a test. The partition log that owns the
// partition feeds it what it read from the log (Acquire), the members'
// acknowledgements (Acknowledge), departures (ReleaseMember), the log start
// moving (MoveLogStart), admin resets (ResetStartOffset) and time (Tick),
// and carries out what Ready returns: at most one state record to persist at
// a time, and the answers to acknowledgements whose effect is durable.
//
// The state is the share-partition start offset (SPSO: every offset below it
// is done), the end offset (SPEO: one past the last offset ever taken in),
// and between the two a list of runs of consecutive offsets sharing one
// state: Available, Acquired by a member with a delivery count and a lock
// deadline, Acknowledged, or Archived. A batch read from the log is taken in
// whole as one run and split only when part of it changes, so the memory is
// bounded by the in-flight cap, not by the records that went through.
package sharestate
