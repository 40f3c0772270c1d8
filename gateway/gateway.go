// Package gateway serves the Kafka protocol over DIS: the per-connection
// pipeline, one handler per API key, the partition writers and readers, and
// the topic catalog. It depends on protocol for the wire format and on
// disclient for DIS; nothing below it imports it.
package gateway

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/protocol"
)

// Config holds everything the gateway needs besides the DIS client.
type Config struct {
	// Listen is the Kafka listener address, host:port ("127.0.0.1:0" picks a port).
	Listen string
	// AdvertisedAddr is the host:port clients are told to connect to; empty
	// means the bound listener address.
	AdvertisedAddr string
	// NodeID is this gateway's broker id in Metadata.
	NodeID int32
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
	// MaxRecordBytes is the largest DIS record data (Kafka's message.max.bytes
	// as far as one record goes); DIS allows 1 MiB.
	MaxRecordBytes int

	// PutRecordsMaxRecords and PutRecordsMaxBytes bound one PutRecords call.
	PutRecordsMaxRecords int
	PutRecordsMaxBytes   int
	// ReadCacheBytes is the per-partition read-ahead cache.
	ReadCacheBytes int
	// PollInterval is how often an idle long-poll fetch looks for records
	// written by someone else than this gateway.
	PollInterval time.Duration
	// MetadataTTL is how long a stream description is cached.
	MetadataTTL time.Duration
	// InitialRebalanceDelay holds the first rebalance of a new group so
	// that members starting together join one generation (Kafka's
	// group.initial.rebalance.delay.ms). Negative means none.
	InitialRebalanceDelay time.Duration

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
	if c.MaxInflightBytesPerConn <= 0 {
		c.MaxInflightBytesPerConn = 64 << 20
	}
	if c.MaxInflightBytes <= 0 {
		c.MaxInflightBytes = 512 << 20
	}
	if c.MaxRecordBytes <= 0 {
		c.MaxRecordBytes = 1 << 20
	}
	if c.PutRecordsMaxRecords <= 0 {
		c.PutRecordsMaxRecords = 500
	}
	if c.PutRecordsMaxBytes <= 0 {
		c.PutRecordsMaxBytes = 4 << 20
	}
	if c.ReadCacheBytes <= 0 {
		c.ReadCacheBytes = 8 << 20
	}
	if c.PollInterval <= 0 {
		c.PollInterval = 200 * time.Millisecond
	}
	if c.MetadataTTL <= 0 {
		c.MetadataTTL = 5 * time.Second
	}
	switch {
	case c.InitialRebalanceDelay == 0:
		c.InitialRebalanceDelay = 3 * time.Second
	case c.InitialRebalanceDelay < 0:
		c.InitialRebalanceDelay = 0
	}
}

// maxBufferedBytes is how much unconsumed input a paused connection may hold.
func (c *Config) maxBufferedBytes() int {
	return int(c.MaxFrameBytes) + int(c.MaxInflightBytesPerConn)
}

// Gateway is one running Kafka front end.
type Gateway struct {
	cfg     Config
	dis     disclient.API
	log     zerolog.Logger
	metrics *metrics

	ctx    context.Context
	cancel context.CancelFunc
	// draining closes when Close starts: long-polling fetches answer at
	// once with what they have, so shutdown does not wait for max_wait_ms.
	draining  chan struct{}
	drainOnce sync.Once
	closeOnce sync.Once
	closeErr  error

	transport   *gnetTransport
	serveErr    chan error
	inflight    atomic.Int64
	handlersRun sync.WaitGroup

	catalog   *catalog
	producers *producerIDs
	groups    *groupDriver
	// knownApps remembers DIS apps this gateway created or saw, so a
	// commit costs one DIS call, not two.
	knownApps sync.Map
	// groupForApp maps encoded app names back to group ids.
	groupForApp sync.Map

	partMu  sync.Mutex
	writers map[partitionKey]*partitionWriter
	readers map[partitionKey]*partitionReader

	advertisedHost string
	advertisedPort int32
}

