// Package groupcoord is Kafka's classic group coordinator as a deterministic
// state machine (docs/design.md §5), in the style of etcd's raft package: no
// goroutines, clock or network inside. The gateway feeds it membership
// requests (Step) and time (Tick), and carries out what Ready returns:
// responses, some of them to requests that waited for a rebalance, and when
// to tick next. Offsets are not kept here; CheckCommit only decides whether a
// commit may go to DIS.
//
// A group moves Empty → PreparingRebalance → CompletingRebalance → Stable as
// in Kafka: a join or a departure starts a rebalance; the join phase ends
// when every member has rejoined or the longest rebalance timeout passes
// (dynamic members that did not rejoin are removed); the leader's SyncGroup
// carries the assignments that make the group Stable. Session timeouts remove
// silent members, and a static member (group.instance.id) that restarts gets
// its assignment back without a rebalance. A group with no members is Empty
// and stays in memory until Delete, which is Kafka's move to Dead, or until
// it expires (offsets.retention.minutes after it emptied or its last
// commit; Ready reports it in Removed so its offsets can go). Config caps
// what clients can make it hold: members and pending member ids per group,
// groups, session and rebalance timeouts.
//
// It also runs KIP-848's consumer group protocol (consumer.go): StepConsumer
// takes ConsumerGroupHeartbeat with the topic metadata the caller looked up,
// and the coordinator assigns partitions itself. A group id is either type,
// never both; an empty group may change type.
//
// Share groups (KIP-932, share.go) are a third type: StepShare takes
// ShareGroupHeartbeat, and the simple assignor lets several members share
// a partition. As in Kafka, a share group never changes type and no other
// group becomes one while it is in memory.
package groupcoord
