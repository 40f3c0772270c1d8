// Command disgw is a Kafka-protocol gateway in front of Huawei Cloud DIS.
// With no DIS endpoint configured it starts an embedded DIS-compatible server
// and is a complete Kafka-compatible broker by itself.
//
// Every flag can also be set by an environment variable: DISGW_ and the flag
// name in upper case with '-' as '_' (--data-dir is DISGW_DATA_DIR). A flag on
// the command line wins. docs/operations.md lists them all.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/rs/zerolog"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/disclient/dislocal"
	"github.com/disgw/disgw/gateway"
	"github.com/disgw/disgw/gateway/cluster"
	"github.com/disgw/disgw/gateway/plog/sharestate"
)

// options are the parsed flags.
type options struct {
	listeners, advertisedListeners    string
	tlsCertFile, tlsKeyFile           string
	saslUsersFile, saslMode           string
	authorizer, superUsers, aclKey    string
	allowEveryoneIfNoACL              bool
	listen, advertised, adminListen   string
	dataDir, fsync, embeddedListen    string
	disEndpoint, disRegion            string
	disProjectID, disAK, disSK        string
	disSecurityToken, disAuthToken    string
	embeddedAK, embeddedSK            string
	embeddedQuotas                    string
	embeddedLimits                    string
	embeddedTransport                 string
	autoCreate, recordFormat          string
	disEncoding                       string
	defaultPartitions                 int
	maxRequestBytes                   int
	fetchMaxBytes                     int
	readCacheBytes                    int
	partitionQueueBytes, queueBytes   int64
	producerIDExpiration              time.Duration
	transactionStatePartitions        int
	shareMaxSessions                  int
	maxSharePartitions                int
	shareStatePartitions              int
	transactionMaxTimeout             time.Duration
	maxTransactionalIDs               int
	maxProducersPerPartition          int
	groupInitialDelay                 time.Duration
	groupMaxSize, groupMaxPending     int
	maxGroups                         int
	groupMaxRebalanceTimeout          time.Duration
	offsetsRetention                  time.Duration
	consumerGroupSessionTimeout       time.Duration
	consumerGroupHeartbeatInterval    time.Duration
	shareGroupSessionTimeout          time.Duration
	shareGroupHeartbeatInterval       time.Duration
	shareGroupMaxSize                 int
	shareLimits                       sharestate.Config
	requestTimeout                    time.Duration
	shutdownTimeout, readyProbe       time.Duration
	maxConns, maxConnsPerIP           int
	idleTimeout, writeTimeout         time.Duration
	tlsHandshakeTimeout               time.Duration
	stateIdleTimeout, unknownTopicTTL time.Duration
	compactionMapBytes                int
	keepInterval                      time.Duration
	keepReadBytesPerSecond            int
	maxTenants, maxDescribes          int
	maxCheckpointReads                int
	authFailuresPerMinute             int
	authFailureBurst, signInChecks    int
	logLevel, logFormat               string
	pprof                             bool
	metricsTopicLabels                string
	metricsMaxTopics                  int
	metricsMaxGroups                  int
	metricsMaxTenants                 int
	memoryLimit                       int64
	nodeID                            int
	nodeIDSet                         bool
	peers, peersDNS, peerSecret       string
	peerProbeInterval, peerDeadAfter  time.Duration
	// secretsOnCommandLine are the secretFlags given as flags, not in
	// their environment variables.
	secretsOnCommandLine []string
}

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "disgw:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("disgw", flag.ContinueOnError)
	fs.StringVar(&o.listen, "listen", "127.0.0.1:9092", "Kafka listener address")
	fs.StringVar(&o.advertised, "advertised-addr", "", "host:port clients are told to connect to (default: the listener address)")
	fs.StringVar(&o.listeners, "listeners", "", "further Kafka listeners, comma-separated PROTOCOL://host:port with PROTOCOL one of SSL, SASL_PLAINTEXT, SASL_SSL")
	fs.StringVar(&o.advertisedListeners, "advertised-listeners", "", "advertised addresses of --listeners, as PROTOCOL://host:port,...")
	fs.StringVar(&o.tlsCertFile, "tls-cert-file", "", "PEM certificate (chain) of the SSL and SASL_SSL listeners")
	fs.StringVar(&o.tlsKeyFile, "tls-key-file", "", "PEM private key of the SSL and SASL_SSL listeners")
	fs.StringVar(&o.saslUsersFile, "sasl-users-file", "", "SASL users (name:password per line) for the SASL listeners (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)")
	fs.StringVar(&o.saslMode, "sasl-mode", "users", "how SASL listeners authenticate: users (--sasl-users-file, the gateway's own DIS credentials) or passthrough (PLAIN user name and password are the client's DIS AK/SK)")
	fs.StringVar(&o.authorizer, "authorizer", gateway.AuthorizerNone, "none (every client may do everything, as Kafka without an authorizer) or acl (Kafka ACLs, kept in DIS: docs/security.md)")
	fs.StringVar(&o.superUsers, "super-users", "", "principals the ACLs never restrict, as Kafka's super.users: User:name;User:other")
	fs.StringVar(&o.aclKey, "acl-key", "", "with --authorizer=acl, the key (16 characters or more) the ACL records in DIS are signed with, the same for every gateway of the DIS project (prefer the DISGW_ACL_KEY environment variable); default: derived from the DIS secret key, else kept in the embedded DIS's data directory")
	fs.BoolVar(&o.allowEveryoneIfNoACL, "allow-everyone-if-no-acl-found", false, "with --authorizer=acl, allow what no ACL on the resource decides (Kafka's allow.everyone.if.no.acl.found)")
	fs.StringVar(&o.adminListen, "admin-listen", "127.0.0.1:9094", "admin HTTP address serving /healthz, /readyz and /metrics (empty disables)")
	fs.StringVar(&o.dataDir, "data-dir", defaultDataDir(), "embedded DIS data directory")
	fs.StringVar(&o.fsync, "fsync", "always", "embedded DIS durability: always (fsync before acknowledging) or none")
	fs.StringVar(&o.embeddedListen, "embedded-dis-listen", "127.0.0.1:0", "address of the embedded DIS REST API")
	fs.StringVar(&o.disEndpoint, "dis-endpoint", "", "DIS endpoint URL; empty (and no region) starts the embedded DIS server")
	fs.StringVar(&o.disRegion, "dis-region", "", "DIS region, e.g. cn-north-4 (sets the endpoint to https://dis.REGION.myhuaweicloud.com)")
	fs.StringVar(&o.disProjectID, "dis-project-id", "", "DIS project id")
	fs.StringVar(&o.disAK, "dis-ak", "", "DIS access key (prefer the DISGW_DIS_AK environment variable)")
	fs.StringVar(&o.disSK, "dis-sk", "", "DIS secret key (prefer the DISGW_DIS_SK environment variable)")
	fs.StringVar(&o.disSecurityToken, "dis-security-token", "", "security token of temporary AK/SK credentials (prefer DISGW_DIS_SECURITY_TOKEN)")
	fs.StringVar(&o.disAuthToken, "dis-auth-token", "", "IAM token sent as X-Auth-Token instead of AK/SK signing (prefer DISGW_DIS_AUTH_TOKEN)")
	fs.StringVar(&o.embeddedAK, "embedded-dis-ak", "", "access key the embedded DIS server requires signatures with (with --embedded-dis-sk); the gateway signs with it")
	fs.StringVar(&o.embeddedSK, "embedded-dis-sk", "", "secret key for --embedded-dis-ak (prefer DISGW_EMBEDDED_DIS_SK)")
	fs.StringVar(&o.embeddedLimits, "embedded-dis-limits", "none", "embedded DIS account and scaling limits: none, or dis (50 COMMON and 10 ADVANCED partitions per account, 5 scalings per stream per hour, an hour between them)")
	fs.StringVar(&o.embeddedQuotas, "embedded-dis-quotas", "none", "embedded DIS per-partition traffic limits: none, common (as each stream's type says; COMMON by default) or advanced (the same, ADVANCED by default)")
	fs.StringVar(&o.embeddedTransport, "embedded-dis-transport", "local", "how the gateway calls the embedded DIS for records (PutRecords, GetCursor, GetRecords): local (in process) or http (its REST API, as a remote DIS)")
	fs.StringVar(&o.autoCreate, "auto-create-topics", "auto", "create missing topics on Metadata requests: true, false, or auto (true with the embedded DIS, false with real DIS)")
	fs.StringVar(&o.recordFormat, "record-format", "kafka", "record format of topics created through the gateway: kafka or raw")
	fs.StringVar(&o.disEncoding, "dis-encoding", "auto", "PutRecords/GetRecords bodies: json, protobuf, or auto (protobuf with the embedded DIS, json with real DIS)")
	fs.IntVar(&o.defaultPartitions, "default-partitions", 1, "partitions of auto-created topics and of CreateTopics with num_partitions -1")
	fs.IntVar(&o.maxRequestBytes, "max-request-bytes", 100<<20, "largest Kafka request accepted (Kafka's socket.request.max.bytes)")
	fs.IntVar(&o.readCacheBytes, "read-cache-bytes", 64<<20, "bytes of record batches cached for fetches, one budget for the whole gateway")
	fs.IntVar(&o.fetchMaxBytes, "fetch-max-bytes", 55<<20, "largest fetch response whatever the client asks (Kafka's fetch.max.bytes); the first record is returned even if larger")
	fs.Int64Var(&o.partitionQueueBytes, "max-partition-queue-bytes", 8<<20, "produced bytes queued for DIS per partition before producers wait (backpressure)")
	fs.Int64Var(&o.queueBytes, "max-queue-bytes", 128<<20, "produced bytes queued for DIS over all partitions before producers wait (backpressure)")
	fs.DurationVar(&o.shutdownTimeout, "shutdown-timeout", 30*time.Second, "on SIGTERM or SIGINT, how long in-flight requests may take to finish before connections close")
	fs.DurationVar(&o.readyProbe, "ready-probe-interval", 5*time.Second, "how often the gateway checks that DIS answers, for /readyz")
	fs.IntVar(&o.maxSharePartitions, "max-share-partitions", 50000, "share-partitions (a share group's view of one partition) this gateway holds; beyond, a share fetch of a new one is answered POLICY_VIOLATION")
	fs.IntVar(&o.shareMaxSessions, "share-max-sessions", 2000, "share sessions this gateway keeps (Kafka's group.share.max.share.sessions): one per share consumer fetching from it")
	fs.IntVar(&o.transactionStatePartitions, "transaction-state-partitions", 4, "partitions of each tenant's __transaction_state topic, created on the first transactional producer; every gateway of a DIS account must agree")
	fs.IntVar(&o.shareStatePartitions, "share-state-partitions", 4, "partitions of each tenant's __share_group_state topic, created when a share group first keeps state; every gateway of a DIS account must agree")
	fs.IntVar(&o.maxTransactionalIDs, "max-transactional-ids", 100000, "transactional ids each tenant's transaction coordinator holds; a new one past it is refused with COORDINATOR_NOT_AVAILABLE until idle ids expire (7 days)")
	fs.DurationVar(&o.transactionMaxTimeout, "transaction-max-timeout", 15*time.Minute, "the longest transaction.timeout.ms a producer may ask for (Kafka's transaction.max.timeout.ms): nothing holds a partition's last stable offset back for longer")
	fs.DurationVar(&o.producerIDExpiration, "producer-id-expiration", 24*time.Hour, "forget an idempotent producer's state on a partition it has not written for this long (Kafka's producer.id.expiration.ms)")
	fs.IntVar(&o.maxProducersPerPartition, "max-producers-per-partition", 1000, "idempotent producers remembered per partition; the one idle longest is forgotten first")
	fs.DurationVar(&o.groupInitialDelay, "group-initial-rebalance-delay", 0, "wait before the first rebalance of a new consumer group (Kafka's group.initial.rebalance.delay.ms); 0 for none, as Kafka's shipped server.properties sets it, and 3s with --peers or --peers-dns, where groups move between gateways")
	fs.IntVar(&o.groupMaxSize, "group-max-size", 1000, "most members of one consumer group (Kafka's group.max.size); more get GROUP_MAX_SIZE_REACHED")
	fs.IntVar(&o.groupMaxPending, "group-max-pending-members", 100, "most member ids per group handed out with MEMBER_ID_REQUIRED and not yet rejoined; past it the oldest is forgotten")
	fs.IntVar(&o.maxGroups, "max-groups", 10000, "most consumer groups held in memory; a join or simple commit making one more gets COORDINATOR_NOT_AVAILABLE")
	fs.DurationVar(&o.groupMaxRebalanceTimeout, "group-max-rebalance-timeout", 30*time.Minute, "largest rebalance timeout a member gets; larger requests are clamped")
	fs.DurationVar(&o.offsetsRetention, "offsets-retention", 7*24*time.Hour, "how long an empty group's committed offsets are kept (Kafka's offsets.retention.minutes)")
	fs.DurationVar(&o.consumerGroupSessionTimeout, "consumer-group-session-timeout", 45*time.Second, "consumer-protocol (KIP-848) members silent this long are removed (Kafka's group.consumer.session.timeout.ms)")
	fs.DurationVar(&o.consumerGroupHeartbeatInterval, "consumer-group-heartbeat-interval", 5*time.Second, "heartbeat interval told to consumer-protocol members (Kafka's group.consumer.heartbeat.interval.ms)")
	fs.DurationVar(&o.shareGroupSessionTimeout, "share-group-session-timeout", 45*time.Second, "share group (KIP-932) members silent this long are removed and their records released (Kafka's group.share.session.timeout.ms)")
	fs.DurationVar(&o.shareGroupHeartbeatInterval, "share-group-heartbeat-interval", 5*time.Second, "heartbeat interval told to share group members (Kafka's group.share.heartbeat.interval.ms)")
	fs.IntVar(&o.shareGroupMaxSize, "share-group-max-size", 200, "most members of one share group (Kafka's group.share.max.size); more get GROUP_MAX_SIZE_REACHED")
	fs.IntVar(&o.shareLimits.DeliveryCountLimit, "share-delivery-count-limit", 5, "deliveries after which a share group's record is archived rather than made available again, 2 to 10 (Kafka's group.share.delivery.count.limit)")
	fs.DurationVar(&o.shareLimits.LockDuration, "share-record-lock-duration", 30*time.Second, "how long a share consumer holds a record it took, by default, 1s to --share-max-record-lock-duration (Kafka's group.share.record.lock.duration.ms); a group's share.record.lock.duration.ms overrides it")
	fs.DurationVar(&o.shareLimits.MaxLockDuration, "share-max-record-lock-duration", 60*time.Second, "longest record lock a share group may set, 30s to 1h (Kafka's group.share.max.record.lock.duration.ms)")
	fs.IntVar(&o.shareLimits.MaxInFlight, "share-partition-max-record-locks", 2000, "most records of a share-partition taken in and not yet done, 100 to 10000 (Kafka's group.share.partition.max.record.locks)")
	fs.DurationVar(&o.requestTimeout, "request-timeout", 20*time.Second, "deadline of a request that calls DIS and has none of its own; below clients' 30s request.timeout.ms")
	fs.IntVar(&o.maxConns, "max-connections", 10000, "most open Kafka client connections (Kafka's max.connections); more are closed at once")
	fs.IntVar(&o.maxConnsPerIP, "max-connections-per-ip", 1000, "most open Kafka client connections from one IP address (Kafka's max.connections.per.ip)")
	fs.DurationVar(&o.idleTimeout, "idle-timeout", 10*time.Minute, "close a connection with no request in flight that sent nothing for this long, a partly sent request included (Kafka's connections.max.idle.ms)")
	fs.DurationVar(&o.writeTimeout, "write-timeout", 30*time.Second, "close a connection whose client stopped reading its responses for this long")
	fs.DurationVar(&o.tlsHandshakeTimeout, "tls-handshake-timeout", 10*time.Second, "close a TLS connection whose handshake takes longer")
	fs.IntVar(&o.compactionMapBytes, "compaction-map-bytes", 64<<20, "memory of the key map a compacted topic's rewrite uses, 24 bytes a key; more keys than fit are compacted by the next rewrite")
	fs.DurationVar(&o.keepInterval, "keep-interval", 10*time.Minute, "how often kept topics' partitions are looked at for a rewrite that is due")
	fs.IntVar(&o.keepReadBytesPerSecond, "keep-read-bytes-per-second", 1<<20, "how fast a rewrite reads a kept topic's partition, so that its consumers keep their share of DIS's read quota (2 MB/s a partition)")
	fs.DurationVar(&o.stateIdleTimeout, "state-idle-timeout", 10*time.Minute, "drop a partition writer or reader, and passthrough credentials without connections, unused for this long")
	fs.IntVar(&o.authFailuresPerMinute, "auth-failures-per-minute", 6, "failed SASL sign-ins each client address and each user name earns back per minute once --auth-failure-burst is spent; beyond, sign-ins are refused unchecked")
	fs.IntVar(&o.authFailureBurst, "auth-failure-burst", 5, "failed SASL sign-ins a client address or user name may make in a row before being throttled")
	fs.IntVar(&o.signInChecks, "signin-checks-per-second", 20, "DIS calls per second that check passthrough sign-ins; beyond, sign-ins are refused with a message to wait")
	fs.IntVar(&o.maxTenants, "max-tenants", 1000, "passthrough credentials held at once; beyond, a sign-in with new ones drops the least recently active idle ones or is refused")
	fs.DurationVar(&o.unknownTopicTTL, "unknown-topic-ttl", 2*time.Second, "how long a topic DIS does not have is remembered as missing")
	fs.IntVar(&o.maxDescribes, "max-describes-per-request", 1000, "DescribeStream calls one request may make for topics not cached")
	fs.IntVar(&o.maxCheckpointReads, "max-checkpoint-reads-per-request", 5000, "GetCheckpoint calls one OffsetFetch request may make")
	fs.StringVar(&o.metricsTopicLabels, "metrics-topic-labels", gateway.MetricsLabelsTopic, "labels of the per-topic metrics: topic, partition (topic and partition) or none")
	fs.IntVar(&o.metricsMaxTopics, "metrics-max-topics", 1000, "topics (of all tenants) with metrics series of their own; the rest share topic=\"_other\"")
	fs.IntVar(&o.metricsMaxGroups, "metrics-max-groups", 1000, "consumer groups (of all tenants) with metrics series of their own; the rest share group=\"_other\"")
	fs.IntVar(&o.metricsMaxTenants, "metrics-max-tenants", 100, "passthrough tenants whose DIS calls have metrics series of their own; the rest share tenant=\"_other\"")
	fs.BoolVar(&o.pprof, "pprof", false, "serve Go's profiling handlers under /debug/pprof/ on the admin listener")
	fs.Int64Var(&o.memoryLimit, "memory-limit", 200<<20, "soft limit in bytes on the Go runtime's memory, past which the GC works harder (runtime/debug.SetMemoryLimit); 0 for none; GOMEMLIMIT in the environment wins")
	fs.IntVar(&o.nodeID, "node-id", 0, "this gateway's node id, its broker id in Metadata; with --peers, its entry there")
	fs.StringVar(&o.peers, "peers", "", "the gateways sharing this DIS project, itself included, as ID=host:port,... with each one's advertised address of its first listener")
	fs.StringVar(&o.peerSecret, "peer-secret", "", "secret every gateway of --peers or --peers-dns shares; a peer must prove it holds it (prefer DISGW_PEER_SECRET)")
	fs.StringVar(&o.peersDNS, "peers-dns", "", "NAME:PORT: the gateways are the addresses NAME resolves to, each at PORT, with node ids derived from the addresses (instead of --peers and --node-id)")
	fs.DurationVar(&o.peerProbeInterval, "peer-probe-interval", cluster.DefaultProbeInterval, "how often each peer gateway is probed")
	fs.DurationVar(&o.peerDeadAfter, "peer-dead-after", cluster.DefaultDeadAfter, "a peer gateway without a successful probe for this long is dead and its partitions and groups move")
	fs.StringVar(&o.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.StringVar(&o.logFormat, "log-format", "console", "console or json")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var envErr error
	fs.VisitAll(func(f *flag.Flag) {
		env := envName(f.Name)
		if v, ok := os.LookupEnv(env); ok && !set[f.Name] {
			if err := f.Value.Set(v); err != nil && envErr == nil {
				envErr = fmt.Errorf("%s: %w", env, err)
			}
		}
	})
	_, envNodeID := os.LookupEnv("DISGW_NODE_ID")
	o.nodeIDSet = set["node-id"] || envNodeID
	_, envDelay := os.LookupEnv(envName("group-initial-rebalance-delay"))
	if !set["group-initial-rebalance-delay"] && !envDelay && (o.peers != "" || o.peersDNS != "") {
		// A group that moves to another gateway starts there with no
		// members: the delay lets its members all rejoin before the first
		// of them is given every partition (docs/groups.md).
		o.groupInitialDelay = clusterInitialRebalanceDelay
	}
	for _, name := range secretFlags {
		if set[name] {
			o.secretsOnCommandLine = append(o.secretsOnCommandLine, name)
		}
	}
	return o, envErr
}

