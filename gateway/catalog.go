package gateway

import (
	"context"
	"crypto/sha256"
	"errors"
	"regexp"
	"sort"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sync/singleflight"

	"github.com/disgw/disgw/disclient"
)

// formatTagKey is the DIS stream tag that records a topic's record format, so
// every gateway in front of the same DIS project decodes it the same way.
const formatTagKey = "disgw-record-format"

// errUnknownTopic is returned by the catalog for a stream DIS does not have.
var errUnknownTopic = errors.New("unknown topic")

// topicNamePattern is what DIS accepts as a stream name.
var topicNamePattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// validTopicName explains why DIS cannot hold name as a stream, or returns "".
func validTopicName(name string) string {
	if topicNamePattern.MatchString(name) {
		return ""
	}
	return "DIS stream names are 1 to 64 characters of A-Z, a-z, 0-9, '_' and '-'; '" + name + "' is not"
}

// topicMeta is the gateway's view of one stream.
type topicMeta struct {
	// tenant is whose catalog described the topic; its partitions are
	// that tenant's alone.
	tenant         *tenant
	name           string
	streamID       string
	id             [16]byte
	format         RecordFormat
	retentionHours int32
	streamType     string
	status         string
	partitions     []partitionMeta // index = Kafka partition number
	fetched        time.Time
}

// partitionMeta is a partition as DescribeStream last reported it.
type partitionMeta struct {
	status   string
	earliest int64
	next     int64
}

// key names partition p of this topic's stream.
func (t *topicMeta) key(p int32) partitionKey {
	return partitionKey{tenant: t.tenant, topic: t.name, stream: t.streamID, partition: p}
}

// writable reports whether Produce may write partition p.
func (t *topicMeta) writable(p int32) bool {
	return p >= 0 && int(p) < len(t.partitions) && t.partitions[p].status == disclient.PartitionStatusActive
}

// readable reports whether Fetch may read partition p (scaled-in partitions
// stay readable until DIS expires them).
func (t *topicMeta) readable(p int32) bool {
	if p < 0 || int(p) >= len(t.partitions) {
		return false
	}
	s := t.partitions[p].status
	return s == disclient.PartitionStatusActive || s == disclient.PartitionStatusDeleted
}

// topicIDFor derives the Kafka topic id from the DIS stream id: the same on
// every gateway, different for a deleted and re-created stream of the same
// name. It is a version 8 (custom) UUID over SHA-256 of the stream id.
func topicIDFor(streamID string) [16]byte {
	sum := sha256.Sum256([]byte("disgw topic id\x00" + streamID))
	var id [16]byte
	copy(id[:], sum[:16])
	id[6] = id[6]&0x0f | 0x80
	id[8] = id[8]&0x3f | 0x80
	return id
}

// catalog caches DescribeStream answers for MetadataTTL and maps topic ids
// back to names.
type catalog struct {
	tenant *tenant // stamped on every topicMeta
	dis    disclient.API
	ttl    time.Duration
	log    zerolog.Logger
	sf     singleflight.Group

	mu     sync.Mutex
	topics map[string]*topicMeta
	byID   map[[16]byte]string
}

func newCatalog(tn *tenant, ttl time.Duration, log zerolog.Logger) *catalog {
	return &catalog{
		tenant: tn,
		dis:    tn.dis,
		ttl:    ttl,
		log:    log,
		topics: make(map[string]*topicMeta),
		byID:   make(map[[16]byte]string),
	}
}

// get returns the topic, from cache when fresh.
func (c *catalog) get(ctx context.Context, name string) (*topicMeta, error) {
	c.mu.Lock()
	t := c.topics[name]
	c.mu.Unlock()
	if t != nil && time.Since(t.fetched) < c.ttl {
		return t, nil
	}
	return c.refresh(ctx, name)
}

// refresh describes the stream now.
func (c *catalog) refresh(ctx context.Context, name string) (*topicMeta, error) {
	v, err, _ := c.sf.Do(name, func() (any, error) {
		t, err := c.describe(ctx, name)
		c.mu.Lock()
		defer c.mu.Unlock()
		if err != nil {
			if errors.Is(err, errUnknownTopic) {
				delete(c.topics, name)
			}
			return nil, err
		}
		c.topics[name] = t
		c.byID[t.id] = name
		return t, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*topicMeta), nil
}

func (c *catalog) describe(ctx context.Context, name string) (*topicMeta, error) {
	t := &topicMeta{tenant: c.tenant, name: name, format: FormatRaw, fetched: time.Now()}
	start := ""
	for {
		d, err := c.dis.DescribeStream(ctx, name, start, 1000)
		if err != nil {
			if disclient.IsCode(err, disclient.CodeStreamNotFound) {
				return nil, errUnknownTopic
			}
			return nil, err
		}
		if start == "" {
			t.streamID = d.StreamID
			t.id = topicIDFor(d.StreamID)
			t.retentionHours = d.RetentionPeriod
			t.streamType = d.StreamType
			t.status = d.Status
			t.format = formatFromTags(d.Tags)
		}
		for _, p := range d.Partitions {
			n, err := disclient.ParsePartitionID(p.PartitionID)
			if err != nil {
				continue
			}
			for int(n) >= len(t.partitions) {
				t.partitions = append(t.partitions, partitionMeta{status: disclient.PartitionStatusExpired})
			}
			pm := partitionMeta{status: p.Status}
			if e, nx, err := disclient.ParseSequenceNumberRange(p.SequenceNumberRange); err == nil {
				pm.earliest, pm.next = e, nx
			}
			t.partitions[n] = pm
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

// nameForID maps a topic id to its name, listing every stream once when the
// id is not cached yet (a client may hold ids from another gateway).
func (c *catalog) nameForID(ctx context.Context, id [16]byte) (string, bool) {
	c.mu.Lock()
	name, ok := c.byID[id]
	c.mu.Unlock()
	if ok {
		return name, true
	}
	names, err := c.list(ctx)
	if err != nil {
		return "", false
	}
	for _, n := range names {
		if t, err := c.get(ctx, n); err == nil && t.id == id {
			return n, true
		}
	}
	return "", false
}

// list returns every stream name, sorted.
func (c *catalog) list(ctx context.Context) ([]string, error) {
	var names []string
	start := ""
	for {
		resp, err := c.dis.ListStreams(ctx, 100, start)
		if err != nil {
			return nil, err
		}
		names = append(names, resp.StreamNames...)
		if !resp.HasMoreStreams || len(resp.StreamNames) == 0 {
			break
		}
		start = resp.StreamNames[len(resp.StreamNames)-1]
	}
	sort.Strings(names)
	return names, nil
}

// create makes a stream for a new topic.
func (c *catalog) create(ctx context.Context, req *disclient.CreateStreamRequest) error {
	err := c.dis.CreateStream(ctx, req)
	c.invalidate(req.StreamName)
	return err
}

// invalidate drops a cached topic so the next get describes it again.
func (c *catalog) invalidate(name string) {
	c.mu.Lock()
	delete(c.topics, name)
	c.mu.Unlock()
}
