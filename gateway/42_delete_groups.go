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
// offset.

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
			codes[i] = c.Delete(g)
		}
	})
	for i, g := range req.Groups {
		d := kmsg.NewDeleteGroupsResponseGroup()
		d.Group, d.ErrorCode = g, codes[i]
		if d.ErrorCode == 0 {
			err := gw.groups.DeleteApp(ctx, tn, g)
			switch {
			case disclient.IsCode(err, disclient.CodeAppNotFound):
				d.ErrorCode = kerr.GroupIDNotFound.Code
			case err != nil:
				d.ErrorCode = kafkaCodeForDIS(err)
			}
		}
		resp.Groups = append(resp.Groups, d)
	}
	return resp, nil
}