// envName is the environment variable that sets flag name.
func envName(name string) string {
	return "DISGW_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// defaultDataDir is $XDG_DATA_HOME/disgw, else ~/.local/share/disgw.
func defaultDataDir() string {
	if d := os.Getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "disgw")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".local", "share", "disgw")
	}
	return "disgw-data"
}

func newLogger(o *options) (zerolog.Logger, error) {
	lvl, err := zerolog.ParseLevel(o.logLevel)
	if err != nil {
		return zerolog.Logger{}, fmt.Errorf("--log-level: %w", err)
	}
	var log zerolog.Logger
	switch o.logFormat {
	case "json":
		log = zerolog.New(os.Stderr)
	case "console":
		log = zerolog.New(zerolog.ConsoleWriter{Out: os.Stderr, TimeFormat: time.RFC3339, NoColor: !isTerminal(os.Stderr)})
	default:
		return log, fmt.Errorf("--log-format must be console or json")
	}
	return log.Level(lvl).With().Timestamp().Logger(), nil
}

// isTerminal reports whether f is a character device, where colours help.
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func run(args []string) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	return serve(ctx, args, nil)
}

// serving is where a running disgw can be reached; "" for what it does
// not serve.
type serving struct {
	embeddedDIS, admin string
}

// serve runs disgw until ctx ends, then shuts down. started, when not nil,
// is told what serves once everything does.
func serve(ctx context.Context, args []string, started func(serving)) error {
	o, err := parseFlags(args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if err := checkCredentials(o); err != nil {
		return err
	}
	log, err := newLogger(o)
	if err != nil {
		return err
	}
	warnSecretFlags(o, log)
	if limit, from := applyMemoryLimit(o.memoryLimit, os.Getenv("GOMEMLIMIT")); from != "" {
		log.Info().Int64("bytes", limit).Str("from", from).Msg("Go memory limit set")
	} else {
		log.Info().Msg("no Go memory limit")
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	endpoint := o.disEndpoint
	if endpoint == "" && o.disRegion != "" {
		endpoint = "https://dis." + o.disRegion + ".myhuaweicloud.com"
	}
	embedded := endpoint == ""
	// With no Kafka listener at all disgw is the embedded DIS server
	// alone, for several gateways to share (--dis-endpoint).
	disOnly := o.listen == "-" && strings.TrimSpace(o.listeners) == ""
	switch {
	case disOnly && !embedded:
		return errors.New("--listen - with no --listeners runs no gateway, only the embedded DIS server, which --dis-endpoint and --dis-region turn off")
	case disOnly && (o.peers != "" || o.peersDNS != ""):
		return errors.New("--peers and --peers-dns are for gateways; --listen - with no --listeners runs only the embedded DIS server")
	}
	encoding, err := bodyEncoding(o.disEncoding, embedded)
	if err != nil {
		return err
	}
	var aclKey []byte
	if o.authorizer == gateway.AuthorizerACL && !disOnly {
		var from string
		if aclKey, from, err = chooseACLKey(o, embedded); err != nil {
			return err
		}
		log.Info().Str("acl_key_from", from).Msg("ACL key chosen")
	}
	var r running
	projectID := o.disProjectID
	if embedded {
		r.local, r.localHTTP, endpoint, err = startEmbedded(o, log)
		if err != nil {
			return err
		}
		local := r.local
		reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "disgw_dis_corrupt_records_total",
			Help: "Damaged ranges found in the embedded DIS's record log, each holding one record or more that reads answer with an error (docs/dis-embedded.md, Damaged records).",
		}, func() float64 {
			found, _ := local.LogDamage()
			return float64(found)
		}))
		if projectID == "" {
			projectID = "disgw"
		}
	} else if projectID == "" {
		return errors.New("--dis-project-id is required with a DIS endpoint")
	}
	signer, err := newSigner(o, embedded)
	if err != nil {
		return err
	}
	if signer == nil && !embedded {
		log.Warn().Str("endpoint", endpoint).Msg("no DIS credentials: requests are sent unsigned")
	}

	disCfg := disclient.Config{Endpoint: endpoint, ProjectID: projectID, Signer: signer, Encoding: encoding, Logger: log.With().Str("component", "disclient").Logger()}
	dis, err := disclient.New(disCfg)
	if err != nil {
		return err
	}
	defer dis.Close()
	if disOnly {
		log.Info().Str("endpoint", endpoint).Msg("no Kafka listener: serving the embedded DIS REST API alone")
		return r.serveUntilDone(ctx, o, reg, dis, endpoint, started, log)
	}
	api, err := ownDIS(o.embeddedTransport, r.local, projectID, dis)
	if err != nil {
		return err
	}

	autoCreate := embedded
	switch o.autoCreate {
	case "true":
		autoCreate = true
	case "false":
		autoCreate = false
	case "auto":
	default:
		return fmt.Errorf("--auto-create-topics must be true, false or auto")
	}
	cfg := gateway.Config{
		Listen:                       o.listen,
		AdvertisedAddr:               o.advertised,
		AutoCreateTopics:             autoCreate,
		DefaultPartitions:            int32(o.defaultPartitions),
		DefaultRecordFormat:          gateway.RecordFormat(o.recordFormat),
		MaxFrameBytes:                int32(o.maxRequestBytes),
		RequestTimeout:               o.requestTimeout,
		ReadyProbeInterval:           o.readyProbe,
		FetchMaxBytes:                int32(min(o.fetchMaxBytes, math.MaxInt32)),
		ReadCacheBytes:               o.readCacheBytes,
		MaxPartitionQueueBytes:       o.partitionQueueBytes,
		MaxQueueBytes:                o.queueBytes,
		ProducerIDExpiration:         o.producerIDExpiration,
		TransactionStatePartitions:   int32(o.transactionStatePartitions),
		ShareMaxSessions:             o.shareMaxSessions,
		MaxSharePartitions:           o.maxSharePartitions,
		ShareStatePartitions:         int32(o.shareStatePartitions),
		TransactionMaxTimeout:        o.transactionMaxTimeout,
		MaxTransactionalIDs:          o.maxTransactionalIDs,
		MaxProducersPerPartition:     o.maxProducersPerPartition,
		InitialRebalanceDelay:        initialDelay(o.groupInitialDelay),
		MaxConnections:               o.maxConns,
		MaxConnectionsPerIP:          o.maxConnsPerIP,
		IdleTimeout:                  o.idleTimeout,
		WriteTimeout:                 o.writeTimeout,
		TLSHandshakeTimeout:          o.tlsHandshakeTimeout,
		StateIdleTimeout:             o.stateIdleTimeout,
		CompactionMapBytes:           o.compactionMapBytes,
		KeepInterval:                 o.keepInterval,
		KeepReadBytesPerSecond:       o.keepReadBytesPerSecond,
		MaxTenants:                   o.maxTenants,
		AuthFailuresPerMinute:        o.authFailuresPerMinute,
		AuthFailureBurst:             o.authFailureBurst,
		SignInChecksPerSecond:        o.signInChecks,
		UnknownTopicTTL:              o.unknownTopicTTL,
		MaxDescribesPerRequest:       o.maxDescribes,
		MaxCheckpointReadsPerRequest: o.maxCheckpointReads,
		MetricsLabels:                o.metricsTopicLabels,
		MetricsMaxTopics:             o.metricsMaxTopics,
		MetricsMaxGroups:             o.metricsMaxGroups,
		MetricsMaxTenants:            o.metricsMaxTenants,
		Logger:                       log,
		Registry:                     reg,
	}
	if o.groupMaxSize <= 0 || o.groupMaxPending <= 0 || o.maxGroups <= 0 || o.groupMaxRebalanceTimeout <= 0 || o.offsetsRetention <= 0 ||
		o.consumerGroupSessionTimeout <= 0 || o.consumerGroupHeartbeatInterval <= 0 {
		return errors.New("--group-max-size, --group-max-pending-members, --max-groups, --group-max-rebalance-timeout, --offsets-retention and the --consumer-group-* durations must be positive")
	}
	if o.shareMaxSessions <= 0 || o.maxSharePartitions <= 0 {
		return errors.New("--share-max-sessions and --max-share-partitions must be positive")
	}
	if o.shareGroupSessionTimeout <= 0 || o.shareGroupHeartbeatInterval <= 0 || o.shareGroupMaxSize <= 0 {
		return errors.New("--share-group-session-timeout, --share-group-heartbeat-interval and --share-group-max-size must be positive")
	}
	if err := validateShareLimits(o.shareLimits); err != nil {
		return err
	}
	if o.maxTransactionalIDs <= 0 {
		return errors.New("--max-transactional-ids must be positive")
	}
	if o.transactionStatePartitions <= 0 || o.transactionStatePartitions > 1000 || o.transactionMaxTimeout <= 0 {
		return errors.New("--transaction-state-partitions must be 1 to 1000 and --transaction-max-timeout positive")
	}
	if o.shareStatePartitions <= 0 || o.shareStatePartitions > 1000 {
		return errors.New("--share-state-partitions must be 1 to 1000")
	}
	if o.compactionMapBytes <= 0 || o.keepInterval <= 0 || o.keepReadBytesPerSecond <= 0 {
		return errors.New("--compaction-map-bytes, --keep-interval and --keep-read-bytes-per-second must be positive")
	}
	cfg.GroupMaxSize, cfg.GroupMaxPendingMembers, cfg.MaxGroups = o.groupMaxSize, o.groupMaxPending, o.maxGroups
	cfg.GroupMaxRebalanceTimeout, cfg.OffsetsRetention = o.groupMaxRebalanceTimeout, o.offsetsRetention
	cfg.ConsumerGroupSessionTimeout, cfg.ConsumerGroupHeartbeatInterval = o.consumerGroupSessionTimeout, o.consumerGroupHeartbeatInterval
	cfg.ShareGroupSessionTimeout, cfg.ShareGroupHeartbeatInterval, cfg.ShareGroupMaxSize = o.shareGroupSessionTimeout, o.shareGroupHeartbeatInterval, o.shareGroupMaxSize
	cfg.ShareLimits = o.shareLimits
	if embedded {
		// The embedded server fails every later record of a partition in
		// a call once one fails (docs/dis-embedded.md), so a call may hold
		// several batches of one producer.
		cfg.PutRecordsKeepsOrder = true
		if quotas, _ := dislocal.ParseQuotaMode(o.embeddedQuotas); quotas == dislocal.QuotasNone {
			// It takes larger calls than a COMMON DIS stream; with quotas
			// it is held to DIS's limits, and so are the calls.
			cfg.PutRecordsMaxRecords = 5000
			cfg.PutRecordsMaxBytes = 8 << 20
		}
	}
	tlsCfg, err := loadTLS(o.tlsCertFile, o.tlsKeyFile)
	if err != nil {
		return err
	}
	if cfg.Listeners, err = parseListeners(o.listeners, o.advertisedListeners, tlsCfg); err != nil {
		return err
	}
	cfg.Authorizer, cfg.AllowEveryoneIfNoACLFound, cfg.ACLKey = o.authorizer, o.allowEveryoneIfNoACL, aclKey
	if o.superUsers != "" {
		cfg.SuperUsers = strings.Split(o.superUsers, ";")
	}
	if err := applySASLMode(o, &cfg, disCfg, embedded); err != nil {
		return err
	}
	warnUnsafeListeners(&cfg, log)
	warnUnsignedACLs(ctx, o, embedded, disCfg, log)
	if r.cluster, err = newCluster(o, &cfg, log.With().Str("component", "cluster").Logger()); err != nil {
		return err
	}
	if r.cluster != nil {
		r.peers = cfg.Peers.(*cluster.PeerClients)
	}
	gw, err := gateway.New(cfg, api)
	if err != nil {
		return err
	}
	if r.cluster != nil {
		r.cluster.Start(ctx)
	}
	if err := gw.Start(); err != nil {
		r.closeCluster()
		return err
	}
	r.gw = gw
	embeddedEndpoint := ""
	if embedded {
		embeddedEndpoint = endpoint
	}
	return r.serveUntilDone(ctx, o, reg, dis, embeddedEndpoint, started, log)
}

