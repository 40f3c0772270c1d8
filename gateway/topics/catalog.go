package topics

import (
	"context"
	"crypto/sha256"
	"errors"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/disgw/disgw/disclient"
)

// formatTagKey is the DIS stream tag that records a topic's record format, so
// every gateway in front of the same DIS project decodes it the same way.
const formatTagKey = "disgw-record-format"

// The DIS stream tags that record a topic's message.timestamp.* configs,
// set at creation and by alters; a stream without one has Kafka's default.
const (
	timestampTypeTagKey   = "disgw-timestamp-type"
	timestampBeforeTagKey = "disgw-timestamp-before-max-ms"
	timestampAfterTagKey  = "disgw-timestamp-after-max-ms"
	maxMessageBytesTagKey = "disgw-max-message-bytes"
	retentionMsTagKey     = "disgw-retention-ms"
)

// ErrUnknownTopic is returned by the catalog for a stream DIS does not have.
var ErrUnknownTopic = errors.New("unknown topic")

// Meta is the gateway's view of one stream, as DescribeStream last
// answered: handlers read it and never change it, since the catalog hands
// the same value to every request until the next describe replaces it.
type Meta struct {
	// Name is the Kafka name, Stream the DIS stream's (StreamName).
	Name     string
	Stream   string
	StreamID string
	// ID is the Kafka topic id (TopicID of StreamID).
	ID             [16]byte
	Format         RecordFormat
	RetentionHours int32
	// RetentionMs is a retention.ms below DIS's shortest, which the
	// gateway honours by moving the log start; 0 for none.
	RetentionMs int64
	StreamType  string
	Timestamps  TimestampSpec
	// MaxMessageBytes is the max.message.bytes tag's value, "" when the
	// stream has none.
	MaxMessageBytes string
	Status          string
	Partitions      []PartitionMeta // index = Kafka partition number
	Fetched         time.Time

	// Raw is the dis.raw.* policies its tags record.
	Raw RawSpec

	// Keep is the topic's keeping (docs/design.md §12): its keep
	// stream and policy, the zero Keep when it is not kept.
	Keep Keep
	// keep is the keeping configs as text, from the keep stream's tags
	// or (not kept) the topic's own; keepStreamID and keepPartitions are
	// the keep stream's id and partition count.
	keep           KeepSpec
	keepStreamID   string
	keepPartitions int32
}

// PartitionMeta is a partition as DescribeStream last reported it: its
// status says whether Produce and Fetch may use it, its sequence number
// range [Earliest, Next) bounds what a read may ask for.
type PartitionMeta struct {
	Status   string
	Earliest int64
	Next     int64
}

// Writable reports whether Produce may write partition p.
func (t *Meta) Writable(p int32) bool {
	return p >= 0 && int(p) < len(t.Partitions) && t.Partitions[p].Status == disclient.PartitionStatusActive
}

// Readable reports whether Fetch may read partition p (scaled-in partitions
// stay readable until DIS expires them).
func (t *Meta) Readable(p int32) bool {
	if p < 0 || int(p) >= len(t.Partitions) {
		return false
	}
	s := t.Partitions[p].Status
	return s == disclient.PartitionStatusActive || s == disclient.PartitionStatusDeleted
}

// TopicID derives the Kafka topic id from the DIS stream id: the same on
// every gateway, different for a deleted and re-created stream of the same
// name. It is a version 8 (custom) UUID over SHA-256 of the stream id.
func TopicID(streamID string) [16]byte {
	sum := sha256.Sum256([]byte("disgw topic id\x00" + streamID))
	var id [16]byte
	copy(id[:], sum[:16])
	id[6] = id[6]&0x0f | 0x80
	id[8] = id[8]&0x3f | 0x80
	return id
}

