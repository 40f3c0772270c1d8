package groups

import (
	"context"
	"errors"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/gateway/topics"
)

// Committed offsets are DIS checkpoints (docs/design.md §2): the LAST_READ
// checkpoint of the group's app on (stream, partition) holds the next offset
// to read, as Kafka's committed offset does and as Huawei's DIS Kafka
// adapter stores it, so both kinds of consumer can share a group.

// expireOffsets deletes an expired group's DIS app, and with it every
// committed offset (Kafka's offsets.retention.minutes). It runs in the
// group's commit queue, behind the writes accepted before the group went.
func (d *Driver[T]) expireOffsets(tn T, group string) {
	ctx, cancel := context.WithTimeout(d.deps.Ctx, d.deps.RequestTimeout)
	defer cancel()
	app := appNameFor(group)
	err := d.deps.DIS(tn).DeleteApp(ctx, app)
	d.deps.Apps(tn).Delete(app)
	d.groupForApp.Delete(app)
	switch {
	case err == nil, disclient.IsCode(err, disclient.CodeAppNotFound):
		d.deps.Log.Info().Str("group", group).Msg("offsets of an empty group expired: deleted its DIS app")
	default:
		d.deps.Log.Warn().Err(err).Str("group", group).Msg("deleting the DIS app of an expired group failed; its offsets stay until DeleteGroups")
	}
}

// EnsureApp creates tn's app on first use: a group's, or the partition
// log's.
func (d *Driver[T]) EnsureApp(ctx context.Context, tn T, app string) error {
	known := d.deps.Apps(tn)
	if _, ok := known.Load(app); ok {
		return nil
	}
	err := d.deps.DIS(tn).CreateApp(ctx, app)
	if err != nil && !disclient.IsCode(err, disclient.CodeAppExists) {
		return err
	}
	known.Store(app, true)
	return nil
}

// CommitOffset writes one committed offset of tn's group, from its commit
// queue (Commit); 0 or a Kafka error code. Kafka takes any offset, DIS
// only a sequence number in the partition's valid range [earliest : next]
// (docs/groups.md): checkpointFor puts it there, and when DIS still refuses
// it (the range moved on since the catalog looked) the topic is refreshed
// and the commit sent once more.
func (d *Driver[T]) CommitOffset(ctx context.Context, tn T, group, topic string, partition int32, offset int64, meta *string) int16 {
	app := appNameFor(group)
	dis, catalog := d.deps.DIS(tn), d.deps.Catalog(tn)
	for attempt := 0; ; attempt++ {
		get := catalog.Get
		if attempt > 0 {
			get = catalog.Refresh
		}
		t, err := get(ctx, topic)
		switch {
		case errors.Is(err, topics.ErrUnknownTopic):
			return kerr.UnknownTopicOrPartition.Code
		case err != nil:
			return d.deps.KafkaCode(err)
		case !t.Readable(partition):
			return kerr.UnknownTopicOrPartition.Code
		}
		req, code := d.checkpointFor(ctx, tn, t, group, partition, offset, meta)
		if code != 0 {
			return code
		}
		req.AppName = app
		d.rememberGroup(group)
		if err := d.EnsureApp(ctx, tn, app); err != nil {
			d.deps.Log.Warn().Err(err).Str("group", group).Msg("creating the group's DIS app failed")
			return d.deps.KafkaCode(err)
		}
		err = dis.CommitCheckpoint(ctx, req)
		if disclient.IsCode(err, disclient.CodeAppNotFound) {
			// Deleted behind our back: create it again once.
			d.deps.Apps(tn).Delete(app)
			if err = d.EnsureApp(ctx, tn, app); err == nil {
				err = dis.CommitCheckpoint(ctx, req)
			}
		}
		if disclient.IsCode(err, disclient.CodeSequenceOutOfRange) && attempt == 0 {
			continue
		}
		if err != nil {
			d.deps.Log.Warn().Err(err).Str("group", group).Str("topic", topic).Int32("partition", partition).Msg("CommitCheckpoint failed")
			return d.deps.KafkaCode(err)
		}
		d.deps.Committed(tn, group, t, partition, offset)
		return 0
	}
}

