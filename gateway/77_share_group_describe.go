package gateway

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/gateway/authz"
	"github.com/disgw/disgw/groupcoord"
)

// ShareGroupDescribe v0–v1 (KIP-932).
//
// Describes share groups: state, epochs, the assignor ("simple") and each
// member with its subscription and the assignment it was last given. v1
// changed nothing on the wire. A group of another type, or one not in
// memory, is GROUP_ID_NOT_FOUND. As Kafka (KAFKA-18817), a group whose
// members subscribe to or are assigned a topic the caller may not
// describe is answered TOPIC_AUTHORIZATION_FAILED without its members,
// so that describing a group never reveals a topic the ACLs hide.

func init() {
	regKey(77, 0, 1, api[*kmsg.ShareGroupDescribeRequest]{Concurrent: handleShareGroupDescribe, Errors: shareGroupDescribeError})
}

// shareGroupDescribeError answers every group of req with code.
func shareGroupDescribeError(req *kmsg.ShareGroupDescribeRequest, code int16) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ShareGroupDescribeResponse)
	for _, g := range req.GroupIDs {
		d := kmsg.NewShareGroupDescribeResponseGroup()
		d.GroupID, d.ErrorCode = g, code
		resp.Groups = append(resp.Groups, d)
	}
	return resp
}

func handleShareGroupDescribe(_ context.Context, gw *Gateway, r *request, req *kmsg.ShareGroupDescribeRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.ShareGroupDescribeResponse)
	allowed := make([]bool, len(req.GroupIDs))
	for i, g := range req.GroupIDs {
		allowed[i] = gw.authorize(r, authz.OpDescribe, authz.ResourceGroup, g)
	}
	gw.groups.With(r.Tenant(), func(c *groupcoord.Coordinator) {
		for i, g := range req.GroupIDs {
			d := kmsg.NewShareGroupDescribeResponseGroup()
			d.GroupID = g
			switch {
			case !allowed[i]:
				d.ErrorCode = groupDenied
			case g == "":
				d.ErrorCode = kerr.InvalidGroupID.Code
			case !gw.coordinates(g):
				d.ErrorCode = kerr.NotCoordinator.Code
			default:
				d = c.DescribeShare(g)
			}
			resp.Groups = append(resp.Groups, d)
		}
	})
	for i := range resp.Groups {
		d := &resp.Groups[i]
		if d.ErrorCode != 0 {
			continue
		}
		if hidden := gw.hiddenShareTopics(r, d); hidden > 0 {
			r.Log().Info().Str("principal", r.Principal()).Str("group", d.GroupID).Int("topics", hidden).
				Msg("denied by ACLs: a share group using topics the caller may not describe is not described")
			*d = kmsg.NewShareGroupDescribeResponseGroup()
			d.GroupID, d.ErrorCode = req.GroupIDs[i], topicDenied
			d.ErrorMessage = kmsg.StringPtr("The group has described topic(s) that the client is not authorized to describe.")
			continue
		}
		if req.IncludeAuthorizedOperations {
			d.AuthorizedOperations = gw.authorizedOps(r, authz.ResourceGroup, d.GroupID)
		}
	}
	return resp, nil
}

// hiddenShareTopics counts the topics d's members subscribe to or are
// assigned that the caller may not describe.
func (gw *Gateway) hiddenShareTopics(r *request, d *kmsg.ShareGroupDescribeResponseGroup) int {
	seen := map[string]bool{}
	for _, m := range d.Members {
		for _, t := range m.SubscribedTopicNames {
			seen[t] = true
		}
		for _, tp := range m.Assignment.TopicPartitions {
			seen[tp.Topic] = true
		}
	}
	hidden := 0
	for t := range seen {
		if !gw.permits(r, authz.OpDescribe, authz.ResourceTopic, t) {
			hidden++
		}
	}
	return hidden
}