// Catalog caches DescribeStream answers for MetadataTTL, remembers topics
// DIS does not have for UnknownTopicTTL, and maps topic ids back to names.
// Each tenant has its own, since what a stream holds and whether it exists
// are answered with the tenant's credentials.
type Catalog struct {
	d  Deps
	sf singleflight.Group

	mu     sync.Mutex
	topics map[string]*Meta
	byID   map[[16]byte]string
	// unknown and unknownIDs hold until when a name or id is known to
	// be missing; pruneAt is the size at which inserting prunes them.
	unknown    map[string]time.Time
	unknownIDs map[[16]byte]time.Time
	pruneAt    int
	// streamTopics holds the Kafka names of encoded streams described
	// for a listing that lacked their tags.
	streamTopics map[string]string
	listed       topicListing
	// gen counts invalidations: a lookup that began before one does not
	// remember its "unknown" answer, which the change may have outdated.
	gen uint64
}

// NewCatalog returns an empty catalog that describes streams with d.DIS.
func NewCatalog(d Deps) *Catalog {
	return &Catalog{
		d:            d,
		topics:       make(map[string]*Meta),
		byID:         make(map[[16]byte]string),
		unknown:      make(map[string]time.Time),
		unknownIDs:   make(map[[16]byte]time.Time),
		streamTopics: make(map[string]string),
		pruneAt:      minPruneAt,
	}
}

// minPruneAt is the fewest unknown entries at which an insert prunes.
const minPruneAt = 1024

// Get returns the topic, from cache when fresh, or ErrUnknownTopic while
// DIS recently said it has no such stream.
func (c *Catalog) Get(ctx context.Context, name string) (*Meta, error) {
	now := time.Now()
	c.mu.Lock()
	t := c.topics[name]
	until, missing := c.unknown[name]
	c.mu.Unlock()
	if t != nil && now.Sub(t.Fetched) < c.d.MetadataTTL {
		return t, nil
	}
	if missing && now.Before(until) {
		return nil, ErrUnknownTopic
	}
	return c.Refresh(ctx, name)
}

