package gateway

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/gateway/authz"
	"github.com/disgw/disgw/groupcoord"
)

// DescribeGroups v0–v5.
//
// v1 and v2 only changed throttling; v3 authorized operations; v4 member
// instance ids; v5 flexible. A group with committed offsets in DIS but no
// live members is described as Empty with protocol type "consumer", so
// kafka-consumer-groups --describe works on it (docs/kafka-compat.md item 10); a
// group that exists nowhere is Dead, as Kafka answers before v6, and so is
// a consumer-protocol group (ConsumerGroupDescribe describes those).

func init() {
	regKey(15, 0, 5, api[*kmsg.DescribeGroupsRequest]{Concurrent: handleDescribeGroups, Errors: describeGroupsError})
}

// describeGroupsError answers every group of req with code.
func describeGroupsError(req *kmsg.DescribeGroupsRequest, code int16) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	for _, g := range req.Groups {
		d := kmsg.NewDescribeGroupsResponseGroup()
		d.Group, d.ErrorCode = g, code
		resp.Groups = append(resp.Groups, d)
	}
	return resp
}

// groupStateDead is Kafka's state for a group that does not exist.
const groupStateDead = "Dead"

// groupStateEmpty is Kafka's name for a group without members.
const groupStateEmpty = "Empty"

func handleDescribeGroups(ctx context.Context, gw *Gateway, r *request, req *kmsg.DescribeGroupsRequest) (kmsg.Response, error) {
	tn := r.Tenant()
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	live := make([]*kmsg.DescribeGroupsResponseGroup, len(req.Groups))
	gw.groups.With(r.Tenant(), func(c *groupcoord.Coordinator) {
		for i, g := range req.Groups {
			if d, ok := c.Describe(g); ok {
				live[i] = &d
			}
		}
	})
	for i, g := range req.Groups {
		d := kmsg.NewDescribeGroupsResponseGroup()
		d.Group, d.State = g, groupStateDead
		switch {
		case !gw.authorize(r, authz.OpDescribe, authz.ResourceGroup, g):
			d.ErrorCode = groupDenied
			resp.Groups = append(resp.Groups, d)
			continue
		case !gw.coordinates(g):
			d.ErrorCode = kerr.NotCoordinator.Code
			resp.Groups = append(resp.Groups, d)
			continue
		case live[i] != nil:
			resp.Groups = append(resp.Groups, *live[i])
			continue
		}
		stored, err := gw.groups.GroupStored(ctx, tn, g)
		switch {
		case err != nil:
			d.ErrorCode = kafkaCodeForDIS(err)
		case stored:
			d.State, d.ProtocolType = groupStateEmpty, "consumer"
		}
		resp.Groups = append(resp.Groups, d)
	}
	if req.IncludeAuthorizedOperations {
		for i := range resp.Groups {
			if g := &resp.Groups[i]; g.ErrorCode == 0 {
				g.AuthorizedOperations = gw.authorizedOps(r, authz.ResourceGroup, g.Group)
			}
		}
	}
	return resp, nil
}
