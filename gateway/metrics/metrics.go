// Package metrics is the gateway's Prometheus series (docs/operations.md,
// "Health and metrics"): the counters and histograms the gateway's code
// adds to, the series read from the gateway's state at scrape time
// (collector.go), the bounds on their label values (labels.go), and the
// decorator that counts and logs every DIS call (dis.go, dis_errlog.go).
// It never imports the gateway: what the scrape reads comes in State, as
// funcs the gateway gives at construction, so the series can be built and
// tested without a gateway, and the gateway's locks stay its own.
package metrics

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/disgw/disgw/groupcoord"
)

// Config holds the gateway settings the series are made from; the
// gateway's Config documents each.
type Config struct {
	// Registry gets every series; with nil they are made but not
	// registered.
	Registry prometheus.Registerer
	// Log gets the failed DIS calls' lines (dis_errlog.go).
	Log zerolog.Logger
	// Labels is the granularity of the per-topic series: LabelsTopic,
	// LabelsPartition or LabelsNone (--metrics-topic-labels).
	Labels string
	// MaxTopics, MaxGroups and MaxTenants cap the (tenant, topic) pairs,
	// the (tenant, group) pairs and the passthrough tenants that get label
	// values of their own (--metrics-max-topics, --metrics-max-groups,
	// --metrics-max-tenants).
	MaxTopics, MaxGroups, MaxTenants int
	// MaxInflightBytes, MaxQueueBytes and ReadCacheBytes are the budgets
	// disgw_budget_limit_bytes reports, so that a dashboard shows the
	// in-use gauges against them.
	MaxInflightBytes, MaxQueueBytes int64
	// ReadCacheBytes is the read cache's budget (--read-cache-bytes).
	ReadCacheBytes int
	// Mechanisms are the SASL mechanisms whose authentication failure
	// series start at zero.
	Mechanisms []string
}

// State is what the series read of the gateway, at scrape time or when the
// in-flight gauge is read: funcs over its tenants, partitions and groups,
// so that this package needs nothing of the gateway's types. Every field
// must be set.
type State struct {
	// Ctx ends when the gateway stops; a scrape's high-watermark
	// recoveries run within it.
	Ctx context.Context
	// Inflight is the bytes held against the gateway-wide in-flight
	// budget.
	Inflight func() int64
	// Partitions calls each for every partition of every tenant the
	// gateway holds state of.
	Partitions func(each func(ServedPartition))
	// Groups calls each for every tenant's group coordinator, by tenant id
	// and access key, under the lock that guards the coordinators (which
	// may take labelCap.mu, docs/design.md §11).
	Groups func(each func(tenantID, accessKey string, coord *groupcoord.Coordinator))
	// Coordinates reports whether this gateway coordinates group: only
	// those groups get series, so each group's come from one gateway
	// (docs/design.md §6).
	Coordinates func(group string) bool
	// OwnsPartition reports whether this gateway owns a partition: only the
	// owner reads a high watermark it does not know from DIS.
	OwnsPartition func(topic string, partition int32) bool
}

