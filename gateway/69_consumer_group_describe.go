package gateway

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/gateway/authz"
	"github.com/disgw/disgw/groupcoord"
)

// ConsumerGroupDescribe v0–v1 (KIP-848).
//
// Describes consumer-protocol groups: epochs, assignor, and each member's
// subscription, assignment and target assignment; v1 the member type
// (always 1, consumer: classic members cannot join these groups here). A
// classic group, or one not in memory, is GROUP_ID_NOT_FOUND, which makes
// Kafka's admin client fall back to DescribeGroups.

func init() {
	regKey(69, 0, 1, api[*kmsg.ConsumerGroupDescribeRequest]{Concurrent: handleConsumerGroupDescribe, Errors: consumerGroupDescribeError})
}

// consumerGroupDescribeError answers every group of req with code.
func consumerGroupDescribeError(req *kmsg.ConsumerGroupDescribeRequest, code int16) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
	for _, g := range req.Groups {
		d := kmsg.NewConsumerGroupDescribeResponseGroup()
		d.Group, d.ErrorCode = g, code
		resp.Groups = append(resp.Groups, d)
	}
	return resp
}

func handleConsumerGroupDescribe(_ context.Context, gw *Gateway, r *request, req *kmsg.ConsumerGroupDescribeRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
	gw.groups.With(r.Tenant(), func(c *groupcoord.Coordinator) {
		for _, g := range req.Groups {
			d := c.DescribeConsumer(g)
			switch {
			case !gw.authorize(r, authz.OpDescribe, authz.ResourceGroup, g):
				d = kmsg.NewConsumerGroupDescribeResponseGroup()
				d.Group, d.ErrorCode = g, groupDenied
			case g == "":
				d = kmsg.NewConsumerGroupDescribeResponseGroup()
				d.ErrorCode = kerr.InvalidGroupID.Code
			case !gw.coordinates(g):
				d = kmsg.NewConsumerGroupDescribeResponseGroup()
				d.Group, d.ErrorCode = g, kerr.NotCoordinator.Code
			}
			resp.Groups = append(resp.Groups, d)
		}
	})
	return resp, nil
}