// New creates a gateway over dis. Call Start to listen.
func New(cfg Config, dis disclient.API) (*Gateway, error) {
	cfg.setDefaults()
	if cfg.DefaultRecordFormat != FormatKafka && cfg.DefaultRecordFormat != FormatRaw {
		return nil, fmt.Errorf("gateway: unknown record format %q", cfg.DefaultRecordFormat)
	}
	ctx, cancel := context.WithCancel(context.Background())
	gw := &Gateway{
		cfg:       cfg,
		dis:       dis,
		log:       cfg.Logger,
		ctx:       ctx,
		cancel:    cancel,
		serveErr:  make(chan error, 1),
		draining:  make(chan struct{}),
		producers: newProducerIDs(time.Now),
		writers:   make(map[partitionKey]*partitionWriter),
		readers:   make(map[partitionKey]*partitionReader),
	}
	gw.metrics = newMetrics(cfg.Registry)
	gw.catalog = newCatalog(dis, cfg.MetadataTTL, cfg.Logger)
	gw.groups = newGroupDriver(gw)
	return gw, nil
}

// Start binds the listener and serves in the background. It returns once the
// listener is bound, or with the error that stopped it.
func (gw *Gateway) Start() error {
	gw.transport = newGnetTransport(gw, gw.cfg.Listen)
	go func() { gw.serveErr <- gw.transport.run() }()
	select {
	case err := <-gw.transport.booted:
		if err != nil {
			return fmt.Errorf("gateway: listen %s: %w", gw.cfg.Listen, err)
		}
	case <-time.After(10 * time.Second):
		return errNotBooted
	}
	addr := gw.transport.localAddr()
	if addr == nil {
		return errNotBooted
	}
	if err := gw.setAdvertised(addr); err != nil {
		return err
	}
	gw.log.Info().Str("listen", addr.String()).
		Str("advertised", net.JoinHostPort(gw.advertisedHost, strconv.Itoa(int(gw.advertisedPort)))).
		Msg("kafka listener started")
	return nil
}

func (gw *Gateway) setAdvertised(bound net.Addr) error {
	adv := gw.cfg.AdvertisedAddr
	tcp, _ := bound.(*net.TCPAddr)
	if adv == "" {
		host := "127.0.0.1"
		if tcp != nil && !tcp.IP.IsUnspecified() {
			host = tcp.IP.String()
		}
		gw.advertisedHost = host
		if tcp != nil {
			gw.advertisedPort = int32(tcp.Port)
		}
		return nil
	}
	host, port, err := net.SplitHostPort(adv)
	if err != nil {
		return fmt.Errorf("gateway: advertised address %q: %w", adv, err)
	}
	p, err := strconv.Atoi(port)
	if err != nil || p <= 0 || p > 65535 {
		return fmt.Errorf("gateway: advertised address %q: bad port", adv)
	}
	gw.advertisedHost, gw.advertisedPort = host, int32(p)
	return nil
}

// Addr is the bound Kafka listener address.
func (gw *Gateway) Addr() net.Addr { return gw.transport.localAddr() }

// Close stops accepting requests, lets in-flight handlers finish (bounded by
// ctx), then closes every connection. Calls after the first return its
// result.
func (gw *Gateway) Close(ctx context.Context) error {
	gw.closeOnce.Do(func() { gw.closeErr = gw.close(ctx) })
	return gw.closeErr
}

func (gw *Gateway) close(ctx context.Context) error {
	gw.drainOnce.Do(func() { close(gw.draining) })
	gw.groups.close()
	finished := make(chan struct{})
	go func() {
		gw.handlersRun.Wait()
		close(finished)
	}()
	select {
	case <-finished:
	case <-ctx.Done():
	}
	gw.cancel()
	var err error
	if gw.transport != nil {
		err = gw.transport.stop(ctx)
		<-gw.serveErr
	}
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	return err
}
