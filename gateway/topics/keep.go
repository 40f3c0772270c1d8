package topics

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/gateway/keep"
)

// Kept topics (docs/design.md §12): a topic whose cleanup.policy includes
// compact, or whose retention.ms is -1 or longer than DIS keeps records, is
// kept. Its keeping configs live in the tags of its keep stream, which the
// gateway creates before the topic's own stream and which the catalog never
// lists as a topic; the topic's own stream then has DIS's longest retention.

// Keep is a topic's keeping, as the catalog last described it: the keep
// stream's name ("" for a topic that is not kept) and the policy its tags
// hold. The partition log reads it to rewrite and compact the topic.
type Keep struct {
	Stream string
	keep.Policy
	// MinCleanableDirtyRatio is min.cleanable.dirty.ratio.
	MinCleanableDirtyRatio float64
}

// Kept reports whether the topic has a keep stream.
func (k Keep) Kept() bool { return k.Stream != "" }

// Keep returns the keeping of a topic, from the catalog's cached Meta
// like every other topic field: the zero Keep for a topic that is not kept.
func (c *Catalog) Keep(ctx context.Context, name string) (Keep, error) {
	t, err := c.Get(ctx, name)
	if err != nil {
		return Keep{}, err
	}
	return t.Keep, nil
}

// keepStreamPrefix starts every keep stream's name. No topic's stream is
// named so (docs/design.md §2): an encoded name of that length would stand
// for the name "keep", which DIS holds unchanged.
const keepStreamPrefix = EncodedNamePrefix + "keep-"

// KeepStreamName is the keep stream of the topic whose stream is stream:
// the prefix and the first 16 hex digits of the SHA-256 of the stream name.
func KeepStreamName(stream string) string {
	sum := sha256.Sum256([]byte(stream))
	return keepStreamPrefix + hex.EncodeToString(sum[:encodedHashLen/2])
}

// isKeepStreamName reports whether a listed stream is some topic's keep
// stream, which is never a topic itself.
func isKeepStreamName(stream string) bool {
	h, ok := strings.CutPrefix(stream, keepStreamPrefix)
	if !ok || len(h) != encodedHashLen {
		return false
	}
	_, err := hex.DecodeString(h)
	return err == nil
}

// The keeping configs and their Kafka defaults.
const (
	configRetentionBytes    = "retention.bytes"
	configDeleteRetention   = "delete.retention.ms"
	configMinCompactionLag  = "min.compaction.lag.ms"
	configMaxCompactionLag  = "max.compaction.lag.ms"
	configMinCleanableRatio = "min.cleanable.dirty.ratio"

	policyDelete        = "delete"
	policyCompact       = "compact"
	policyCompactDelete = "compact,delete"

	defRetentionBytes    = "-1"
	defDeleteRetention   = "86400000"
	defMinCompactionLag  = "0"
	defMaxCompactionLag  = "9223372036854775807"
	defMinCleanableRatio = "0.5"
)

// The keep stream's tags, one per keeping config that differs from its
// default (retention.ms always, since its default is a gateway setting).
// DIS takes letters, digits, '_', '.' and '-' in a tag value, so the
// cleanup.policy tag writes its ',' as '-'. A topic that is not kept keeps
// the configs other than cleanup.policy and retention.ms in its own
// stream's tags, under the same keys (Spec.topicKeep).
const (
	cleanupPolicyTagKey     = "disgw-cleanup-policy"
	retentionBytesTagKey    = "disgw-retention-bytes"
	deleteRetentionTagKey   = "disgw-delete-retention-ms"
	minCompactionLagTagKey  = "disgw-min-compaction-lag-ms"
	maxCompactionLagTagKey  = "disgw-max-compaction-lag-ms"
	minCleanableRatioTagKey = "disgw-min-cleanable-dirty-ratio"
)

// KeepSpec is a topic's keeping configs, each in canonical text, "" for
// its default. retentionMs is set only while the topic is kept: a kept
// topic's retention.ms is not DIS's data_duration.
type KeepSpec struct {
	cleanup, retentionMs, retentionBytes, deleteRetention, minLag, maxLag, dirtyRatio string
}

// compact reports whether cleanup.policy includes compact.
func (k KeepSpec) compact() bool { return strings.HasPrefix(k.cleanup, policyCompact) }

