// Package gateway serves the Kafka protocol over DIS: one handler per API
// key, run by the connections of gateway/wire, over the partition log
// (gateway/plog), the topic catalog (gateway/topics) and the group driver
// (gateway/groups). It depends on protocol for the wire format and on
// disclient for DIS; nothing below it imports it.
package gateway

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/gateway/authz"
	"github.com/disgw/disgw/gateway/cluster"
	"github.com/disgw/disgw/gateway/groups"
	"github.com/disgw/disgw/gateway/metrics"
	"github.com/disgw/disgw/gateway/plog"
	"github.com/disgw/disgw/gateway/plog/sharestate"
	"github.com/disgw/disgw/gateway/topics"
	"github.com/disgw/disgw/gateway/txns"
	"github.com/disgw/disgw/gateway/wire"
	"github.com/disgw/disgw/protocol"
)

// RecordFormat says how a Kafka record is held in a DIS record
// (docs/design.md §2); gateway/topics documents each format.
type RecordFormat = topics.RecordFormat

// The record formats Config.DefaultRecordFormat may name.
const (
	FormatKafka = topics.FormatKafka
	FormatRaw   = topics.FormatRaw
)

// Config holds everything the gateway needs besides the DIS client.
type Config struct {
	// Listen is the PLAINTEXT listener address, host:port ("127.0.0.1:0"
	// picks a port; "-" means no PLAINTEXT listener).
	Listen string
	// AdvertisedAddr is the host:port clients of the PLAINTEXT listener are
	// told to connect to; empty means the bound address.
	AdvertisedAddr string
	// Listeners are further listeners (SSL, SASL_PLAINTEXT, SASL_SSL).
	Listeners []Listener
	// SASL holds the users SASL listeners authenticate; a SASL listener
	// needs it unless SASLPassthrough is set.
	SASL *SASLUsers
	// SASLPassthrough makes SASL listeners take the PLAIN user name and
	// password as a DIS access key and secret key: that connection's DIS
	// calls are signed with them, so DIS IAM decides what it may do. PLAIN
	// is then the only mechanism offered.
	SASLPassthrough bool
	// NewTenantDIS builds the DIS client of a passthrough connection from
	// its credentials; required with SASLPassthrough. It lives outside the
	// gateway so that endpoint, project, encoding and HTTP settings are the
	// caller's, as for the gateway's own client.
	NewTenantDIS func(accessKey, secretKey string) (disclient.API, error)
	// Authorizer is AuthorizerNone (the default: everything is allowed)
	// or AuthorizerACL (Kafka's ACLs, kept in DIS). SuperUsers are
	// principals the ACLs never restrict (Kafka's super.users, as
	// "User:admin"); AllowEveryoneIfNoACLFound allows what no ACL on the
	// resource decides (Kafka's allow.everyone.if.no.acl.found).
	Authorizer                string
	SuperUsers                []string
	AllowEveryoneIfNoACLFound bool
	// ACLKey signs and verifies the ACL records in DIS; required with
	// AuthorizerACL. Whoever else can write the ACL stream cannot grant
	// anything without it, so every gateway sharing the DIS project holds
	// the same key and nobody else does (docs/security.md, "Where ACLs
	// live").
	ACLKey []byte
	// NodeID is this gateway's broker id in Metadata.
	NodeID int32
	// PeerSecret is the secret the gateways of one cluster share: this one
	// proves it holds it to the peers that probe it (cluster.PeerProof),
	// so that they count it as a peer, and other gateways sign in with it
	// (cluster.MechPeer). Nil answers no probe's challenge.
	PeerSecret []byte
	// Peers sends this gateway's calls to the others (transactions
	// between gateways, docs/design.md §13); nil without peers, when
	// only a gateway alone serves transactions.
	Peers PeerCaller
	// Membership is the cluster of gateways this one belongs to
	// (docs/design.md §6); nil means a gateway alone, which owns every
	// partition and group.
	Membership Membership
	// GroupHandoverWait is the longest a starting gateway waits for every
	// live peer to have probed it twice before it coordinates groups
	// (groupHandover); 0 coordinates at once, as a gateway alone may.
	GroupHandoverWait time.Duration
	// ClusterID is reported in Metadata v2+ and DescribeCluster.
	ClusterID string

	// AutoCreateTopics creates a missing topic on Metadata requests that allow
	// it, as Kafka's auto.create.topics.enable does.
	AutoCreateTopics bool
	// DefaultPartitions is used for auto-created topics and CreateTopics
	// with num_partitions -1 (Kafka's num.partitions).
	DefaultPartitions int32
	// DefaultRetentionHours is the DIS data_duration of new topics.
	DefaultRetentionHours int32
	// DefaultRecordFormat is the format of topics created through the gateway.
	DefaultRecordFormat RecordFormat

	// MaxFrameBytes refuses larger requests (Kafka's socket.request.max.bytes).
	MaxFrameBytes int32
	// MaxInflightBytesPerConn and MaxInflightBytes bound request bytes being
	// handled per connection and overall; past them the gateway stops
	// reading requests (backpressure).
	MaxInflightBytesPerConn int64
	MaxInflightBytes        int64
	// MaxDecompressedBytes bounds what decompressing one Produce request
	// may produce, over all its partitions (default twice MaxFrameBytes);
	// partitions past it are refused with MESSAGE_TOO_LARGE. What is
	// decompressed counts against MaxInflightBytes until it is written.
	MaxDecompressedBytes int64
	// Unread responses and partly received frames count against those
	// bounds too. MaxConnections and MaxConnectionsPerIP bound open client
	// connections in total and per client IP address (Kafka's
	// max.connections and max.connections.per.ip); a connection past them
	// is closed at once. IdleTimeout closes a connection with no request in
	// flight that sent nothing for that long, a partly sent frame
	// included (Kafka's connections.max.idle.ms). WriteTimeout closes a
	// connection whose client stopped reading its responses for that long.
	// TLSHandshakeTimeout bounds a TLS handshake.
	MaxConnections      int
	MaxConnectionsPerIP int
	IdleTimeout         time.Duration
	WriteTimeout        time.Duration
	TLSHandshakeTimeout time.Duration
	// MaxRecordBytes is the largest DIS record data (Kafka's message.max.bytes
	// as far as one record goes); DIS allows 1 MiB.
	MaxRecordBytes int

	// PutRecordsMaxRecords and PutRecordsMaxBytes (record data) bound one
	// PutRecords call. The defaults, 500 records and 1 MiB, fit DIS's
	// limits for COMMON streams; the embedded server takes much more.
	PutRecordsMaxRecords int
	PutRecordsMaxBytes   int
	// PutRecordsKeepsOrder says DIS fails every later record of a
	// partition in a PutRecords call once one fails, as the embedded
	// server does; a call may then hold several batches of one idempotent
	// producer. Real DIS may store a record after a failed one, so without
	// it each call holds at most one batch per producer and partition.
	PutRecordsKeepsOrder bool
	// MaxPartitionQueueBytes and MaxQueueBytes bound produced records
	// waiting for DIS per partition and overall; a produce that finds no
	// room stops its connection being read until there is room or its
	// timeout passes (then REQUEST_TIMED_OUT).
	MaxPartitionQueueBytes int64
	MaxQueueBytes          int64
	// ProducerIDExpiration forgets an idempotent producer's state on a
	// partition it has not written for this long (Kafka's
	// producer.id.expiration.ms).
	ProducerIDExpiration time.Duration
	// TransactionStatePartitions is how many partitions each tenant's
	// transaction state topic has (docs/design.md §13); default 4.
	TransactionStatePartitions int32
	// ShareStatePartitions is how many partitions each tenant's share
	// state topic has (docs/design.md §14); default 4.
	ShareStatePartitions int32
	// TransactionMaxTimeout is transaction.max.timeout.ms: the longest
	// transaction.timeout.ms a producer may ask for, so nothing holds a
	// partition's last stable offset back for longer; default 15 minutes.
	TransactionMaxTimeout time.Duration
	// MaxTransactionalIDs bounds the transactional ids each tenant's
	// coordinator holds (zero: 100000); a new one past it is refused with
	// COORDINATOR_NOT_AVAILABLE until idle ids expire.
	MaxTransactionalIDs int
	// MaxProducersPerPartition bounds the idempotent producers remembered
	// per partition; the one idle longest is forgotten first.
	MaxProducersPerPartition int
	// FetchMaxBytes bounds every fetch response whatever max_bytes the
	// client asks (Kafka's broker fetch.max.bytes); as in Kafka, the first
	// record is returned even when it alone is larger, so a consumer
	// always makes progress.
	FetchMaxBytes int32
	// ReadCacheBytes bounds the record batches all partitions cache, one
	// budget for the gateway (--read-cache-bytes); a raw-format
	// partition's record cache takes at most 8 MiB of it.
	ReadCacheBytes int
	// WatermarkInterval is the least time between two writes of a
	// kafka-format partition's offset watermark checkpoint
	// (docs/record-formats.md); the last write after a burst follows it
	// within this interval, and a stopping gateway writes what is due.
	WatermarkInterval time.Duration
	// PollInterval is how often an idle long-poll fetch looks for records
	// written by someone else than this gateway.
	PollInterval time.Duration
	// MetadataTTL is how long a stream description is cached.
	MetadataTTL time.Duration
	// UnknownTopicTTL is how long a topic DIS does not have is remembered
	// as unknown, so a client asking again and again for a missing topic
	// costs at most one DescribeStream per topic per interval. Creating
	// the topic through this gateway forgets it at once.
	UnknownTopicTTL time.Duration
	// MaxDescribesPerRequest bounds the DescribeStream calls one Metadata
	// request, or one request naming topics by id, makes for topics not
	// cached; the rest are answered from one ListStreams pass (see
	// docs/operations.md, "DIS calls per request").
	MaxDescribesPerRequest int
	// MaxCheckpointReadsPerRequest bounds the GetCheckpoint calls of one
	// OffsetFetch request.
	MaxCheckpointReadsPerRequest int
	// StateIdleTimeout is how long a partition writer or reader, and a
	// passthrough tenant without connections, stays after its last use.
	StateIdleTimeout time.Duration
	// CompactionMapBytes is the memory of the key map a compacted topic's
	// rewrite uses (Kafka's log.cleaner.dedupe.buffer.size): 24 bytes a
	// key; a rewrite with more keys than fit compacts what fits and leaves
	// the rest to the next (docs/design.md §12). Default 64 MiB.
	CompactionMapBytes int
	// KeepInterval is how often the keeper looks for kept partitions due
	// a rewrite; default 10 minutes, well within the half DIS retention a
	// rewrite has to finish in.
	KeepInterval time.Duration
	// KeepReadBytesPerSecond paces what one rewrite reads of a topic's
	// stream, so that consumers keep their share of the partition's read
	// quota (DIS allows 2 MB/s per partition); default 1 MB/s.
	KeepReadBytesPerSecond int
	// Now is the clock rewrites decide by; default time.Now. Tests set
	// it to pass DIS retention periods in seconds.
	Now func() time.Time
	// MaxTenants bounds the passthrough credentials held at once; a
	// sign-in with new ones beyond drops the least recently active tenant
	// without connections, or is refused when every one has some.
	MaxTenants int
	// AuthFailuresPerMinute and AuthFailureBurst are the token bucket of
	// failed sign-ins each client address and each user name has; beyond
	// it a sign-in is refused unchecked. SignInChecksPerSecond caps the DIS
	// calls that check passthrough sign-ins, whatever their keys.
	AuthFailuresPerMinute int
	AuthFailureBurst      int
	SignInChecksPerSecond int
	// InitialRebalanceDelay holds the first rebalance of a new group so
	// that members starting together join one generation (Kafka's
	// group.initial.rebalance.delay.ms). Negative means none.
	InitialRebalanceDelay time.Duration
	// GroupMaxSize (Kafka's group.max.size), GroupMaxPendingMembers,
	// MaxGroups, GroupMaxRebalanceTimeout and OffsetsRetention (Kafka's
	// offsets.retention.minutes) bound what clients can make the group
	// coordinator hold (each tenant's, in passthrough mode); zero means
	// groupcoord's defaults (1000, 100, 10000, 30m, 7 days). See
	// groupcoord.Config.
	GroupMaxSize             int
	GroupMaxPendingMembers   int
	MaxGroups                int
	GroupMaxRebalanceTimeout time.Duration
	OffsetsRetention         time.Duration
	// ConsumerGroupSessionTimeout and ConsumerGroupHeartbeatInterval are
	// Kafka's group.consumer.session.timeout.ms and
	// group.consumer.heartbeat.interval.ms for consumer-protocol (KIP-848)
	// groups; zero means Kafka's defaults, 45s and 5s.
	ConsumerGroupSessionTimeout    time.Duration
	ConsumerGroupHeartbeatInterval time.Duration
	// ShareMaxSessions is Kafka's group.share.max.share.sessions: the
	// share sessions this gateway keeps, each a member's list of
	// partitions; zero means Kafka's default, 2000.
	ShareMaxSessions int
	// MaxSharePartitions bounds the share-partitions (a share group's
	// view of one partition) this gateway holds, over all tenants: a
	// share fetch makes one for any group it names. Zero means 50000.
	MaxSharePartitions int
	// ShareGroupSessionTimeout, ShareGroupHeartbeatInterval and
	// ShareGroupMaxSize are Kafka's group.share.session.timeout.ms,
	// group.share.heartbeat.interval.ms and group.share.max.size for share
	// groups (KIP-932); zero means Kafka's defaults, 45s, 5s and 200.
	ShareGroupSessionTimeout    time.Duration
	ShareGroupHeartbeatInterval time.Duration
	ShareGroupMaxSize           int
	// ShareLimits are the broker's share-partition limits
	// (group.share.delivery.count.limit and the record locks); zero
	// fields get Kafka's defaults, and New refuses values outside the
	// ranges Kafka accepts, so a bad flag stops the gateway at start
	// rather than a share group at its first fetch.
	ShareLimits sharestate.Config
	// RequestTimeout bounds a request whose handler calls DIS and has no
	// deadline of its own (Produce, Fetch and JoinGroup derive theirs from
	// the request). It stays below a Kafka client's request.timeout.ms
	// (30 s), so the client hears REQUEST_TIMED_OUT rather than giving up.
	RequestTimeout time.Duration

	// MetricsLabels is how finely per-topic series are labelled:
	// MetricsLabelsTopic (the default), MetricsLabelsPartition or
	// MetricsLabelsNone. MetricsMaxTopics and MetricsMaxGroups cap the
	// topics and groups that get series of their own (default 1000
	// each); the rest share the label "_other", so a scrape stays
	// bounded however many partitions and groups clients make. Both count
	// (tenant, name) pairs: in passthrough mode every tenant's topics and
	// groups have series of their own. MetricsMaxTenants caps the
	// passthrough tenants whose DIS calls are counted apart (default 100).
	MetricsLabels     string
	MetricsMaxTopics  int
	MetricsMaxGroups  int
	MetricsMaxTenants int

	// ReadyProbeInterval is how often the gateway checks that DIS answers
	// (one ListStreams of one stream) for Ready and /readyz; default 5 s.
	ReadyProbeInterval time.Duration

	Logger   zerolog.Logger
	Registry prometheus.Registerer
}

