// Package cluster is how several gateways in front of one DIS project agree,
// without talking to a coordinator, on which of them owns each partition and
// each consumer group (docs/design.md §6).
package cluster

import "strconv"

// Peer is one gateway of a cluster: its node id, which is its broker id in
// Metadata, and the address clients reach it at on its first Kafka
// listener. A gateway's other listeners are at the same host, with the
// same port offsets from the first as on every gateway (docs/operations.md).
type Peer struct {
	ID   int32
	Host string
	Port int32
}

// PartitionKey is the ownership key of one partition of a topic: every
// gateway must build the same key for it.
func PartitionKey(topic string, partition int32) string {
	return "p/" + strconv.Itoa(int(partition)) + "/" + topic
}

// GroupKey is the ownership key of a consumer group.
func GroupKey(group string) string { return "g/" + group }
