package gateway

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/disgw/disgw/disclient"
)

// Committed offsets are DIS checkpoints (docs/design.md §2): the LAST_READ
// checkpoint of the group's app on (stream, partition) holds the next offset
// to read, as Kafka's committed offset does and as Huawei's DIS Kafka
// adapter stores it, so both kinds of consumer can share a group.

// disCallsTimeout bounds the DIS calls one request makes for group, offset
// and topic administration.
const disCallsTimeout = 30 * time.Second

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
func (gw *Gateway) commitOffset(ctx context.Context, tn *tenant, group, topic string, partition int32, offset int64, meta *string) int16 {
	t, err := tn.catalog.get(ctx, topic)
	switch {
	case errors.Is(err, errUnknownTopic):
		return kerr.UnknownTopicOrPartition.Code
	case err != nil:
		return kafkaCodeForDIS(err)
	case !t.readable(partition):
		return kerr.UnknownTopicOrPartition.Code
	}
	stored, err := encodeCheckpointMetadata(group, meta)
	if err != nil {
		return kerr.OffsetMetadataTooLarge.Code
	}
	app := appNameFor(group)
	gw.rememberGroup(group)
	if err := gw.ensureApp(ctx, tn, app); err != nil {
		gw.log.Warn().Err(err).Str("group", group).Msg("creating the group's DIS app failed")
		return kafkaCodeForDIS(err)
	}
	req := &disclient.CommitCheckpointRequest{
		AppName:        app,
		CheckpointType: disclient.CheckpointLastRead,
		StreamName:     topic,
		PartitionID:    disclient.PartitionID(partition),
		SequenceNumber: strconv.FormatInt(offset, 10),
		Metadata:       stored,
	}
	err = tn.dis.CommitCheckpoint(ctx, req)
	if disclient.IsCode(err, disclient.CodeAppNotFound) {
		// Deleted behind our back: create it again once.
		tn.knownApps.Delete(app)
		if err = gw.ensureApp(ctx, tn, app); err == nil {
			err = tn.dis.CommitCheckpoint(ctx, req)
		}
	}
	if err != nil {
		gw.log.Warn().Err(err).Str("group", group).Str("topic", topic).Int32("partition", partition).Msg("CommitCheckpoint failed")
		return kafkaCodeForDIS(err)
	}
	return 0
}

// committedOffset reads one committed offset: -1 and no error when there is
// none (no app, no checkpoint, no such topic), as Kafka answers.
func (gw *Gateway) committedOffset(ctx context.Context, tn *tenant, group, topic string, partition int32) (int64, *string, int16) {
	app := appNameFor(group)
	cp, err := tn.dis.GetCheckpoint(ctx, &disclient.GetCheckpointRequest{
		AppName:        app,
		StreamName:     topic,
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
	_, meta := decodeCheckpointMetadata(app, cp.Metadata)
	return off, &meta, 0
}

// committedTopics lists the streams the group has checkpoints on.
func (gw *Gateway) committedTopics(ctx context.Context, tn *tenant, group string) ([]string, error) {
	app, err := tn.dis.DescribeApp(ctx, appNameFor(group))
	if disclient.IsCode(err, disclient.CodeAppNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return app.CommitCheckpointStreamNames, nil
}

// parallel runs fn for i in [0, n) with at most 16 at once.
func parallel(n int, fn func(i int)) {
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			fn(i)
		}()
	}
	wg.Wait()
}
