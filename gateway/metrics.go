package gateway

import (
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the gateway's Prometheus series; docs/operations.md lists them.
// Per-topic and per-group series carry the tenant (its access key in
// passthrough mode, "" for the gateway's own credentials) and go through
// labels, which bounds them (metrics_labels.go);
// what is read from the gateway's state at scrape time (offsets, groups, DIS
// quota use) is in metrics_collector.go, and the DIS call series are filled
// by the disMetrics decorator (dis_metrics.go).
type metrics struct {
	// disErrors logs the failed DIS calls the DIS decorator counts.
	disErrors    *disErrorLog
	labels       topicLabels
	groupLabels  *labelCap
	disTenants   *labelCap
	groups       groupMetrics
	connections  *prometheus.GaugeVec
	requests     *prometheus.CounterVec
	badRequests  prometheus.Counter
	backpressure prometheus.Counter
	bytesIn      prometheus.Counter
	bytesOut     prometheus.Counter
	producedRecs prometheus.Counter
	fetchedRecs  prometheus.Counter
	panics       prometheus.Counter
	authFailures *prometheus.CounterVec

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
	// DIS's record log files, by how: fileSent by sendfile, fileRead read.
	fetchFileBytes     *prometheus.CounterVec
	fileSent, fileRead prometheus.Counter

	rebalances       *prometheus.CounterVec
	rebalanceSeconds prometheus.Histogram

	produceQueued     prometheus.Gauge
	readCacheBytes    prometheus.Gauge
	offsetProbes      prometheus.Counter
	fencedBatches     prometheus.Counter
	produceQueueWaits prometheus.Counter
	produceCancelled  prometheus.Counter
	produceDropped    prometheus.Counter
	rawHeadersDropped *prometheus.CounterVec
	rawKeysDropped    *prometheus.CounterVec
	connsRefused      *prometheus.CounterVec
	connsClosed       *prometheus.CounterVec
	inflightBytes     prometheus.GaugeFunc
}

// latencyBuckets are the buckets of the gateway's latency histograms: 0.5 ms
// to about 8 s.
var latencyBuckets = prometheus.ExponentialBuckets(0.0005, 2, 15)

// newMetrics makes the series of gw and registers them with its
// Config.Registry.
func newMetrics(gw *Gateway) *metrics {
	cfg := &gw.cfg
	inflight := func() float64 { return float64(gw.inflight.Load()) }
	tp := []string{"tenant", "topic", "partition"}
	tt := []string{"tenant", "topic"}
	m := &metrics{
		disErrors:   newDISErrorLog(gw.log),
		labels:      topicLabels{mode: cfg.MetricsLabels, topics: newLabelCap(cfg.MetricsMaxTopics)},
		groupLabels: newLabelCap(cfg.MetricsMaxGroups),
		disTenants:  newLabelCap(cfg.MetricsMaxTenants),
		groups:      groupMetrics{committed: make(map[groupOffsetKey]int64), gens: make(map[groupKey]int32)},
		connections: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "disgw_connections", Help: "Open Kafka client connections, by listener security protocol."}, []string{"listener"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "disgw_requests_total", Help: "Kafka requests handled, by API."}, []string{"api"}),
		badRequests: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "disgw_bad_requests_total", Help: "Frames refused: malformed, oversized or unsupported; each closes its connection."}),
		backpressure: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "disgw_backpressure_total", Help: "Times a connection stopped being read because its in-flight bounds were reached."}),
		bytesIn: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "disgw_request_bytes_total", Help: "Kafka request bytes received."}),
		bytesOut: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "disgw_response_bytes_total", Help: "Kafka response bytes sent."}),
		producedRecs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "disgw_produced_records_total", Help: "Records written to DIS through Produce."}),
		fetchedRecs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "disgw_fetched_records_total", Help: "Records returned to Fetch requests."}),
		authFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
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
		panics: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "disgw_panics_recovered_total", Help: "Panics recovered in handlers and gateway goroutines; each is a bug, logged with its stack."}),
		produceQueued: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "disgw_produce_queue_bytes", Help: "Bytes of produced records queued in partition writers or being written to DIS."}),
		readCacheBytes: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "disgw_read_cache_bytes", Help: "Bytes of record batches in the gateway-wide read cache (--read-cache-bytes)."}),
		offsetProbes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "disgw_offset_search_reads_total", Help: "DIS reads made to find the DIS record holding a Kafka offset of a kafka-format topic; consumers that follow the log make none."}),
		fencedBatches: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "disgw_batches_written_again_total", Help: "Batches written again because someone else had written their partition first (their first copies are stale)."}),
		produceQueueWaits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "disgw_produce_queue_waits_total", Help: "Produce partitions that waited for room in the write queues (the connection stopped being read meanwhile)."}),
		produceCancelled: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "disgw_produce_cancelled_total", Help: "Queued produce batches not written because their producer had been answered REQUEST_TIMED_OUT."}),
		produceDropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "disgw_produce_dropped_total", Help: "acks=0 produce batches not written because their connection closed while they waited for queue room."}),
		rawHeadersDropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "disgw_raw_headers_dropped_total", Help: "Records produced to raw topics with dis.raw.headers=drop and written without their headers, by topic."}, tt),
		rawKeysDropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "disgw_raw_keys_dropped_total", Help: "Records produced to raw topics with dis.raw.keys=drop and written with a null key, their key not being one a DIS partition_key holds, by topic."}, tt),
		connsRefused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "disgw_connections_refused_total", Help: "Connections closed at once because a connection limit was reached or the gateway is draining, by reason."}, []string{"reason"}),
		connsClosed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "disgw_connections_closed_total", Help: "Connections the gateway closed on a timeout or budget, by reason."}, []string{"reason"}),
		inflightBytes: prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "disgw_inflight_bytes", Help: "Bytes held against the gateway-wide in-flight budget: requests being handled, responses not yet written, frames partly received."}, inflight),
	}
	// Series of known label values start at zero, so that rates and
	// alerts have a series before the first event.
	for _, reason := range []string{"max_connections", "max_connections_per_ip", "draining"} {
		m.connsRefused.WithLabelValues(reason)
	}
	for _, reason := range []string{"idle", "write_timeout", "inflight_budget", "tls_handshake"} {
		m.connsClosed.WithLabelValues(reason)
	}
	for _, mech := range []string{mechPlain, mechSCRAMSHA256, mechSCRAMSHA512} {
		m.authFailures.WithLabelValues(mech)
	}
	budgets := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "disgw_budget_limit_bytes", Help: "The byte budgets the in-use gauges count against: inflight (disgw_inflight_bytes), produce_queue (disgw_produce_queue_bytes), read_cache (disgw_read_cache_bytes)."}, []string{"budget"})
	budgets.WithLabelValues("inflight").Set(float64(cfg.MaxInflightBytes))
	m.fileSent, m.fileRead = m.fetchFileBytes.WithLabelValues("sendfile"), m.fetchFileBytes.WithLabelValues("read")
	budgets.WithLabelValues("produce_queue").Set(float64(cfg.MaxQueueBytes))
	budgets.WithLabelValues("read_cache").Set(float64(cfg.ReadCacheBytes))
	if reg := cfg.Registry; reg != nil {
		reg.MustRegister(m.connections, m.requests, m.badRequests, m.backpressure, m.bytesIn, m.bytesOut,
			m.producedRecs, m.fetchedRecs, m.panics, m.authFailures,
			m.requestSeconds, m.topicRecsIn, m.topicBytesIn, m.topicRecsOut, m.topicBytesOut,
			m.produceSeconds, m.fetchSeconds,
			m.disCalls, m.disSeconds, m.disRetries, m.disThrottled, m.disRecordErrors, m.cursorRefreshes, m.fetchFileBytes,
			m.rebalances, m.rebalanceSeconds, budgets,
			m.produceQueued, m.readCacheBytes, m.offsetProbes, m.fencedBatches,
			m.produceQueueWaits, m.produceCancelled, m.produceDropped,
			m.connsRefused, m.connsClosed, m.inflightBytes, &stateCollector{gw: gw})
		reg.MustRegister(m.rawHeadersDropped, m.rawKeysDropped)
	}
	return m
}
