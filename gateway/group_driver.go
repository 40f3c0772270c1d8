package gateway

import (
	"context"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/gateway/authz"
	"github.com/disgw/disgw/gateway/groups"
	"github.com/disgw/disgw/gateway/plog"
	"github.com/disgw/disgw/gateway/topics"
	"github.com/disgw/disgw/gateway/wire"
	"github.com/disgw/disgw/groupcoord"
)

// newGroupDriver makes the driver of every tenant's groups
// (docs/design.md §5): the coordinators' settings, tenants' ids and access
// keys, ownership, each tenant's DIS client, catalog, apps and partition
// log, and hooks for metrics and panics.
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
			ShareSessionTimeout:       cfg.ShareGroupSessionTimeout,
			ShareHeartbeatInterval:    cfg.ShareGroupHeartbeatInterval,
			ShareMaxGroupSize:         cfg.ShareGroupMaxSize,
		},
		Log:                gw.log,
		Tenant:             func(tn *tenant) (string, string) { return tn.id, tn.accessKey },
		Coordinates:        gw.coordinates,
		Ready:              gw.metrics.GroupsReady,
		Go:                 gw.panics.Go,
		Recover:            gw.panics.Recover,
		Ctx:                gw.ctx,
		RequestTimeout:     cfg.RequestTimeout,
		MaxCheckpointReads: cfg.MaxCheckpointReadsPerRequest,
		DIS:                func(tn *tenant) disclient.API { return tn.dis },
		Catalog:            func(tn *tenant) *topics.Catalog { return tn.catalog },
		Apps:               func(tn *tenant) *sync.Map { return &tn.knownApps },
		Partition: func(tn *tenant, t *topics.Meta, p int32) groups.Partition {
			return gw.partitionFor(tn.key(t, p))
		},
		WatermarkApp:  plog.WatermarkApp,
		KafkaCode:     kafkaCodeForDIS,
		Parallel:      gw.parallel,
		ShareDeparted: gw.shareMemberLeft,
		Committed: func(tn *tenant, group string, t *topics.Meta, p int32, offset int64) {
			gw.metrics.Committed(group, tn.key(t, p), offset)
		},
	})
}

// groupConn is the connection r came on, as the group driver sees it.
func groupConn(r *request) groups.Conn[*tenant] {
	return groups.Conn[*tenant]{
		Tenant:   r.Tenant(),
		ClientID: r.ClientID(),
		Host:     r.RemoteHost(),
		Refuse:   r.ErrorResponse,
	}
}

// stepGroup is the handler of the membership APIs. It hands req to the
// driver on the dispatcher, so the coordinator sees a connection's
// requests in order, and waits for the answer concurrently: the
// coordinator decides when (a JoinGroup waits for the rebalance).
func stepGroup[Req kmsg.Request](_ context.Context, gw *Gateway, r *request, req Req) (kmsg.Response, wire.Continuation, error) {
	if !gw.authorize(r, authz.OpRead, authz.ResourceGroup, groups.MembershipGroup(req)) {
		return r.ErrorResponse(groupDenied), nil, nil
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