func (c *Config) setDefaults() {
	if c.Listen == "" {
		c.Listen = "127.0.0.1:9092"
	}
	if c.ClusterID == "" {
		c.ClusterID = "disgw"
	}
	if c.DefaultPartitions <= 0 {
		c.DefaultPartitions = 1
	}
	if c.DefaultRetentionHours <= 0 {
		c.DefaultRetentionHours = 24
	}
	if c.DefaultRecordFormat == "" {
		c.DefaultRecordFormat = FormatKafka
	}
	if c.MaxFrameBytes <= 0 {
		c.MaxFrameBytes = protocol.DefaultMaxFrameSize
	}
	if c.MaxDecompressedBytes <= 0 {
		c.MaxDecompressedBytes = 2 * int64(c.MaxFrameBytes)
	}
	if c.MaxInflightBytesPerConn <= 0 {
		c.MaxInflightBytesPerConn = 64 << 20
	}
	if c.MaxInflightBytes <= 0 {
		c.MaxInflightBytes = 512 << 20
	}
	if c.MaxConnections <= 0 {
		c.MaxConnections = 10000
	}
	if c.MaxConnectionsPerIP <= 0 {
		c.MaxConnectionsPerIP = 1000
	}
	if c.IdleTimeout <= 0 {
		c.IdleTimeout = 10 * time.Minute
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = 30 * time.Second
	}
	if c.TLSHandshakeTimeout <= 0 {
		c.TLSHandshakeTimeout = 10 * time.Second
	}
	if c.MaxRecordBytes <= 0 {
		c.MaxRecordBytes = 1 << 20
	}
	if c.PutRecordsMaxRecords <= 0 {
		c.PutRecordsMaxRecords = 500
	}
	if c.PutRecordsMaxBytes <= 0 {
		c.PutRecordsMaxBytes = 1 << 20
	}
	if c.MaxPartitionQueueBytes <= 0 {
		c.MaxPartitionQueueBytes = 8 << 20
	}
	if c.MaxQueueBytes <= 0 {
		c.MaxQueueBytes = 128 << 20
	}
	if c.ProducerIDExpiration <= 0 {
		c.ProducerIDExpiration = 24 * time.Hour
	}
	if c.TransactionStatePartitions <= 0 {
		c.TransactionStatePartitions = 4
	}
	if c.ShareMaxSessions <= 0 {
		c.ShareMaxSessions = 2000
	}
	if c.MaxSharePartitions <= 0 {
		c.MaxSharePartitions = 50000
	}
	if c.ShareStatePartitions <= 0 {
		c.ShareStatePartitions = 4
	}
	if c.TransactionMaxTimeout <= 0 {
		c.TransactionMaxTimeout = 15 * time.Minute
	}
	if c.MaxProducersPerPartition <= 0 {
		c.MaxProducersPerPartition = 1000
	}
	if c.FetchMaxBytes <= 0 {
		c.FetchMaxBytes = 55 << 20
	}
	if c.ReadCacheBytes <= 0 {
		c.ReadCacheBytes = 64 << 20
	}
	if c.PollInterval <= 0 {
		c.PollInterval = 200 * time.Millisecond
	}
	if c.WatermarkInterval <= 0 {
		c.WatermarkInterval = 30 * time.Second
	}
	if c.MetadataTTL <= 0 {
		c.MetadataTTL = 5 * time.Second
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = 20 * time.Second
	}
	if c.UnknownTopicTTL <= 0 {
		c.UnknownTopicTTL = 2 * time.Second
	}
	if c.MaxDescribesPerRequest <= 0 {
		c.MaxDescribesPerRequest = 1000
	}
	if c.MaxCheckpointReadsPerRequest <= 0 {
		c.MaxCheckpointReadsPerRequest = 5000
	}
	if c.StateIdleTimeout <= 0 {
		c.StateIdleTimeout = 10 * time.Minute
	}
	if c.CompactionMapBytes <= 0 {
		c.CompactionMapBytes = 64 << 20
	}
	if c.KeepInterval <= 0 {
		c.KeepInterval = 10 * time.Minute
	}
	if c.KeepReadBytesPerSecond <= 0 {
		c.KeepReadBytesPerSecond = 1 << 20
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.MaxTenants <= 0 {
		c.MaxTenants = 1000
	}
	if c.AuthFailuresPerMinute <= 0 {
		c.AuthFailuresPerMinute = 6
	}
	if c.AuthFailureBurst <= 0 {
		c.AuthFailureBurst = 5
	}
	if c.SignInChecksPerSecond <= 0 {
		c.SignInChecksPerSecond = 20
	}
	if c.MetricsLabels == "" {
		c.MetricsLabels = MetricsLabelsTopic
	}
	if c.MetricsMaxTopics <= 0 {
		c.MetricsMaxTopics = 1000
	}
	if c.MetricsMaxGroups <= 0 {
		c.MetricsMaxGroups = 1000
	}
	if c.MetricsMaxTenants <= 0 {
		c.MetricsMaxTenants = 100
	}
	if c.ReadyProbeInterval <= 0 {
		c.ReadyProbeInterval = 5 * time.Second
	}
	switch {
	case c.InitialRebalanceDelay == 0:
		c.InitialRebalanceDelay = 3 * time.Second
	case c.InitialRebalanceDelay < 0:
		c.InitialRebalanceDelay = 0
	}
}

// Gateway is one running Kafka front end.
type Gateway struct {
	cfg Config
	// topicCfg is the part of cfg the topic catalogs and configs read.
	topicCfg topics.Config
	// tenant is the gateway's own DIS credentials, used by connections
	// that did not authenticate with passthrough credentials.
	tenant  *tenant
	log     zerolog.Logger
	metrics *metrics.Metrics
	// wire is the connections: listeners, sessions and the dispatcher.
	wire   *wire.Server[*tenant]
	panics *wire.Panics

	ctx    context.Context
	cancel context.CancelFunc
	// draining closes when Close starts: long-polling fetches answer at
	// once with what they have, so shutdown does not wait for max_wait_ms.
	draining  chan struct{}
	drainOnce sync.Once
	closeOnce sync.Once
	closeErr  error

	// inflight is the bytes held against MaxInflightBytes: requests being
	// handled, responses not yet written, frames partly received,
	// decompressed produce data.
	inflight atomic.Int64

	producers *producerIDs
	// shareSessions are the share consumers' sessions (share_sessions.go),
	// and shareBudget bounds the share-partitions every tenant's
	// partition log holds.
	shareSessions *shareSessions
	shareBudget   *plog.ShareBudget
	groups        *groups.Driver[*tenant]
	txns          *txns.Driver[*tenant]
	// handover holds group coordination back while a starting gateway's
	// peers let go of its groups.
	handover *groupHandover

	queues *plog.Queues
	// readCache is the gateway-wide budget of cached batches.
	readCache *plog.Cache

	// acls is where the ACLs live, nil without an authorizer; aclPolicy
	// holds the super users and the no-ACL rule.
	acls      authz.Store
	aclPolicy authz.Policy

	// tenantsMu guards tenants and each tenant's conns and lastActive. It
	// is taken before the partition log's Tenant.mu, never held across a DIS
	// call (docs/design.md §11).
	tenantsMu sync.Mutex
	tenants   map[string]*tenant // passthrough tenants by id; under tenantsMu
	// swept closes when the idle sweep Start began has stopped.
	swept chan struct{}

	// rawNotices are the idempotent producers already warned about
	// losing headers or keys to a raw topic's drop policy.
	rawNotices wire.Notices
	// disDown is why the last readiness probe of DIS failed; nil while
	// DIS answers (shutdown.go).
	disDown atomic.Pointer[string]
}

// New creates a gateway over dis. Call Start to listen.
func New(cfg Config, dis disclient.API) (*Gateway, error) {
	cfg.setDefaults()
	if cfg.Membership == nil {
		cfg.Membership = soleMembership{self: cluster.Peer{ID: cfg.NodeID}}
	}
	if cfg.DefaultRecordFormat != FormatKafka && cfg.DefaultRecordFormat != FormatRaw {
		return nil, fmt.Errorf("gateway: unknown record format %q", cfg.DefaultRecordFormat)
	}
	if cfg.SASLPassthrough && cfg.NewTenantDIS == nil {
		return nil, errors.New("gateway: SASL passthrough needs Config.NewTenantDIS")
	}
	if cfg.MetricsLabels != MetricsLabelsTopic && cfg.MetricsLabels != MetricsLabelsPartition && cfg.MetricsLabels != MetricsLabelsNone {
		return nil, fmt.Errorf("gateway: metrics labels must be topic, partition or none, not %q", cfg.MetricsLabels)
	}
	if err := cfg.ShareLimits.Validate(); err != nil {
		return nil, fmt.Errorf("gateway: share-partition limits: %w", err)
	}
	cfg.ShareLimits = cfg.ShareLimits.WithDefaults()
	policy, err := newACLPolicy(&cfg)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	gw := &Gateway{
		aclPolicy: policy,
		cfg:       cfg,
		topicCfg:  cfg.topicsConfig(),
		log:       cfg.Logger,
		ctx:       ctx,
		cancel:    cancel,
		draining:  make(chan struct{}),
		producers: newProducerIDs(time.Now),
		tenants:   make(map[string]*tenant),
		handover:  newGroupHandover(cfg.GroupHandoverWait),
	}
	gw.shareBudget = plog.NewShareBudget(cfg.MaxSharePartitions)
	gw.metrics = newMetrics(gw)
	gw.panics = &wire.Panics{Log: gw.log, Count: gw.metrics.Panics}
	gw.queues = plog.NewQueues(gw.cfg.MaxPartitionQueueBytes, gw.cfg.MaxQueueBytes, gw.metrics.ProduceQueued, gw.metrics.ProduceQueueWaits)
	gw.readCache = plog.NewCache(gw.cfg.ReadCacheBytes, gw.metrics.ReadCacheBytes)
	gw.tenant = newTenant(gw, "", "", dis)
	notChecked := disNotChecked
	gw.disDown.Store(&notChecked)
	gw.groups = newGroupDriver(gw)
	// DescribeConfigs reports the share group settings as they run.
	gw.cfg.ShareGroupSessionTimeout, gw.cfg.ShareGroupHeartbeatInterval, gw.cfg.ShareGroupMaxSize = gw.groups.ShareSettings()
	// A share session unused for twice the share session timeout belongs
	// to a member no longer in its group, or gone elsewhere.
	gw.shareSessions = newShareSessions(cfg.ShareMaxSessions, 2*gw.cfg.ShareGroupSessionTimeout)
	gw.txns = newTxnDriver(gw)
	gw.wire = wire.New(gw.wireDeps())
	if cfg.Authorizer == AuthorizerACL {
		if gw.acls, err = authz.NewDISStore(gw.tenant.dis, gw.log, cfg.MaxRecordBytes, cfg.ACLKey); err != nil {
			cancel()
			return nil, err
		}
	}
	return gw, nil
}

// Start binds every listener and serves in the background. It returns once
// all are bound, or with the first error.
func (gw *Gateway) Start() error {
	specs := gw.cfg.listenerSpecs()
	for _, spec := range specs {
		if err := spec.Validate(); err != nil {
			return err
		}
		if spec.Protocol.UsesSASL() && gw.cfg.SASL == nil && !gw.cfg.SASLPassthrough {
			return fmt.Errorf("gateway: %s listener %s needs SASL users or passthrough", spec.Protocol, spec.Addr)
		}
	}
	if gw.cfg.SASLPassthrough {
		if err := gw.requireSignatureChecks(); err != nil {
			return err
		}
	}
	if err := gw.startACLs(specs); err != nil {
		return err
	}
	if err := gw.wire.Listen(); err != nil {
		return err
	}
	gw.swept = make(chan struct{})
	go gw.sweepIdle()
	gw.panics.Go("membership follower", gw.followMembership)
	gw.panics.Go("DIS readiness probe", gw.probeDIS)
	gw.panics.Go("keeper", gw.keepLoop)
	return nil
}

// listenerSpecs is every listener the gateway binds: the PLAINTEXT one
// of Listen unless it is "-", then Listeners.
func (c *Config) listenerSpecs() []Listener {
	specs := append([]Listener{{Addr: c.Listen, AdvertisedAddr: c.AdvertisedAddr, Protocol: Plaintext}}, c.Listeners...)
	if c.Listen == "-" {
		specs = specs[1:]
	}
	return specs
}

// Addr is the bound address of the first listener.
func (gw *Gateway) Addr() net.Addr { return gw.wire.Addr() }

// ListenerAddr is the bound address of the first listener with protocol p,
// or nil.
func (gw *Gateway) ListenerAddr(p SecurityProtocol) net.Addr { return gw.wire.ListenerAddr(p) }

// Close shuts the gateway down gracefully (docs/operations.md, "Shutdown"):
// it turns unready, refuses new connections, hands its groups on, lets
// in-flight handlers finish (bounded by ctx), then closes every connection.
// Calls after the first return its result.
func (gw *Gateway) Close(ctx context.Context) error {
	gw.closeOnce.Do(func() { gw.closeErr = gw.close(ctx) })
	return gw.closeErr
}
