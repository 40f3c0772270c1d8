package gateway

import (
	"context"
	"errors"
	"strconv"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/gateway/topics"
)

// Committed offsets are DIS checkpoints (docs/design.md §2): the LAST_READ
// checkpoint of the group's app on (stream, partition) holds the next offset
// to read, as Kafka's committed offset does and as Huawei's DIS Kafka
// adapter stores it, so both kinds of consumer can share a group.

// expireOffsets deletes an expired group's DIS app, and with it every
// committed offset (Kafka's offsets.retention.minutes).
func (gw *Gateway) expireOffsets(tn *tenant, group string) {
	ctx, cancel := context.WithTimeout(gw.ctx, gw.cfg.RequestTimeout)
	defer cancel()
	app := appNameFor(group)
	err := tn.dis.DeleteApp(ctx, app)
	tn.knownApps.Delete(app)
	gw.groupForApp.Delete(app)
	switch {
	case err == nil, disclient.IsCode(err, disclient.CodeAppNotFound):
		gw.log.Info().Str("group", group).Msg("offsets of an empty group expired: deleted its DIS app")
	default:
		gw.log.Warn().Err(err).Str("group", group).Msg("deleting the DIS app of an expired group failed; its offsets stay until DeleteGroups")
	}
}

// ensureApp creates the group's app on first use.
func (gw *Gateway) ensureApp(ctx context.Context, tn *tenant, app string) error {
	if _, ok := tn.knownApps.Load(app); ok {
		return nil
	}
	err := tn.dis.CreateApp(ctx, app)
	if err != nil && !disclient.IsCode(err, disclient.CodeAppExists) {
		return err
	}
	tn.knownApps.Store(app, true)
	return nil
}

// commitOffset writes one committed offset; 0 or a Kafka error code.
// Kafka takes any offset, DIS only a sequence number in the partition's
// valid range [earliest : next] (docs/groups.md): checkpointFor puts it
// there, and when DIS still refuses it (the range moved on since the
// catalog looked) the topic is refreshed and the commit sent once more.
func (gw *Gateway) commitOffset(ctx context.Context, tn *tenant, group, topic string, partition int32, offset int64, meta *string) int16 {
	app := appNameFor(group)
	for attempt := 0; ; attempt++ {
		get := tn.catalog.Get
		if attempt > 0 {
			get = tn.catalog.Refresh
		}
		t, err := get(ctx, topic)
		switch {
		case errors.Is(err, topics.ErrUnknownTopic):
			return kerr.UnknownTopicOrPartition.Code
		case err != nil:
			return kafkaCodeForDIS(err)
		case !t.Readable(partition):
			return kerr.UnknownTopicOrPartition.Code
		}
		req, code := gw.checkpointFor(ctx, tn, t, group, partition, offset, meta)
		if code != 0 {
			return code
		}
		req.AppName = app
		gw.rememberGroup(group)
		if err := gw.ensureApp(ctx, tn, app); err != nil {
			gw.log.Warn().Err(err).Str("group", group).Msg("creating the group's DIS app failed")
			return kafkaCodeForDIS(err)
		}
		err = tn.dis.CommitCheckpoint(ctx, req)
		if disclient.IsCode(err, disclient.CodeAppNotFound) {
			// Deleted behind our back: create it again once.
			tn.knownApps.Delete(app)
			if err = gw.ensureApp(ctx, tn, app); err == nil {
				err = tn.dis.CommitCheckpoint(ctx, req)
			}
		}
		if disclient.IsCode(err, disclient.CodeSequenceOutOfRange) && attempt == 0 {
			continue
		}
		if err != nil {
			gw.log.Warn().Err(err).Str("group", group).Str("topic", topic).Int32("partition", partition).Msg("CommitCheckpoint failed")
			return kafkaCodeForDIS(err)
		}
		gw.metrics.Committed(group, tn.key(t, partition), offset)
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
func (gw *Gateway) checkpointFor(ctx context.Context, tn *tenant, t *topics.Meta, group string, partition int32, offset int64, meta *string) (*disclient.CommitCheckpointRequest, int16) {
	req := &disclient.CommitCheckpointRequest{
		CheckpointType: disclient.CheckpointLastRead,
		StreamName:     t.Stream,
		PartitionID:    disclient.PartitionID(partition),
	}
	pm := t.Partitions[partition]
	seq := offset
	var err error
	if t.Format == FormatKafka {
		if req.Metadata, err = encodeOffsetCheckpointMetadata(group, meta, offset); err != nil {
			return nil, kerr.OffsetMetadataTooLarge.Code
		}
		if seq, err = gw.partitionFor(tn.key(t, partition)).CheckpointSeq(ctx, pm.Earliest, offset); err != nil {
			gw.log.Warn().Err(err).Str("group", group).Str("topic", t.Name).Int32("partition", partition).Msg("finding the DIS record of a committed offset failed")
			return nil, kafkaCodeForDIS(err)
		}
	} else if next := max(pm.Next, gw.partitionFor(tn.key(t, partition)).KnownHWM()); offset < pm.Earliest || offset > next {
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
func (gw *Gateway) committedOffset(ctx context.Context, tn *tenant, group, topic string, partition int32) (int64, *string, int16) {
	app := appNameFor(group)
	cp, err := tn.dis.GetCheckpoint(ctx, &disclient.GetCheckpointRequest{
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
		gw.log.Warn().Err(err).Str("group", group).Str("topic", topic).Msg("GetCheckpoint failed")
		return -1, nil, kafkaCodeForDIS(err)
	}
	off, perr := strconv.ParseInt(cp.SequenceNumber, 10, 64)
	if perr != nil || off < 0 {
		return -1, nil, 0
	}
	if t, err := tn.catalog.Get(ctx, topic); err == nil && t.Format == FormatKafka {
		if meta, exact, ok := decodeOffsetCheckpointMetadata(cp.Metadata); ok {
			return exact, &meta, 0
		}
		// A DIS-native consumer's checkpoint: the next record to read,
		// as an offset.
		if int(partition) >= len(t.Partitions) {
			return -1, nil, 0
		}
		exact, err := gw.partitionFor(tn.key(t, partition)).OffsetOfSeq(ctx, off)
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

// committedTopics lists the topics the group has checkpoints on.
func (gw *Gateway) committedTopics(ctx context.Context, tn *tenant, group string) ([]string, error) {
	app, err := tn.dis.DescribeApp(ctx, appNameFor(group))
	if disclient.IsCode(err, disclient.CodeAppNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return tn.catalog.TopicsForStreams(ctx, app.CommitCheckpointStreamNames), nil
}

// parallel runs fn for i in [0, n) with at most topics.DescribeConcurrency at once.
func (gw *Gateway) parallel(n int, fn func(i int)) {
	sem := make(chan struct{}, topics.DescribeConcurrency)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		gw.goSafe("parallel DIS calls", func() {
			defer func() { <-sem; wg.Done() }()
			fn(i)
		})
	}
	wg.Wait()
}
