package plog

import (
	"context"

	"github.com/disgw/disgw/gateway/sharestore"
)

// ShareKeys lists the share-partitions of group with kept state, sorted
// (ShareStates.Keys), for the admin APIs that cover a whole group:
// DescribeShareGroupOffsets without topics, DeleteShareGroupOffsets and
// DeleteGroups. A tenant made without Deps.Shares keeps none.
func (tn *Tenant) ShareKeys(ctx context.Context, group string) ([]sharestore.Key, error) {
	if tn.d.Shares == nil {
		return nil, nil
	}
	return tn.d.Shares.Keys(ctx, group)
}
