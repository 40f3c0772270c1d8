package gateway

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/gateway/authz"
	"github.com/disgw/disgw/gateway/groups"
	"github.com/disgw/disgw/groupcoord"
)

// newGroupDriver makes the driver of every tenant's groups
// (docs/design.md §5): the coordinators' settings, tenants' ids and access
// keys, ownership, expired groups' DIS apps, and hooks for metrics and
// panics.
func newGroupDriver(gw *Gateway) *groups.Driver[*tenant] {
	cfg := &gw.cfg
	return groups.New(groups.Deps[*tenant]{
		Coord: groupcoord.Config{
			MaxRebalanceTimeout:       cfg.GroupMaxRebalanceTimeout,
			MaxGroupSize:              cfg.GroupMaxSize,
			MaxPendingMembers:         cfg.GroupMaxPendingMembers,
			MaxGroups:                 cfg.MaxGroups,
			OffsetsRetention:          cfg.OffsetsRetention,
			InitialRebalanceDelay:     cfg.InitialRebalanceDelay,
			ConsumerSessionTimeout:    cfg.ConsumerGroupSessionTimeout,
			ConsumerHeartbeatInterval: cfg.ConsumerGroupHeartbeatInterval,
		},
		Log:         gw.log,
		Tenant:      func(tn *tenant) (string, string) { return tn.id, tn.accessKey },
		Coordinates: gw.coordinates,
		Expire:      gw.expireOffsets,
		Ready:       gw.metrics.GroupsReady,
		Go:          gw.goSafe,
		Recover:     gw.recoverPanic,
	})
}

// groupConn is the connection r came on, as the group driver sees it.
func groupConn(r *request) groups.Conn[*tenant] {
	clientID := ""
	if r.hdr.ClientID != nil {
		clientID = *r.hdr.ClientID
	}
	return groups.Conn[*tenant]{
		Tenant:   r.tenant,
		ClientID: clientID,
		Host:     r.s.remoteHost(),
		Refuse:   func(code int16) kmsg.Response { return r.h.errorResponse(r, code) },
	}
}

// stepGroup is the handler of the membership APIs. It hands req to the
// driver on the dispatcher, so the coordinator sees a connection's
// requests in order, and waits for the answer concurrently: the
// coordinator decides when (a JoinGroup waits for the rebalance).
func stepGroup[Req kmsg.Request](_ context.Context, gw *Gateway, r *request, req Req) (kmsg.Response, continuation, error) {
	if !gw.authorize(r, authz.OpRead, authz.ResourceGroup, groups.MembershipGroup(req)) {
		return r.h.errorResponse(r, groupDenied), nil, nil
	}
	answer := gw.groups.Step(groupConn(r), req)
	return nil, func(ctx context.Context) (kmsg.Response, error) {
		select {
		case resp := <-answer:
			return resp, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}, nil
}