// running is what serve started, for serveUntilDone to stop; nil for what
// it did not start.
type running struct {
	gw        *gateway.Gateway
	cluster   *cluster.Cluster
	peers     *cluster.PeerClients
	local     *dislocal.Server
	localHTTP *http.Server
}

// serveUntilDone serves the admin HTTP (health and metrics whichever parts
// run) until ctx ends, then stops everything started, the gateway first so
// that its in-flight requests still reach DIS.
func (r *running) serveUntilDone(ctx context.Context, o *options, reg *prometheus.Registry, dis disclient.API, embeddedEndpoint string, started func(serving), log zerolog.Logger) error {
	var admin *http.Server
	where := serving{embeddedDIS: embeddedEndpoint}
	if o.adminListen != "" {
		var err error
		if admin, where.admin, err = startAdmin(o.adminListen, adminHandler(reg, r.readiness(dis), o.pprof), log); err != nil {
			r.closeCluster()
			return err
		}
	}
	if started != nil {
		started(where)
	}
	<-ctx.Done()
	log.Info().Str("reason", context.Cause(ctx).Error()).Msg("shutting down: finishing in-flight requests")
	sctx, cancel := context.WithTimeout(context.Background(), o.shutdownTimeout)
	defer cancel()
	if r.gw != nil {
		if err := r.gw.Close(sctx); err != nil {
			log.Warn().Err(err).Msg("gateway shutdown")
		}
	}
	r.closeCluster()
	if admin != nil {
		_ = admin.Shutdown(sctx)
	}
	if r.localHTTP != nil {
		_ = r.localHTTP.Shutdown(sctx)
	}
	if r.local != nil {
		if err := r.local.Close(); err != nil {
			log.Warn().Err(err).Msg("embedded DIS shutdown")
		}
	}
	log.Info().Msg("stopped")
	return nil
}

