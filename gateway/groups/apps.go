package groups

import (
	"context"
	"sort"

	"github.com/disgw/disgw/disclient"
)

// Groups outlive their members: a group with committed offsets exists as a
// DIS app after every consumer stopped and after a gateway restart. These
// helpers find such groups for ListGroups and DescribeGroups.

// rememberGroup records which group id an encoded app name stands for.
func (d *Driver[T]) rememberGroup(group string) {
	if app := appNameFor(group); isEncodedAppName(app) {
		d.groupForApp.Store(app, group)
	}
}

// groupIDForApp returns the group id an app stands for: the app name
// itself, or for encoded names the id kept in checkpoint metadata. It
// returns "" when an encoded app has no checkpoint to tell, and for the
// apps that hold offset watermarks and group configs, which are no group.
func (d *Driver[T]) groupIDForApp(ctx context.Context, tn T, app string) string {
	if !isEncodedAppName(app) {
		return app
	}
	if app == d.deps.WatermarkApp || isConfigApp(app) {
		return ""
	}
	if g, ok := d.groupForApp.Load(app); ok {
		return g.(string)
	}
	dis := d.deps.DIS(tn)
	a, err := dis.DescribeApp(ctx, app)
	if err != nil {
		return ""
	}
	for _, stream := range a.CommitCheckpointStreamNames {
		st, err := dis.ConsumerState(ctx, app, stream, 1000, "")
		if err != nil {
			continue
		}
		for _, p := range st.PartitionConsumingStates {
			if p.SequenceNumber == "" || p.SequenceNumber == "-1" {
				continue
			}
			cp, err := dis.GetCheckpoint(ctx, &disclient.GetCheckpointRequest{AppName: app, StreamName: stream,
				PartitionID: p.PartitionID, CheckpointType: disclient.CheckpointLastRead})
			if err != nil {
				continue
			}
			if g, _ := decodeCheckpointMetadata(app, cp.Metadata); g != "" {
				d.groupForApp.Store(app, g)
				return g
			}
		}
	}
	return ""
}

// StoredGroups lists the group ids of every DIS app of tn's, sorted: the
// groups ListGroups adds to the live ones.
func (d *Driver[T]) StoredGroups(ctx context.Context, tn T) ([]string, error) {
	var groups []string
	start := ""
	for {
		resp, err := d.deps.DIS(tn).ListApps(ctx, 100, start, "")
		if err != nil {
			return nil, err
		}
		for _, a := range resp.Apps {
			if g := d.groupIDForApp(ctx, tn, a.AppName); g != "" {
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

// GroupStored reports whether tn's group has a DIS app: a group without
// live members still exists while it has committed offsets.
func (d *Driver[T]) GroupStored(ctx context.Context, tn T, group string) (bool, error) {
	_, err := d.deps.DIS(tn).DescribeApp(ctx, appNameFor(group))
	if disclient.IsCode(err, disclient.CodeAppNotFound) {
		return false, nil
	}
	return err == nil, err
}