// Metrics are the gateway's Prometheus series; docs/operations.md lists
// them. Per-topic and per-group series carry the tenant (its access key in
// passthrough mode, "" for the gateway's own credentials) and go through
// labels, which bounds them (labels.go); what is read from the gateway's
// state at scrape time (offsets, groups, DIS quota use) is in
// collector.go, and the DIS call series are filled by the DISClient
// decorator (dis.go). The exported fields are the series the gateway's
// code adds to where the event happens; the methods are the ones that need
// labels worked out first.
type Metrics struct {
	// disErrors logs the failed DIS calls the DIS decorator counts.
	disErrors *disErrorLog
	// Labels gives the per-topic series' label values, for the series the
	// gateway labels itself (the raw topics' dropped headers and keys).
	Labels      TopicLabels
	groupLabels *labelCap
	disTenants  *labelCap
	groups      groupMetrics
	state       State
	// Connections counts open client connections, by listener security
	// protocol.
	Connections *prometheus.GaugeVec
	// Requests counts requests handled, by API name.
	Requests *prometheus.CounterVec
	// BadRequests counts frames refused; each closes its connection.
	BadRequests prometheus.Counter
	// Backpressure counts connections that stopped being read at their
	// in-flight bounds.
	Backpressure prometheus.Counter
	// BytesIn and BytesOut count Kafka request and response bytes.
	BytesIn, BytesOut prometheus.Counter

	producedRecs prometheus.Counter
	fetchedRecs  prometheus.Counter
	// Panics counts recovered panics: each is a bug.
	Panics prometheus.Counter
	// AuthFailures counts failed SASL authentications, by mechanism.
	AuthFailures *prometheus.CounterVec

	requestSeconds *prometheus.HistogramVec
	topicRecsIn    *prometheus.CounterVec
	topicBytesIn   *prometheus.CounterVec
	topicRecsOut   *prometheus.CounterVec
	topicBytesOut  *prometheus.CounterVec
	produceSeconds *prometheus.HistogramVec
	fetchSeconds   *prometheus.HistogramVec

	disCalls        *prometheus.CounterVec
	disSeconds      *prometheus.HistogramVec
	disRetries      *prometheus.CounterVec
	disThrottled    *prometheus.CounterVec
	disRecordErrors *prometheus.CounterVec
	cursorRefreshes prometheus.Counter
	// fetchFileBytes counts record data fetches took from the embedded
	// DIS's record log files, by how.
	fetchFileBytes *prometheus.CounterVec
	// FileSent counts that data sent by sendfile, FileRead that read into
	// memory first (the socket was full, or TLS).
	FileSent, FileRead prometheus.Counter

	rebalances       *prometheus.CounterVec
	rebalanceSeconds prometheus.Histogram

	// ProduceQueued is the gauge of bytes queued in partition writers,
	// ProduceQueueWaits counts the produce partitions that waited for
	// room: both kept by the partition log's write queues.
	ProduceQueued     prometheus.Gauge
	ProduceQueueWaits prometheus.Counter
	// ReadCacheBytes is the gauge of the read cache's bytes, kept by it.
	ReadCacheBytes prometheus.Gauge
	// OffsetProbes counts the DIS reads of searches for an offset.
	OffsetProbes prometheus.Counter
	// FencedBatches counts batches written again after someone else wrote
	// their partition first.
	FencedBatches prometheus.Counter
	// TxnsEnded counts completed transactions by outcome (commit,
	// abort), and TxnMarkers the markers written into data partitions by
	// result (written, failed: retried), docs/design.md §13.
	TxnsEnded, TxnMarkers *prometheus.CounterVec
	// ShareRecords counts share groups' records by what happened to them
	// (acquired, and each acknowledgement type applied), and
	// ShareStateWrites the share-partition state records written by
	// result (written, failed), docs/design.md §14.
	ShareRecords, ShareStateWrites *prometheus.CounterVec
	// KeepRewrites counts the keeper's rewrites of kept partitions by
	// result (docs/design.md §12): written, fenced, failed, skipped.
	KeepRewrites *prometheus.CounterVec
	// keptBatches, keptRecords and keptBytes count what rewrites wrote,
	// by partition (Rewritten).
	keptBatches, keptRecords, keptBytes *prometheus.CounterVec
	// ProduceCancelled counts queued batches not written because their
	// producer had been answered REQUEST_TIMED_OUT.
	ProduceCancelled prometheus.Counter
	// ProduceDropped counts acks=0 batches not written because their
	// connection closed while they waited for queue room.
	ProduceDropped prometheus.Counter
	// RawHeadersDropped and RawKeysDropped count records written to raw
	// topics without their headers or key, by the tenant and topic labels
	// of Labels.Topic.
	RawHeadersDropped, RawKeysDropped *prometheus.CounterVec
	// ConnsRefused counts connections closed at once, by reason:
	// max_connections, max_connections_per_ip, draining.
	ConnsRefused *prometheus.CounterVec
	// ConnsClosed counts connections the gateway closed, by reason: idle,
	// write_timeout, inflight_budget, tls_handshake.
	ConnsClosed   *prometheus.CounterVec
	inflightBytes prometheus.GaugeFunc
}

