package gateway

import (
	"context"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/gateway/authz"
	"github.com/disgw/disgw/groupcoord"
)

// ListGroups v0–v5.
//
// v3 flexible; v4 a state filter (KIP-518); v5 the group type and a type
// filter (KIP-848: "classic" or "consumer"). Groups are the coordinator's
// live groups plus every group with committed offsets in DIS, which is an
// Empty classic group.

func init() {
	regKey(16, 0, 5, api[*kmsg.ListGroupsRequest]{Concurrent: handleListGroups, Errors: listGroupsError})
}

func listGroupsError(req *kmsg.ListGroupsRequest, code int16) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	resp.ErrorCode = code
	return resp
}

func handleListGroups(ctx context.Context, gw *Gateway, r *request, req *kmsg.ListGroupsRequest) (kmsg.Response, error) {
	tn := r.Tenant()
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	var live []kmsg.ListGroupsResponseGroup
	gw.groups.With(r.Tenant(), func(c *groupcoord.Coordinator) { live = c.List() })
	seen := map[string]bool{}
	all := live
	for _, g := range live {
		seen[g.Group] = true
	}
	stored, err := gw.groups.StoredGroups(ctx, tn)
	if err != nil {
		gw.log.Warn().Err(err).Msg("list groups: ListApps failed")
		resp.ErrorCode = kafkaCodeForDIS(err)
	}
	for _, g := range stored {
		if !seen[g] {
			lg := kmsg.NewListGroupsResponseGroup()
			lg.Group, lg.ProtocolType, lg.GroupState, lg.GroupType = g, "consumer", groupStateEmpty, "classic"
			all = append(all, lg)
		}
	}
	describeAll := gw.permits(r, authz.OpDescribe, authz.ResourceCluster, authz.ClusterName)
	for _, g := range all {
		if !describeAll && !gw.permits(r, authz.OpDescribe, authz.ResourceGroup, g.Group) {
			continue
		}
		if !gw.coordinates(g.Group) {
			// Admin tools ask every broker: each lists its own.
			continue
		}
		if len(req.StatesFilter) > 0 && !slices.ContainsFunc(req.StatesFilter, func(s string) bool { return strings.EqualFold(s, g.GroupState) }) {
			continue
		}
		if len(req.TypesFilter) > 0 && !slices.ContainsFunc(req.TypesFilter, func(s string) bool { return strings.EqualFold(s, g.GroupType) }) {
			continue
		}
		resp.Groups = append(resp.Groups, g)
	}
	return resp, nil
}