// checkpointFor builds the checkpoint (all but the app) that holds a
// committed offset, or a Kafka error code. On kafka topics the sequence
// number is the DIS record holding the offset and the exact offset is in
// the metadata. On raw topics the offset is the sequence number; one
// outside the partition's range (beyond the end, or before the log start
// once retention passed it) is stored as the nearest end of the range
// with the exact offset in the metadata, as on kafka topics.
func (d *Driver[T]) checkpointFor(ctx context.Context, tn T, t *topics.Meta, group string, partition int32, offset int64, meta *string) (*disclient.CommitCheckpointRequest, int16) {
	req := &disclient.CommitCheckpointRequest{
		CheckpointType: disclient.CheckpointLastRead,
		StreamName:     t.Stream,
		PartitionID:    disclient.PartitionID(partition),
	}
	pm := t.Partitions[partition]
	seq := offset
	var err error
	if t.Format == topics.FormatKafka {
		if req.Metadata, err = encodeOffsetCheckpointMetadata(group, meta, offset); err != nil {
			return nil, kerr.OffsetMetadataTooLarge.Code
		}
		if seq, err = d.deps.Partition(tn, t, partition).CheckpointSeq(ctx, pm.Earliest, offset); err != nil {
			d.deps.Log.Warn().Err(err).Str("group", group).Str("topic", t.Name).Int32("partition", partition).Msg("finding the DIS record of a committed offset failed")
			return nil, d.deps.KafkaCode(err)
		}
	} else if next := max(pm.Next, d.deps.Partition(tn, t, partition).KnownHWM()); offset < pm.Earliest || offset > next {
		seq = min(max(offset, pm.Earliest), next)
		if req.Metadata, err = encodeOffsetCheckpointMetadata(group, meta, offset); err != nil {
			return nil, kerr.OffsetMetadataTooLarge.Code
		}
	} else if req.Metadata, err = encodeCheckpointMetadata(group, meta); err != nil {
		return nil, kerr.OffsetMetadataTooLarge.Code
	}
	req.SequenceNumber = strconv.FormatInt(seq, 10)
	return req, 0
}

// committedOffset reads one committed offset: -1 and no error when there is
// none (no app, no checkpoint, no such topic), as Kafka answers.
func (d *Driver[T]) committedOffset(ctx context.Context, tn T, group, topic string, partition int32) (int64, *string, int16) {
	app := appNameFor(group)
	cp, err := d.deps.DIS(tn).GetCheckpoint(ctx, &disclient.GetCheckpointRequest{
		AppName:        app,
		StreamName:     topics.StreamName(topic),
		PartitionID:    disclient.PartitionID(partition),
		CheckpointType: disclient.CheckpointLastRead,
	})
	switch {
	case disclient.IsCode(err, disclient.CodeAppNotFound), disclient.IsCode(err, disclient.CodeStreamNotFound),
		disclient.IsCode(err, disclient.CodePartitionNotFound), disclient.IsCode(err, disclient.CodeNoCheckpoint),
		disclient.IsCode(err, disclient.CodeInvalidPartitionID):
		return -1, nil, 0
	case err != nil:
		d.deps.Log.Warn().Err(err).Str("group", group).Str("topic", topic).Msg("GetCheckpoint failed")
		return -1, nil, d.deps.KafkaCode(err)
	}
	off, perr := strconv.ParseInt(cp.SequenceNumber, 10, 64)
	if perr != nil || off < 0 {
		return -1, nil, 0
	}
	if t, err := d.deps.Catalog(tn).Get(ctx, topic); err == nil && t.Format == topics.FormatKafka {
		if meta, exact, ok := decodeOffsetCheckpointMetadata(cp.Metadata); ok {
			return exact, &meta, 0
		}
		// A DIS-native consumer's checkpoint: the next record to read,
		// as an offset.
		if int(partition) >= len(t.Partitions) {
			return -1, nil, 0
		}
		exact, err := d.deps.Partition(tn, t, partition).OffsetOfSeq(ctx, off)
		if err != nil {
			return -1, nil, 0
		}
		_, meta := decodeCheckpointMetadata(app, cp.Metadata)
		return exact, &meta, 0
	}
	// A raw-topic commit outside the partition's range keeps its exact
	// offset as kafka topics do (checkpointFor).
	if meta, exact, ok := decodeOffsetCheckpointMetadata(cp.Metadata); ok {
		return exact, &meta, 0
	}
	_, meta := decodeCheckpointMetadata(app, cp.Metadata)
	return off, &meta, 0
}

// CommittedTopics lists the topics tn's group has checkpoints on: what an
// OffsetFetch for every committed partition reads.
func (d *Driver[T]) CommittedTopics(ctx context.Context, tn T, group string) ([]string, error) {
	app, err := d.deps.DIS(tn).DescribeApp(ctx, appNameFor(group))
	if disclient.IsCode(err, disclient.CodeAppNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return d.deps.Catalog(tn).TopicsForStreams(ctx, app.CommitCheckpointStreamNames), nil
}

// DeleteApp deletes the DIS app of tn's group, and with it every committed
// offset (DeleteGroups); DIS's error, disclient.CodeAppNotFound when the
// group has none.
func (d *Driver[T]) DeleteApp(ctx context.Context, tn T, group string) error {
	app := appNameFor(group)
	err := d.deps.DIS(tn).DeleteApp(ctx, app)
	d.deps.Apps(tn).Delete(app)
	return err
}

// DeleteOffset deletes the committed offset of tn's group on one partition
// (OffsetDelete): its checkpoint. A partition without one is no error.
func (d *Driver[T]) DeleteOffset(ctx context.Context, tn T, group, topic string, partition int32) error {
	err := d.deps.DIS(tn).DeleteCheckpoint(ctx, &disclient.DeleteCheckpointRequest{AppName: appNameFor(group), StreamName: topics.StreamName(topic),
		PartitionID: disclient.PartitionID(partition), CheckpointType: disclient.CheckpointLastRead})
	if disclient.IsCode(err, disclient.CodeNoCheckpoint) {
		return nil
	}
	return err
}