func (r *running) closeCluster() {
	if r.cluster != nil {
		r.cluster.Close()
		r.peers.Close()
	}
}

// ownDIS is the gateway's own DIS client: with the embedded server and
// --embedded-dis-transport local, one that serves the record calls in
// process and the rest over dis (dislocal.LocalClient); otherwise dis.
func ownDIS(transport string, local *dislocal.Server, projectID string, dis *disclient.Client) (disclient.API, error) {
	switch transport {
	case "local":
		if local != nil {
			return local.LocalClient(projectID, dis), nil
		}
		return dis, nil
	case "http":
		return dis, nil
	default:
		return nil, fmt.Errorf("--embedded-dis-transport must be local or http, not %q", transport)
	}
}

// bodyEncoding maps --dis-encoding to the client's setting. auto picks
// protobuf with the embedded server, which speaks it and where it is much
// cheaper, and JSON with DIS, whose protobuf support is known only from the
// Java SDK.
func bodyEncoding(value string, embedded bool) (disclient.BodyEncoding, error) {
	switch value {
	case "auto":
		if embedded {
			return disclient.EncodingProtobuf, nil
		}
		return disclient.EncodingJSON, nil
	case string(disclient.EncodingJSON), string(disclient.EncodingProtobuf):
		return disclient.BodyEncoding(value), nil
	}
	return "", errors.New("--dis-encoding must be json, protobuf or auto")
}

