// Package sharestore keeps the state records of many share-partitions
// (gateway/plog/sharestate) in one keyed, compacted log, as txns keeps the
// transaction state (docs/design.md §14): pure logic over a small Log
// interface, so that it never imports the gateway and every path, crashes
// and late writes of a former owner included, runs in a test.
//
// A share-partition's records all go to one log partition (PartitionOf).
// Its latest snapshot and every update are each under their own key, so
// compaction keeps what a recovery needs; once a snapshot is durable the
// keys before it are tombstoned, so compaction keeps one snapshot and the
// updates after it. A store takes a log partition over with Take, which
// writes a load record with an epoch above every one it read; every key it
// writes carries that epoch, and a load skips what a lower epoch wrote
// after a higher epoch's load record, so a former owner's late write
// cannot change the state.
package sharestore
