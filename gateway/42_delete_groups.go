package gateway

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/gateway/authz"
	"github.com/disgw/disgw/groupcoord"
)

// DeleteGroups v0–v2.
//
// v2 made it flexible. A group with live members is refused with
// GROUP_NOT_EMPTY; otherwise its DIS app goes, and with it every committed
// offset. A share group's state goes first, on every partition that holds
// some (as Kafka deletes it before the group), then the group; one the
// coordinator no longer holds is found by its kept state.

func init() {
	regKey(42, 0, 2, api[*kmsg.DeleteGroupsRequest]{Concurrent: handleDeleteGroups, Errors: deleteGroupsError})
}

// deleteGroupsError answers every group of req with code.
func deleteGroupsError(req *kmsg.DeleteGroupsRequest, code int16) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	for _, g := range req.Groups {
		d := kmsg.NewDeleteGroupsResponseGroup()
		d.Group, d.ErrorCode = g, code
		resp.Groups = append(resp.Groups, d)
	}
	return resp
}

func handleDeleteGroups(ctx context.Context, gw *Gateway, r *request, req *kmsg.DeleteGroupsRequest) (kmsg.Response, error) {
	tn := r.Tenant()
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	codes := make([]int16, len(req.Groups))
	share := make([]bool, len(req.Groups))
	gw.groups.With(r.Tenant(), func(c *groupcoord.Coordinator) {
		for i, g := range req.Groups {
			if !gw.authorize(r, authz.OpDelete, authz.ResourceGroup, g) {
				codes[i] = groupDenied
				continue
			}
			if !gw.coordinates(g) {
				codes[i] = kerr.NotCoordinator.Code
				continue
			}
			if d := c.DescribeShare(g); d.ErrorCode == 0 && len(d.Members) == 0 {
				share[i] = true // deleted once its state is
				continue
			}
			codes[i] = c.Delete(g)
		}
	})
	for i, g := range req.Groups {
		d := kmsg.NewDeleteGroupsResponseGroup()
		d.Group, d.ErrorCode = g, codes[i]
		if share[i] {
			d.ErrorCode = gw.deleteHeldShareGroup(ctx, tn, g)
		}
		if d.ErrorCode == 0 {
			err := gw.groups.DeleteApp(ctx, tn, g)
			switch {
			case disclient.IsCode(err, disclient.CodeAppNotFound) && !share[i]:
				// Not a group in memory nor one with offsets: a share
				// group forgotten while empty still has its state.
				var found bool
				if found, d.ErrorCode = gw.deleteShareGroup(ctx, tn, g); d.ErrorCode == 0 && !found {
					d.ErrorCode = kerr.GroupIDNotFound.Code
				}
			case disclient.IsCode(err, disclient.CodeAppNotFound):
			case err != nil:
				d.ErrorCode = kafkaCodeForDIS(err)
			}
		}
		resp.Groups = append(resp.Groups, d)
	}
	return resp, nil
}

// deleteHeldShareGroup deletes the empty share group the coordinator holds:
// its state, then the group, unless a member joined meanwhile.
func (gw *Gateway) deleteHeldShareGroup(ctx context.Context, tn *tenant, group string) int16 {
	if _, code := gw.deleteShareGroup(ctx, tn, group); code != 0 {
		return code
	}
	var code int16
	gw.groups.With(tn, func(c *groupcoord.Coordinator) { code = c.Delete(group) })
	return code
}