// Refresh describes the stream now. Concurrent refreshes of one name share
// a call, unless an invalidation came between them.
func (c *Catalog) Refresh(ctx context.Context, name string) (*Meta, error) {
	c.mu.Lock()
	gen := c.gen
	c.mu.Unlock()
	v, err, _ := c.sf.Do(strconv.FormatUint(gen, 10)+"/"+name, func() (any, error) {
		t, err := c.describe(ctx, name)
		c.mu.Lock()
		defer c.mu.Unlock()
		if err != nil {
			if errors.Is(err, ErrUnknownTopic) {
				delete(c.topics, name)
				c.rememberUnknownLocked(name, gen)
			}
			return nil, err
		}
		c.topics[name] = t
		c.byID[t.ID] = name
		delete(c.unknown, name)
		return t, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*Meta), nil
}

// rememberUnknownLocked records that DIS has no stream name, unless the
// catalog was invalidated since the lookup that found so began.
func (c *Catalog) rememberUnknownLocked(name string, gen uint64) {
	if c.gen != gen {
		return
	}
	c.unknown[name] = time.Now().Add(c.d.UnknownTopicTTL)
	c.pruneIfLargeLocked()
}

func (c *Catalog) pruneIfLargeLocked() {
	if len(c.unknown)+len(c.unknownIDs) < c.pruneAt {
		return
	}
	c.pruneUnknownLocked(time.Now())
	c.pruneAt = max(minPruneAt, 2*(len(c.unknown)+len(c.unknownIDs)))
}

// PruneUnknown forgets the unknown names and ids that expired by now.
func (c *Catalog) PruneUnknown(now time.Time) {
	c.mu.Lock()
	c.pruneUnknownLocked(now)
	c.mu.Unlock()
}

func (c *Catalog) pruneUnknownLocked(now time.Time) {
	for n, until := range c.unknown {
		if !now.Before(until) {
			delete(c.unknown, n)
		}
	}
	for id, until := range c.unknownIDs {
		if !now.Before(until) {
			delete(c.unknownIDs, id)
		}
	}
}

// ErrNotDescribed is the answer for an existing topic one request had no
// DescribeStream call left for; Metadata answers it LEADER_NOT_AVAILABLE,
// which clients retry.
var ErrNotDescribed = errors.New("topic exists but this request may make no more DescribeStream calls")

// Lookup is one topic's answer in a batch lookup (GetMany): its Meta, or
// why there is none (ErrUnknownTopic, ErrNotDescribed or a DIS error), so
// that each topic of a request is answered on its own.
type Lookup struct {
	Meta *Meta
	Err  error
}

// GetMany resolves names for one request. Fresh cache entries and
// remembered unknown topics cost nothing; the others are described, at most
// budget of them (DescribeConcurrency at once), topics never described
// before first. Beyond the budget a stale cache entry is served as it is,
// and a topic never described is checked against one ListStreams pass:
// those DIS does not list are unknown, the rest ErrNotDescribed. So a
// request naming 10 000 topics costs at most budget DescribeStream calls
// plus the ListStreams pages of the streams that exist.
func (c *Catalog) GetMany(ctx context.Context, names []string, budget *CallBudget) map[string]Lookup {
	out := make(map[string]Lookup, len(names))
	now := time.Now()
	var fresh, stale []string
	c.mu.Lock()
	gen := c.gen
	for _, n := range names {
		if _, done := out[n]; done {
			continue
		}
		t := c.topics[n]
		until, missing := c.unknown[n]
		switch {
		case t != nil && now.Sub(t.Fetched) < c.d.MetadataTTL:
			out[n] = Lookup{Meta: t}
		case missing && now.Before(until):
			out[n] = Lookup{Err: ErrUnknownTopic}
		case t != nil:
			out[n] = Lookup{Meta: t}
			stale = append(stale, n)
		default:
			out[n] = Lookup{Err: ErrNotDescribed}
			fresh = append(fresh, n)
		}
	}
	c.mu.Unlock()
	need := slices.Concat(fresh, stale)
	n := budget.TakeUpTo(len(need))
	results := make([]Lookup, n)
	c.d.Parallel(n, func(i int) {
		t, err := c.Refresh(ctx, need[i])
		results[i] = Lookup{Meta: t, Err: err}
	})
	for i, lk := range results {
		out[need[i]] = lk
	}
	if n >= len(fresh) {
		return out
	}
	listed, err := c.List(ctx)
	if err != nil {
		for _, name := range fresh[n:] {
			out[name] = Lookup{Err: err}
		}
		return out
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, name := range fresh[n:] {
		if _, ok := slices.BinarySearch(listed, name); !ok {
			out[name] = Lookup{Err: ErrUnknownTopic}
			c.rememberUnknownLocked(name, gen)
		}
	}
	return out
}

func (c *Catalog) describe(ctx context.Context, name string) (*Meta, error) {
	t := &Meta{Name: name, Stream: StreamName(name), Format: FormatRaw, Fetched: time.Now()}
	start := ""
	for {
		d, err := c.d.DIS.DescribeStream(ctx, t.Stream, start, 1000)
		if err != nil {
			if disclient.IsCode(err, disclient.CodeStreamNotFound) {
				return nil, ErrUnknownTopic
			}
			return nil, err
		}
		if start == "" {
			// An encoded stream is this topic's only if its tags say so:
			// two names whose hashes agree never share a stream.
			if n, ok := topicForStream(t.Stream, d.Tags); !ok || n != name {
				return nil, ErrUnknownTopic
			}
			t.StreamID = d.StreamID
			t.ID = TopicID(d.StreamID)
			t.RetentionHours = d.RetentionPeriod
			t.StreamType = d.StreamType
			t.Status = d.Status
			t.Format = formatFromTags(d.Tags)
			t.Timestamps = timestampsFromTags(d.Tags)
			t.MaxMessageBytes = maxMessageBytesFromTags(d.Tags)
			t.RetentionMs = retentionMsFromTags(d.Tags, d.RetentionPeriod)
			t.Raw = rawSpecFromTags(d.Tags)
			t.keep = keepSpecFromTags(d.Tags)
			// On the topic's own stream retention-ms is the tag of a
			// retention below DIS's shortest, and cleanup.policy is none.
			t.keep.cleanup, t.keep.retentionMs = "", ""
			if mayBeKept(t.Format, t.RetentionHours) {
				if err := c.describeKeep(ctx, t); err != nil {
					return nil, err
				}
			}
		}
		for _, p := range d.Partitions {
			n, err := disclient.ParsePartitionID(p.PartitionID)
			if err != nil {
				continue
			}
			for int(n) >= len(t.Partitions) {
				t.Partitions = append(t.Partitions, PartitionMeta{Status: disclient.PartitionStatusExpired})
			}
			pm := PartitionMeta{Status: p.Status}
			if e, nx, err := disclient.ParseSequenceNumberRange(p.SequenceNumberRange); err == nil {
				pm.Earliest, pm.Next = e, nx
			}
			t.Partitions[n] = pm
			start = p.PartitionID
		}
		if !d.HasMorePartitions || len(d.Partitions) == 0 {
			return t, nil
		}
	}
}

func formatFromTags(tags []disclient.Tag) RecordFormat {
	for _, tg := range tags {
		if tg.Key == formatTagKey && RecordFormat(tg.Value) == FormatKafka {
			return FormatKafka
		}
	}
	return FormatRaw
}

// timestampsFromTags reads the timestamp configs a stream's tags record.
// A tag whose value is not one the config takes (set by hand on DIS) is
// ignored, leaving Kafka's default.
func timestampsFromTags(tags []disclient.Tag) TimestampSpec {
	var ts TimestampSpec
	for _, tg := range tags {
		switch tg.Key {
		case timestampTypeTagKey:
			if tg.Value == timestampCreateTime || tg.Value == timestampLogAppendTime {
				ts.typ = tg.Value
			}
		case timestampBeforeTagKey:
			ts.beforeMax, _ = parseTimestampWindow(configTimestampBefore, tg.Value)
		case timestampAfterTagKey:
			ts.afterMax, _ = parseTimestampWindow(configTimestampAfter, tg.Value)
		}
	}
	return ts
}

// maxMessageBytesFromTags reads the max.message.bytes a stream's tags
// record, "" when none does; a value the config does not take (set by hand
// on DIS) is ignored.
func maxMessageBytesFromTags(tags []disclient.Tag) string {
	for _, tg := range tags {
		if tg.Key == maxMessageBytesTagKey {
			v, _ := parseMaxMessageBytes(tg.Value)
			return v
		}
	}
	return ""
}

// retentionMsFromTags reads the retention.ms below DIS's shortest a
// stream's tags record, 0 when none does. It holds only while the stream
// keeps DIS's shortest retention: a data_duration changed on DIS by hand
// is the retention then.
func retentionMsFromTags(tags []disclient.Tag, hours int32) int64 {
	for _, tg := range tags {
		if tg.Key == retentionMsTagKey {
			ms, err := strconv.ParseInt(tg.Value, 10, 64)
			if err == nil && ms >= 1 && ms < minRetentionHours*hourMs && hours == minRetentionHours {
				return ms
			}
		}
	}
	return 0
}

// tags are the stream tags that record ts, one per config set at creation.
func (ts TimestampSpec) tags() []disclient.Tag {
	var out []disclient.Tag
	for _, t := range []disclient.Tag{{Key: timestampTypeTagKey, Value: ts.typ}, {Key: timestampBeforeTagKey, Value: ts.beforeMax}, {Key: timestampAfterTagKey, Value: ts.afterMax}} {
		if t.Value != "" {
			out = append(out, t)
		}
	}
	return out
}

// NameForID maps one topic id to its name, as NamesForIDs does.
func (c *Catalog) NameForID(ctx context.Context, id [16]byte) (string, bool) {
	name, ok := c.NamesForIDs(ctx, [][16]byte{id}, NewCallBudget(c.d.MaxDescribesPerRequest))[id]
	return name, ok
}

// NamesForIDs maps the topic ids of one request to names. Ids not cached
// (a client may hold ids from another gateway) cost one ListStreams pass
// and a DescribeStream of each listed stream never described, at most
// budget of them, DescribeConcurrency at once, until every id is found. An
// id no stream has is remembered as unknown for UnknownTopicTTL.
func (c *Catalog) NamesForIDs(ctx context.Context, ids [][16]byte, budget *CallBudget) map[[16]byte]string {
	out := make(map[[16]byte]string, len(ids))
	missing := make(map[[16]byte]bool)
	now := time.Now()
	c.mu.Lock()
	gen := c.gen
	for _, id := range ids {
		if id == ([16]byte{}) {
			continue
		}
		if name, ok := c.byID[id]; ok {
			out[id] = name
		} else if until, ok := c.unknownIDs[id]; !ok || !now.Before(until) {
			missing[id] = true
		}
	}
	c.mu.Unlock()
	if len(missing) == 0 {
		return out
	}
	listed, err := c.List(ctx)
	if err != nil {
		c.d.Log.Warn().Err(err).Msg("resolving topic ids: ListStreams failed")
		return out
	}
	c.mu.Lock()
	var candidates []string
	for _, name := range listed {
		if c.topics[name] == nil {
			candidates = append(candidates, name)
		}
	}
	c.mu.Unlock()
	exhausted := false
	for len(candidates) > 0 && len(missing) > 0 {
		n := budget.TakeUpTo(min(len(candidates), DescribeConcurrency))
		if n == 0 {
			exhausted = true
			break
		}
		found := make([]*Meta, n)
		c.d.Parallel(n, func(i int) {
			found[i], _ = c.Refresh(ctx, candidates[i])
		})
		candidates = candidates[n:]
		for _, t := range found {
			if t != nil && missing[t.ID] {
				out[t.ID] = t.Name
				delete(missing, t.ID)
			}
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for id := range missing {
		if name, ok := c.byID[id]; ok {
			out[id] = name
		} else if !exhausted && c.gen == gen {
			c.unknownIDs[id] = time.Now().Add(c.d.UnknownTopicTTL)
		}
	}
	c.pruneIfLargeLocked()
	return out
}

// List returns the Kafka name of every stream that is a topic, sorted. The
// last walk of ListStreams answers for the describe TTL unless a topic was
// created or deleted here since, and concurrent callers share one walk:
// Metadata for all topics and every heartbeat of a regex-subscribed
// consumer-protocol member list the topics, and without this each would cost
// DIS a ListStreams per hundred streams. The caller may keep or change the
// slice.
func (c *Catalog) List(ctx context.Context) ([]string, error) {
	c.mu.Lock()
	last, gen := c.listed, c.gen
	c.mu.Unlock()
	if last.done && last.gen == gen && time.Since(last.at) < c.d.MetadataTTL {
		return slices.Clone(last.names), nil
	}
	v, err, _ := c.sf.Do(strconv.FormatUint(gen, 10)+"/\x00list", func() (any, error) {
		names, err := c.listStreams(ctx)
		if err != nil {
			return nil, err
		}
		c.mu.Lock()
		if c.gen == gen {
			c.listed = topicListing{names: names, at: time.Now(), gen: gen, done: true}
		}
		c.mu.Unlock()
		return names, nil
	})
	if err != nil {
		return nil, err
	}
	return slices.Clone(v.([]string)), nil
}

// topicListing is the catalog's last complete walk of ListStreams.
type topicListing struct {
	names []string
	at    time.Time
	// gen is the catalog's invalidation count when the walk began.
	gen  uint64
	done bool
}

// listStreams walks ListStreams and keeps the streams that are topics.
func (c *Catalog) listStreams(ctx context.Context) ([]string, error) {
	var names []string
	start := ""
	for {
		resp, err := c.d.DIS.ListStreams(ctx, 100, start)
		if err != nil {
			return nil, err
		}
		tags := make(map[string][]disclient.Tag, len(resp.StreamInfoList))
		for _, si := range resp.StreamInfoList {
			tags[si.StreamName] = si.Tags
		}
		for _, stream := range resp.StreamNames {
			if name, ok := c.topicForStream(ctx, stream, tags[stream]); ok {
				names = append(names, name)
			}
		}
		if !resp.HasMoreStreams || len(resp.StreamNames) == 0 {
			break
		}
		start = resp.StreamNames[len(resp.StreamNames)-1]
	}
	sort.Strings(names)
	return names, nil
}

// maxStreamTopics bounds the cache of Kafka names of encoded streams.
const maxStreamTopics = 10000

// topicForStream returns the Kafka name of a listed stream, as the package
// function does from the tags the listing gave. An encoded stream listed
// without tags is described once: an encoded name stands for one Kafka
// name for good, so the answer is cached (up to maxStreamTopics names).
func (c *Catalog) topicForStream(ctx context.Context, stream string, tags []disclient.Tag) (string, bool) {
	if isKeepStreamName(stream) {
		return "", false
	}
	if name, ok := topicForStream(stream, tags); ok || !isEncodedStreamName(stream) || len(tags) > 0 {
		return name, ok
	}
	c.mu.Lock()
	name, ok := c.streamTopics[stream]
	c.mu.Unlock()
	if ok {
		return name, true
	}
	d, err := c.d.DIS.DescribeStream(ctx, stream, "", 1)
	if err != nil {
		if !disclient.IsCode(err, disclient.CodeStreamNotFound) {
			c.d.Log.Warn().Err(err).Str("stream", stream).Msg("reading the Kafka name of a stream failed")
		}
		return "", false
	}
	if name, ok = topicForStream(stream, d.Tags); ok {
		c.mu.Lock()
		if len(c.streamTopics) >= maxStreamTopics {
			clear(c.streamTopics)
		}
		c.streamTopics[stream] = name
		c.mu.Unlock()
	}
	return name, ok
}

// TopicsForStreams maps stream names a DIS answer gave (an app's
// checkpointed streams) to Kafka names, skipping streams that are no topic.
func (c *Catalog) TopicsForStreams(ctx context.Context, streams []string) []string {
	var out []string
	for _, s := range streams {
		if name, ok := c.topicForStream(ctx, s, nil); ok {
			out = append(out, name)
		}
	}
	return out
}

// Collision returns Kafka's INVALID_TOPIC_EXCEPTION message when a new
// topic differs from existing ones only by '.' against '_', or "". Names
// without either character cannot collide and cost no ListStreams pass.
func (c *Catalog) Collision(ctx context.Context, name string) (string, error) {
	if !mayCollide(name) {
		return "", nil
	}
	listed, err := c.List(ctx)
	if err != nil {
		return "", err
	}
	key := topicCollisionKey(name)
	var existing []string
	for _, n := range listed {
		if n != name && topicCollisionKey(n) == key {
			existing = append(existing, n)
		}
	}
	if len(existing) == 0 {
		return "", nil
	}
	return topicCollisionMessage(name, existing), nil
}

// Create creates the stream for a topic (StreamName, with the Kafka name
// in topicNameTags when the stream name is encoded) and forgets what the
// catalog knew of the name; spec nil means defaults. A kept topic's keep
// stream is created first, so the topic never exists without its configs;
// for a topic that is not kept but whose stream is shaped as a kept one's,
// a keep stream left from an earlier topic of the name is deleted first.
func (c *Catalog) Create(ctx context.Context, name string, partitions int32, spec *Spec, format RecordFormat) error {
	hours := c.d.DefaultRetentionHours
	req := &disclient.CreateStreamRequest{
		StreamName:     StreamName(name),
		PartitionCount: partitions,
		StreamType:     disclient.StreamTypeCommon,
		DataType:       disclient.DataTypeBlob,
		DataDuration:   &hours,
		Tags:           append([]disclient.Tag{{Key: formatTagKey, Value: string(format)}}, topicNameTags(name)...),
	}
	if spec != nil {
		hours = spec.RetentionHours
		if spec.StreamType != "" {
			req.StreamType = spec.StreamType
		}
		req.Tags = append(req.Tags, spec.configTags()...)
	}
	switch {
	case spec != nil && spec.Kept():
		if err := c.createKeepStream(ctx, req.StreamName, partitions, spec, false); err != nil {
			return err
		}
	case mayBeKept(format, hours):
		if err := c.DeleteKeep(ctx, name, nil); err != nil {
			return err
		}
	}
	err := c.d.DIS.CreateStream(ctx, req)
	c.Invalidate(name)
	return err
}

// StreamType is the DIS stream type of a cached topic, "" when the topic
// is not cached: the metrics compute quota shares against it on every
// scrape, which must cost no DIS call.
func (c *Catalog) StreamType(topic string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t := c.topics[topic]; t != nil {
		return t.StreamType
	}
	return ""
}

// Invalidate drops what the catalog knows of a topic, cached or unknown,
// so the next Get describes it again.
func (c *Catalog) Invalidate(name string) {
	c.mu.Lock()
	delete(c.topics, name)
	delete(c.unknown, name)
	clear(c.unknownIDs)
	c.gen++
	c.mu.Unlock()
}