// initialDelay maps the flag to the gateway's setting, where zero means the
// default and a negative value means none.
// clusterInitialRebalanceDelay is --group-initial-rebalance-delay's default
// with --peers or --peers-dns: Kafka's built-in default.
const clusterInitialRebalanceDelay = 3 * time.Second

func initialDelay(d time.Duration) time.Duration {
	if d <= 0 {
		return -1
	}
	return d
}

// startEmbedded opens the embedded DIS server and serves its REST API.
func startEmbedded(o *options, log zerolog.Logger) (*dislocal.Server, *http.Server, string, error) {
	// Every file the embedded DIS writes (records, its index, the ACL key)
	// is for this user alone.
	ownerOnlyFiles()
	if err := os.MkdirAll(o.dataDir, 0o700); err != nil {
		return nil, nil, "", fmt.Errorf("data directory: %w", err)
	}
	warnOpenFile(o.dataDir, "the data directory", log)
	quotas, err := dislocal.ParseQuotaMode(o.embeddedQuotas)
	if err != nil {
		return nil, nil, "", fmt.Errorf("--embedded-dis-quotas: %w", err)
	}
	limits, err := dislocal.ParseLimits(o.embeddedLimits)
	if err != nil {
		return nil, nil, "", fmt.Errorf("--embedded-dis-limits: %w", err)
	}
	srv, err := dislocal.Open(dislocal.Config{
		Limits:      limits,
		Dir:         o.dataDir,
		Sync:        dislocal.SyncMode(o.fsync),
		Logger:      log.With().Str("component", "dislocal").Logger(),
		Credentials: embeddedCredentials(o),
		Quotas:      quotas,
	})
	if err != nil {
		return nil, nil, "", err
	}
	ln, err := net.Listen("tcp", o.embeddedListen)
	if err != nil {
		_ = srv.Close()
		return nil, nil, "", fmt.Errorf("embedded DIS listener: %w", err)
	}
	hs := srv.HTTPServer()
	go func() {
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error().Err(err).Msg("embedded DIS server stopped")
		}
	}()
	endpoint := "http://" + ln.Addr().String()
	log.Info().Str("data_dir", o.dataDir).Str("endpoint", endpoint).Str("fsync", o.fsync).Str("quotas", string(quotas)).
		Bool("signatures_required", o.embeddedAK != "").Msg("embedded DIS server started")
	return srv, hs, endpoint, nil
}

