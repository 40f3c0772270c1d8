package gateway

import "github.com/disgw/disgw/gateway/cluster"

// Membership is the gateway's view of the gateways sharing its DIS project
// (docs/design.md §6): which are alive, and which of them owns a partition
// or a group. Every gateway with the same live set must name the same owner.
type Membership interface {
	// Live lists the live gateways, this one included, by node id.
	Live() []cluster.Peer
	// Owner names the gateway that owns key (cluster.PartitionKey,
	// cluster.GroupKey) among the live ones.
	Owner(key string) cluster.Peer
	// Changed is closed when the live set changes; call it again for
	// the next change.
	Changed() <-chan struct{}
}

// soleMembership is a gateway alone: it is alive and owns everything.
type soleMembership struct{ self cluster.Peer }

func (m soleMembership) Live() []cluster.Peer      { return []cluster.Peer{m.self} }
func (m soleMembership) Owner(string) cluster.Peer { return m.self }
func (m soleMembership) Changed() <-chan struct{}  { return nil }