// latencyBuckets are the buckets of the gateway's latency histograms: 0.5 ms
// to about 8 s.
var latencyBuckets = prometheus.ExponentialBuckets(0.0005, 2, 15)

// New makes the gateway's series, reading st when they are collected, and
// registers them with cfg.Registry.
func New(cfg Config, st State) *Metrics {
	inflight := func() float64 { return float64(st.Inflight()) }
	tp := []string{"tenant", "topic", "partition"}
	tt := []string{"tenant", "topic"}
	m := &Metrics{
		disErrors:   newDISErrorLog(cfg.Log),
		state:       st,
		Labels:      TopicLabels{mode: cfg.Labels, topics: newLabelCap(cfg.MaxTopics)},
		groupLabels: newLabelCap(cfg.MaxGroups),
		disTenants:  newLabelCap(cfg.MaxTenants),
		groups:      groupMetrics{committed: make(map[groupOffsetKey]int64), gens: make(map[groupKey]int32)},
		Connections: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "disgw_connections", Help: "Open Kafka client connections, by listener security protocol."}, []string{"listener"}),
		Requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "disgw_requests_total", Help: "Kafka requests handled, by API."}, []string{"api"}),
		BadRequests: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "disgw_bad_requests_total", Help: "Frames refused: malformed, oversized or unsupported; each closes its connection."}),
		Backpressure: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "disgw_backpressure_total", Help: "Times a connection stopped being read because its in-flight bounds were reached."}),
		BytesIn: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "disgw_request_bytes_total", Help: "Kafka request bytes received."}),
		BytesOut: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "disgw_response_bytes_total", Help: "Kafka response bytes sent."}),
		producedRecs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "disgw_produced_records_total", Help: "Records written to DIS through Produce."}),
		fetchedRecs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "disgw_fetched_records_total", Help: "Records returned to Fetch requests."}),
		AuthFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "disgw_authentication_failures_total", Help: "SASL authentications that failed, by mechanism; each closes its connection."}, []string{"mechanism"}),
		requestSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "disgw_request_duration_seconds", Help: "Time from a Kafka request being dispatched to its answer, by API.",
			Buckets: latencyBuckets}, []string{"api"}),
		topicRecsIn: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "disgw_topic_records_in_total", Help: "Kafka records produced and stored in DIS, by topic."}, tp),
		topicBytesIn: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "disgw_topic_bytes_in_total", Help: "Bytes of Kafka records produced and stored in DIS (record batches as sent, or DIS record data of raw topics), by topic."}, tp),
		topicRecsOut: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "disgw_topic_records_out_total", Help: "Kafka records returned to Fetch, by topic."}, tp),
		topicBytesOut: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "disgw_topic_bytes_out_total", Help: "Record batch bytes returned to Fetch, by topic."}, tp),
		produceSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "disgw_produce_duration_seconds", Help: "Time to answer Produce requests, observed for each topic they wrote.",
			Buckets: latencyBuckets}, tt),
		fetchSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "disgw_fetch_duration_seconds", Help: "Time to answer Fetch requests (long polls included), observed for each topic they read.",
			Buckets: latencyBuckets}, tt),
		disCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "disgw_dis_calls_total", Help: "DIS API calls, by operation and outcome: ok, the DIS error code, or error for no DIS answer; by tenant in passthrough mode."}, []string{"tenant", "operation", "code"}),
		disSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "disgw_dis_call_duration_seconds", Help: "Latency of DIS API calls, retries included, by operation.",
			Buckets: latencyBuckets}, []string{"operation"}),
		disRetries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "disgw_dis_retries_total", Help: "DIS requests sent again after a failed attempt, by operation."}, []string{"operation"}),
		disThrottled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "disgw_dis_throttled_total", Help: "DIS answers that refused traffic for a partition's or the project's limits (DIS.4303, DIS.4305, HTTP 429), retried attempts and PutRecords with refused records included, by operation."}, []string{"operation"}),
		disRecordErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "disgw_dis_record_errors_total", Help: "Records a PutRecords call answered with an error, by DIS error code; throttled ones are sent again."}, []string{"tenant", "code"}),
		cursorRefreshes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "disgw_dis_cursor_refreshes_total", Help: "GetRecords calls DIS answered with an expired cursor, each followed by a GetCursor."}),
		fetchFileBytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "disgw_fetch_file_bytes_total", Help: "Record data Fetch answers took from the embedded DIS's record log files: sent from the file (how=sendfile), or read into memory first (how=read: the socket was full, TLS)."}, []string{"how"}),
		rebalances: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "disgw_group_rebalances_total", Help: "Completed rebalances of the groups this gateway coordinates: new generations of classic groups, new epochs of consumer groups."}, []string{"tenant", "group"}),
		rebalanceSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "disgw_group_rebalance_duration_seconds", Help: "How long classic groups' join phases lasted, from the rebalance starting to the new generation.",
			Buckets: prometheus.ExponentialBuckets(0.01, 2, 16)}),
		Panics: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "disgw_panics_recovered_total", Help: "Panics recovered in handlers and gateway goroutines; each is a bug, logged with its stack."}),
		ProduceQueued: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "disgw_produce_queue_bytes", Help: "Bytes of produced records queued in partition writers or being written to DIS."}),
		ReadCacheBytes: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "disgw_read_cache_bytes", Help: "Bytes of record batches in the gateway-wide read cache (--read-cache-bytes)."}),
		OffsetProbes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "disgw_offset_search_reads_total", Help: "DIS reads made to find the DIS record holding a Kafka offset of a kafka-format topic; consumers that follow the log make none."}),
		FencedBatches: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "disgw_batches_written_again_total", Help: "Batches written again because someone else had written their partition first (their first copies are stale)."}),
		TxnsEnded: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "disgw_transactions_ended_total", Help: "Transactions completed (their markers written and their end recorded in DIS), by outcome: commit or abort (by the producer, a newer producer of the id, or the timeout)."}, []string{"outcome"}),
		TxnMarkers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "disgw_transaction_markers_total", Help: "Transaction markers (control batches) sent to data partitions, by result: written, or failed (the coordinator tries again)."}, []string{"result"}),
		ShareRecords: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "disgw_share_records_total", Help: "Share groups' records by event: acquired (handed to a member by a share fetch), accepted, released, rejected, renewed (acknowledgements applied; an offset with no record, a gap, counts as rejected)."}, []string{"event"}),
		ShareStateWrites: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "disgw_share_state_writes_total", Help: "Share-partition state records written to the tenant's __share_group_state topic, by result: written, or failed (the share-partition is loaded again from what is durable)."}, []string{"result"}),
		KeepRewrites: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "disgw_keep_rewrites_total", Help: "Rewrites of kept topics' partitions by result: written (a new generation is current), fenced (someone else wrote the keep partition meanwhile), failed, skipped (not due)."}, []string{"result"}),
		keptBatches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "disgw_keep_rewritten_batches_total", Help: "Record batches rewritten to kept topics' keep streams, by partition."}, tp),
		keptRecords: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "disgw_keep_rewritten_records_total", Help: "Kafka records rewritten to kept topics' keep streams, by partition."}, tp),
		keptBytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "disgw_keep_rewritten_bytes_total", Help: "Bytes of record batches rewritten to kept topics' keep streams, by partition."}, tp),
		ProduceQueueWaits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "disgw_produce_queue_waits_total", Help: "Produce partitions that waited for room in the write queues (the connection stopped being read meanwhile)."}),
		ProduceCancelled: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "disgw_produce_cancelled_total", Help: "Queued produce batches not written because their producer had been answered REQUEST_TIMED_OUT."}),
		ProduceDropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "disgw_produce_dropped_total", Help: "acks=0 produce batches not written because their connection closed while they waited for queue room."}),
		RawHeadersDropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "disgw_raw_headers_dropped_total", Help: "Records produced to raw topics with dis.raw.headers=drop and written without their headers, by topic."}, tt),
		RawKeysDropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "disgw_raw_keys_dropped_total", Help: "Records produced to raw topics with dis.raw.keys=drop and written with a null key, their key not being one a DIS partition_key holds, by topic."}, tt),
		ConnsRefused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "disgw_connections_refused_total", Help: "Connections closed at once because a connection limit was reached or the gateway is draining, by reason."}, []string{"reason"}),
		ConnsClosed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "disgw_connections_closed_total", Help: "Connections the gateway closed on a timeout or budget, by reason."}, []string{"reason"}),
		inflightBytes: prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "disgw_inflight_bytes", Help: "Bytes held against the gateway-wide in-flight budget: requests being handled, responses not yet written, frames partly received."}, inflight),
	}
	// Series of known label values start at zero, so that rates and
	// alerts have a series before the first event.
	for _, reason := range []string{"max_connections", "max_connections_per_ip", "draining"} {
		m.ConnsRefused.WithLabelValues(reason)
	}
	for _, result := range []string{"written", "fenced", "failed", "skipped"} {
		m.KeepRewrites.WithLabelValues(result)
	}
	for _, outcome := range []string{"commit", "abort"} {
		m.TxnsEnded.WithLabelValues(outcome)
	}
	for _, result := range []string{"written", "failed"} {
		m.TxnMarkers.WithLabelValues(result)
		m.ShareStateWrites.WithLabelValues(result)
	}
	for _, event := range []string{"acquired", "accepted", "released", "rejected", "renewed"} {
		m.ShareRecords.WithLabelValues(event)
	}
	for _, reason := range []string{"idle", "write_timeout", "inflight_budget", "tls_handshake"} {
		m.ConnsClosed.WithLabelValues(reason)
	}
	for _, mech := range cfg.Mechanisms {
		m.AuthFailures.WithLabelValues(mech)
	}
	budgets := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "disgw_budget_limit_bytes", Help: "The byte budgets the in-use gauges count against: inflight (disgw_inflight_bytes), produce_queue (disgw_produce_queue_bytes), read_cache (disgw_read_cache_bytes)."}, []string{"budget"})
	budgets.WithLabelValues("inflight").Set(float64(cfg.MaxInflightBytes))
	m.FileSent, m.FileRead = m.fetchFileBytes.WithLabelValues("sendfile"), m.fetchFileBytes.WithLabelValues("read")
	budgets.WithLabelValues("produce_queue").Set(float64(cfg.MaxQueueBytes))
	budgets.WithLabelValues("read_cache").Set(float64(cfg.ReadCacheBytes))
	if reg := cfg.Registry; reg != nil {
		reg.MustRegister(m.Connections, m.Requests, m.BadRequests, m.Backpressure, m.BytesIn, m.BytesOut,
			m.producedRecs, m.fetchedRecs, m.Panics, m.AuthFailures,
			m.requestSeconds, m.topicRecsIn, m.topicBytesIn, m.topicRecsOut, m.topicBytesOut,
			m.produceSeconds, m.fetchSeconds,
			m.disCalls, m.disSeconds, m.disRetries, m.disThrottled, m.disRecordErrors, m.cursorRefreshes, m.fetchFileBytes,
			m.rebalances, m.rebalanceSeconds, budgets,
			m.ProduceQueued, m.ReadCacheBytes, m.OffsetProbes, m.FencedBatches,
			m.ProduceQueueWaits, m.ProduceCancelled, m.ProduceDropped,
			m.ConnsRefused, m.ConnsClosed, m.inflightBytes, &stateCollector{m: m})
		reg.MustRegister(m.RawHeadersDropped, m.RawKeysDropped, m.KeepRewrites, m.keptBatches, m.keptRecords, m.keptBytes,
			m.TxnsEnded, m.TxnMarkers, m.ShareRecords, m.ShareStateWrites)
	}
	return m
}