// applyMemoryLimit sets the Go runtime's soft memory limit from
// --memory-limit unless GOMEMLIMIT (env, the variable's value) is set: the
// runtime has applied that one already, and an operator who set it meant
// it. It returns the limit in force and where it came from ("flag",
// "GOMEMLIMIT"), or "" when there is none.
func applyMemoryLimit(flagBytes int64, env string) (int64, string) {
	if env != "" {
		return debug.SetMemoryLimit(-1), "GOMEMLIMIT"
	}
	if flagBytes <= 0 {
		return 0, ""
	}
	debug.SetMemoryLimit(flagBytes)
	return flagBytes, "flag"
}

// validateShareLimits refuses share-partition flags outside the ranges
// Kafka accepts for its broker configs, naming the flags: a zero would
// silently mean the default, so it is refused too.
func validateShareLimits(l sharestate.Config) error {
	const flags = "--share-delivery-count-limit, --share-record-lock-duration, --share-max-record-lock-duration and --share-partition-max-record-locks"
	if l.DeliveryCountLimit <= 0 || l.LockDuration <= 0 || l.MaxLockDuration <= 0 || l.MaxInFlight <= 0 {
		return errors.New(flags + " must be positive")
	}
	if err := l.Validate(); err != nil {
		return fmt.Errorf("%s: %w", flags, err)
	}
	return nil
}
