package gateway

import (
	"context"
	"sort"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/gateway/plog"
)

// Groups outlive their members: a group with committed offsets exists as a
// DIS app after every consumer stopped and after a gateway restart. These
// helpers find such groups for ListGroups and DescribeGroups.

// groupStateEmpty is Kafka's name for a group without members.
const groupStateEmpty = "Empty"

// rememberGroup records which group id an encoded app name stands for.
func (gw *Gateway) rememberGroup(group string) {
	if app := appNameFor(group); isEncodedAppName(app) {
		gw.groupForApp.Store(app, group)
	}
}

// groupIDForApp returns the group id an app stands for: the app name
// itself, or for encoded names the id kept in checkpoint metadata. It
// returns "" when an encoded app has no checkpoint to tell, and for the
// app that holds offset watermarks, which is no group.
func (gw *Gateway) groupIDForApp(ctx context.Context, tn *tenant, app string) string {
	if !isEncodedAppName(app) {
		return app
	}
	if app == plog.WatermarkApp {
		return ""
	}
	if g, ok := gw.groupForApp.Load(app); ok {
		return g.(string)
	}
	a, err := tn.dis.DescribeApp(ctx, app)
	if err != nil {
		return ""
	}
	for _, stream := range a.CommitCheckpointStreamNames {
		st, err := tn.dis.ConsumerState(ctx, app, stream, 1000, "")
		if err != nil {
			continue
		}
		for _, p := range st.PartitionConsumingStates {
			if p.SequenceNumber == "" || p.SequenceNumber == "-1" {
				continue
			}
			cp, err := tn.dis.GetCheckpoint(ctx, &disclient.GetCheckpointRequest{AppName: app, StreamName: stream,
				PartitionID: p.PartitionID, CheckpointType: disclient.CheckpointLastRead})
			if err != nil {
				continue
			}
			if g, _ := decodeCheckpointMetadata(app, cp.Metadata); g != "" {
				gw.groupForApp.Store(app, g)
				return g
			}
		}
	}
	return ""
}

// storedGroups lists the group ids of every DIS app, sorted.
func (gw *Gateway) storedGroups(ctx context.Context, tn *tenant) ([]string, error) {
	var groups []string
	start := ""
	for {
		resp, err := tn.dis.ListApps(ctx, 100, start, "")
		if err != nil {
			return nil, err
		}
		for _, a := range resp.Apps {
			if g := gw.groupIDForApp(ctx, tn, a.AppName); g != "" {
				groups = append(groups, g)
			}
		}
		if !resp.HasMoreApp || len(resp.Apps) == 0 {
			break
		}
		start = resp.Apps[len(resp.Apps)-1].AppName
	}
	sort.Strings(groups)
	return groups, nil
}

// groupStored reports whether the group has a DIS app.
func (gw *Gateway) groupStored(ctx context.Context, tn *tenant, group string) (bool, error) {
	_, err := tn.dis.DescribeApp(ctx, appNameFor(group))
	if disclient.IsCode(err, disclient.CodeAppNotFound) {
		return false, nil
	}
	return err == nil, err
}