// fields pairs each keeping config's tag key with its value in k and its
// default.
func (k KeepSpec) fields() []struct{ key, value, def string } {
	return []struct{ key, value, def string }{
		{cleanupPolicyTagKey, k.cleanup, policyDelete},
		{retentionMsTagKey, k.retentionMs, ""},
		{retentionBytesTagKey, k.retentionBytes, defRetentionBytes},
		{deleteRetentionTagKey, k.deleteRetention, defDeleteRetention},
		{minCompactionLagTagKey, k.minLag, defMinCompactionLag},
		{maxCompactionLagTagKey, k.maxLag, defMaxCompactionLag},
		{minCleanableRatioTagKey, k.dirtyRatio, defMinCleanableRatio},
	}
}

// or is v, or def when v is "".
func or(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// tags are the keep stream's tags for k: the configs that differ from
// their defaults.
func (k KeepSpec) tags() []disclient.Tag {
	var out []disclient.Tag
	for _, f := range k.fields() {
		if f.value != "" {
			out = append(out, disclient.Tag{Key: f.key, Value: strings.ReplaceAll(f.value, ",", "-")})
		}
	}
	return out
}

// changedKeepTags are the keep stream tags that differ between cur and
// next, each written with next's value, a default one included.
func changedKeepTags(cur, next KeepSpec) []disclient.Tag {
	var out []disclient.Tag
	cf, nf := cur.fields(), next.fields()
	for i := range nf {
		if c, n := or(cf[i].value, cf[i].def), or(nf[i].value, nf[i].def); c != n {
			out = append(out, disclient.Tag{Key: nf[i].key, Value: strings.ReplaceAll(n, ",", "-")})
		}
	}
	return out
}

// keepSpecFromTags reads the keeping configs a keep stream's tags hold. A
// value the config does not take (set by hand on DIS) is ignored, leaving
// the default.
func keepSpecFromTags(tags []disclient.Tag) KeepSpec {
	var k KeepSpec
	for _, tg := range tags {
		v := tg.Value
		switch tg.Key {
		case cleanupPolicyTagKey:
			k.cleanup, _ = parseCleanupPolicy(strings.ReplaceAll(v, "-", ","))
		case retentionMsTagKey:
			if ms, err := strconv.ParseInt(v, 10, 64); err == nil && (ms == -1 || ms >= 1) {
				k.retentionMs = v
			}
		case retentionBytesTagKey:
			k.retentionBytes, _ = parseRetentionBytes(v)
		case deleteRetentionTagKey:
			k.deleteRetention, _ = parseKeepLong(configDeleteRetention, v, 0, defDeleteRetention)
		case minCompactionLagTagKey:
			k.minLag, _ = parseKeepLong(configMinCompactionLag, v, 0, defMinCompactionLag)
		case maxCompactionLagTagKey:
			k.maxLag, _ = parseKeepLong(configMaxCompactionLag, v, 1, defMaxCompactionLag)
		case minCleanableRatioTagKey:
			k.dirtyRatio, _ = parseDirtyRatio(v)
		}
	}
	return k
}

// policy is the Keep that k describes for the keep stream stream.
func (k KeepSpec) policy(stream string) Keep {
	num := func(v, def string) int64 {
		n, _ := strconv.ParseInt(or(v, def), 10, 64)
		return n
	}
	ratio, _ := strconv.ParseFloat(or(k.dirtyRatio, defMinCleanableRatio), 64)
	return Keep{
		Stream: stream,
		Policy: keep.Policy{
			Compact:            k.compact(),
			Delete:             or(k.cleanup, policyDelete) != policyCompact,
			RetentionMs:        num(k.retentionMs, "-1"),
			RetentionBytes:     num(k.retentionBytes, defRetentionBytes),
			DeleteRetentionMs:  num(k.deleteRetention, defDeleteRetention),
			MinCompactionLagMs: num(k.minLag, defMinCompactionLag),
			MaxCompactionLagMs: num(k.maxLag, defMaxCompactionLag),
		},
		MinCleanableDirtyRatio: ratio,
	}
}

// parseCleanupPolicy checks a cleanup.policy list (delete, compact or both,
// in any order) and returns it in canonical form, "" for delete alone.
func parseCleanupPolicy(v string) (string, error) {
	var compact, del bool
	for _, p := range strings.Split(v, ",") {
		switch strings.TrimSpace(p) {
		case policyCompact:
			compact = true
		case policyDelete:
			del = true
		default:
			return "", fmt.Errorf("cleanup.policy %q must be delete, compact or compact,delete", v)
		}
	}
	switch {
	case compact && del:
		return policyCompactDelete, nil
	case compact:
		return policyCompact, nil
	}
	return "", nil
}

// parseRetentionBytes checks a retention.bytes value, -1 (no bound) or a
// positive number of bytes, and returns it in canonical form, "" for -1.
func parseRetentionBytes(v string) (string, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n < -1 || n == 0 {
		return "", fmt.Errorf("%s %q must be -1 (no bound) or a positive number of bytes", configRetentionBytes, v)
	}
	return canonical(strconv.FormatInt(n, 10), defRetentionBytes), nil
}

// parseKeepLong checks the value of the ms config name, which Kafka
// requires to be at least least, and returns it in canonical form, "" for
// its default def.
func parseKeepLong(name, v string, least int64, def string) (string, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n < least {
		return "", fmt.Errorf("%s %q must be a number of milliseconds, at least %d", name, v, least)
	}
	return canonical(strconv.FormatInt(n, 10), def), nil
}

// parseDirtyRatio checks a min.cleanable.dirty.ratio, 0 to 1 as Kafka
// requires, and returns it in canonical form, "" for the default.
func parseDirtyRatio(v string) (string, error) {
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || math.IsNaN(f) || f < 0 || f > 1 {
		return "", fmt.Errorf("%s %q must be a number from 0 to 1", configMinCleanableRatio, v)
	}
	return canonical(strconv.FormatFloat(f, 'f', -1, 64), defMinCleanableRatio), nil
}

// canonical is v, or "" when it is the default def.
func canonical(v, def string) string {
	if v == def {
		return ""
	}
	return v
}

// Kept reports whether a topic of these configs is kept: its cleanup.policy
// includes compact, or its retention.ms is longer than DIS keeps (or -1).
func (s *Spec) Kept() bool { return s.Keep.compact() || s.Keep.retentionMs != "" }

// retention is the topic's retention.ms.
func (s *Spec) retention() int64 {
	if s.Keep.retentionMs != "" {
		ms, _ := strconv.ParseInt(s.Keep.retentionMs, 10, 64)
		return ms
	}
	if s.RetentionMs > 0 {
		return s.RetentionMs
	}
	return int64(s.RetentionHours) * hourMs
}

// placeRetention puts retention.ms where the topic keeps it: in the keep
// stream's tags for a kept topic (whose own stream then keeps records for
// DIS's longest retention), else in DIS's data_duration, rounded up to
// hours, or below DIS's shortest in the disgw-retention-ms tag. ms is -1
// or at least 1.
func (s *Spec) placeRetention(ms int64) {
	hours := (ms + hourMs - 1) / hourMs
	switch {
	case s.Keep.compact() || ms == -1 || hours > maxRetentionHours:
		s.RetentionHours, s.RetentionMs = maxRetentionHours, 0
		s.Keep.retentionMs = strconv.FormatInt(ms, 10)
	case ms < minRetentionHours*hourMs:
		s.RetentionHours, s.RetentionMs, s.Keep.retentionMs = minRetentionHours, ms, ""
	default:
		s.RetentionHours, s.RetentionMs, s.Keep.retentionMs = int32(hours), 0, ""
	}
}

// checkKeep refuses keeping configs that contradict each other, as Kafka
// does, and kept configs on a raw topic.
func (s *Spec) checkKeep() error {
	p := s.Keep.policy("")
	if p.MinCompactionLagMs > p.MaxCompactionLagMs {
		return fmt.Errorf("%s (%d) must not be greater than %s (%d)", configMinCompactionLag, p.MinCompactionLagMs, configMaxCompactionLag, p.MaxCompactionLagMs)
	}
	if s.Kept() && s.Format != FormatKafka {
		return fmt.Errorf("cleanup.policy compact and a retention.ms over 72 hours or -1 need dis.record.format kafka: the gateway keeps such a topic by writing its records again, and a raw topic's offsets are DIS's sequence numbers")
	}
	return nil
}

// topicKeep is the part of the keeping configs that the topic's own
// stream holds in its tags: none for a kept topic, whose keep stream holds
// them all, and for another, the configs that only take effect once it is
// kept (retention.bytes, delete.retention.ms and the compaction ones).
func (s *Spec) topicKeep() KeepSpec {
	if s.Kept() {
		return KeepSpec{}
	}
	k := s.Keep
	k.cleanup, k.retentionMs = "", ""
	return k
}

// createKeepStream creates the keep stream of the topic whose stream is
// stream, with partitions partitions, the topic's stream type, DIS's
// longest retention and the keeping configs of spec in its tags. One left
// from an earlier topic of the name is replaced; so is one of a topic that
// exists when forAlter says the topic is being made kept (its keep stream
// then holds nothing the topic reads). Otherwise a keep stream whose topic
// exists answers CodeStreamExists, as the topic's own creation would.
func (c *Catalog) createKeepStream(ctx context.Context, stream string, partitions int32, spec *Spec, forAlter bool) error {
	hours := int32(maxRetentionHours)
	req := &disclient.CreateStreamRequest{
		StreamName:     KeepStreamName(stream),
		PartitionCount: partitions,
		StreamType:     or(spec.StreamType, disclient.StreamTypeCommon),
		DataType:       disclient.DataTypeBlob,
		DataDuration:   &hours,
		Tags:           spec.Keep.tags(),
	}
	err := c.d.DIS.CreateStream(ctx, req)
	if !disclient.IsCode(err, disclient.CodeStreamExists) {
		return err
	}
	if !forAlter {
		if _, derr := c.d.DIS.DescribeStream(ctx, stream, "", 1); !disclient.IsCode(derr, disclient.CodeStreamNotFound) {
			if derr != nil {
				return derr
			}
			return err
		}
	}
	c.d.Log.Info().Str("stream", req.StreamName).Msg("replacing a keep stream its topic does not use")
	if err := c.d.DIS.DeleteStream(ctx, req.StreamName); err != nil && !disclient.IsCode(err, disclient.CodeStreamNotFound) {
		return err
	}
	return c.d.DIS.CreateStream(ctx, req)
}

// mayBeKept reports whether a topic's stream is shaped as a kept topic's
// is (the kafka format, DIS's longest retention): only then can it have a
// keep stream, so only such topics cost a describe of one.
func mayBeKept(format RecordFormat, hours int32) bool {
	return format == FormatKafka && hours == maxRetentionHours
}

// describeKeep reads t's keep stream, if it has one whose configs keep it.
func (c *Catalog) describeKeep(ctx context.Context, t *Meta) error {
	name := KeepStreamName(t.Stream)
	d, err := c.d.DIS.DescribeStream(ctx, name, "", 1)
	if disclient.IsCode(err, disclient.CodeStreamNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	k := keepSpecFromTags(d.Tags)
	if !k.compact() && k.retentionMs == "" {
		// Not a kept topic's configs: no keep stream of this topic.
		return nil
	}
	t.keep, t.keepStreamID, t.keepPartitions = k, d.StreamID, max(d.WritablePartitionCount, d.ReadablePartitionCount)
	t.Keep = k.policy(name)
	return nil
}

// DeleteKeep deletes the keep stream of topic name, whose stream DIS just
// deleted, when it may have one; t is the topic as the catalog last knew
// it, nil if unknown. A keep stream that is already gone is no error.
func (c *Catalog) DeleteKeep(ctx context.Context, name string, t *Meta) error {
	if t != nil && !t.Keep.Kept() && !mayBeKept(t.Format, t.RetentionHours) {
		return nil
	}
	err := c.d.DIS.DeleteStream(ctx, KeepStreamName(StreamName(name)))
	if err != nil && !disclient.IsCode(err, disclient.CodeStreamNotFound) {
		return err
	}
	return nil
}

// GrowKeep gives a kept topic's keep stream count partitions, before the
// topic's own stream gets them, so that every partition of a kept topic
// has its keep partition; it does nothing for other topics.
func (c *Catalog) GrowKeep(ctx context.Context, t *Meta, count int32) error {
	if !t.Keep.Kept() || t.keepPartitions >= count {
		return nil
	}
	return c.d.DIS.UpdatePartitionCount(ctx, &disclient.UpdatePartitionCountRequest{StreamName: t.Keep.Stream, TargetPartitionCount: count})
}
