package gateway

import "github.com/prometheus/client_golang/prometheus"

// metrics are the gateway's Prometheus series; docs/operations.md lists them.
type metrics struct {
	connections    prometheus.Gauge
	requests       *prometheus.CounterVec
	badRequests    prometheus.Counter
	backpressure   prometheus.Counter
	bytesIn        prometheus.Counter
	bytesOut       prometheus.Counter
	producedRecs   prometheus.Counter
	fetchedRecs    prometheus.Counter
	putRecordsCall prometheus.Histogram
	disErrors      *prometheus.CounterVec
	panics         prometheus.Counter

	produceQueued     prometheus.Gauge
	readCacheBytes    prometheus.Gauge
	offsetProbes      prometheus.Counter
	fencedBatches     prometheus.Counter
	produceQueueWaits prometheus.Counter
	produceCancelled  prometheus.Counter
	produceDropped    prometheus.Counter
	connsRefused      *prometheus.CounterVec
	connsClosed       *prometheus.CounterVec
	inflightBytes     prometheus.GaugeFunc
}

// newMetrics makes the series; inflight reads the bytes held against the
// gateway-wide in-flight budget.
func newMetrics(reg prometheus.Registerer, inflight func() float64) *metrics {
	m := &metrics{
		connections: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "disgw_connections", Help: "Open Kafka client connections."}),
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
		putRecordsCall: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "disgw_dis_put_records_seconds", Help: "Latency of DIS PutRecords calls made by partition writers.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14)}),
		disErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "disgw_dis_errors_total", Help: "DIS calls that failed, by DIS error code (\"\" for transport errors)."}, []string{"code"}),
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
		connsRefused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "disgw_connections_refused_total", Help: "Connections closed at once because a connection limit was reached, by limit."}, []string{"reason"}),
		connsClosed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "disgw_connections_closed_total", Help: "Connections the gateway closed on a timeout or budget, by reason."}, []string{"reason"}),
		inflightBytes: prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "disgw_inflight_bytes", Help: "Bytes held against the gateway-wide in-flight budget: requests being handled, responses not yet written, frames partly received."}, inflight),
	}
	if reg != nil {
		reg.MustRegister(m.connections, m.requests, m.badRequests, m.backpressure, m.bytesIn, m.bytesOut,
			m.producedRecs, m.fetchedRecs, m.putRecordsCall, m.disErrors, m.panics,
			m.produceQueued, m.readCacheBytes, m.offsetProbes, m.fencedBatches,
			m.produceQueueWaits, m.produceCancelled, m.produceDropped,
			m.connsRefused, m.connsClosed, m.inflightBytes)
	}
	return m
}
