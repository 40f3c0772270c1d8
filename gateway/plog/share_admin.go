package plog

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
)

// ShareStartOffset reports group's share-partition start offset on this
// partition, for DescribeShareGroupOffsets: the held state's when this
// gateway serves it, else the kept one; found is false when the group
// never read the partition.
func (ps *Partition) ShareStartOffset(ctx context.Context, group string) (start int64, found bool, code int16) {
	return 0, false, kerr.UnknownServerError.Code // built next (issue 39)
}

// ShareResetStart moves group's share-partition start offset to offset
// (AlterShareGroupOffsets), creating the state when there is none. It
// fails with INVALID_REQUEST... while records are acquired.
func (ps *Partition) ShareResetStart(ctx context.Context, group string, offset int64) int16 {
	return kerr.UnknownServerError.Code
}

// ShareDelete forgets group's share-partition here and as kept
// (DeleteShareGroupOffsets, DeleteGroups).
func (ps *Partition) ShareDelete(ctx context.Context, group string) int16 {
	return kerr.UnknownServerError.Code
}

// ReleaseShareMember makes the records member of group holds on every
// share-partition of this tenant available again: the member left or its
// session expired (groupcoord's Ready.ShareDepartures).
func (tn *Tenant) ReleaseShareMember(group, member string) {}
