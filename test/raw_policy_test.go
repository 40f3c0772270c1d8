package test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/disclient"
	"github.com/disgw/disgw/gateway"
)

// The warnings noteRawDrops logs, one per producer and partition.
const (
	headersDroppedMsg = "records written without their headers (dis.raw.headers=drop)"
	keysDroppedMsg    = "records written without their keys (dis.raw.keys=drop)"
)

// startRawPolicyCluster starts a cluster whose warnings and metrics the test
// reads: the logs collected, and the URL of a /metrics endpoint.
func startRawPolicyCluster(t *testing.T) (*Cluster, *logBuffer, string) {
	t.Helper()
	reg := prometheus.NewRegistry()
	logs := &logBuffer{}
	log := zerolog.New(zerolog.MultiLevelWriter(logs, zerolog.NewTestWriter(t))).Level(zerolog.WarnLevel)
	c, err := Start(Options{Dir: t.TempDir(), Logger: log, Gateway: func(cfg *gateway.Config) { cfg.Registry = reg }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	t.Cleanup(srv.Close)
	return c, logs, srv.URL + "/metrics"
}

// nativeStream creates a one-partition stream directly in DIS, as a stream
// that existed before the gateway: no tags, so a raw topic with the default
// policies.
func nativeStream(t *testing.T, c *Cluster, name string) {
	t.Helper()
	if err := c.Client.CreateStream(testContext(t, 10*time.Second), &disclient.CreateStreamRequest{StreamName: name, PartitionCount: 1}); err != nil {
		t.Fatal(err)
	}
}

// warnings are the logged lines whose message contains msg, decoded.
func warnings(t *testing.T, logs *logBuffer, msg string) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(logs.String()))
	for sc.Scan() {
		var line map[string]any
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		if m, _ := line["message"].(string); strings.Contains(m, msg) {
			out = append(out, line)
		}
	}
	return out
}

// disRecords reads partition 0 of a stream directly from DIS.
func disRecords(t *testing.T, c *Cluster, stream string) []disclient.Record {
	t.Helper()
	ctx := testContext(t, 10*time.Second)
	cur, err := c.Client.GetCursor(ctx, &disclient.GetCursorRequest{StreamName: stream, PartitionID: "0", CursorType: disclient.CursorTrimHorizon})
	if err != nil {
		t.Fatal(err)
	}
	recs, err := c.Client.GetRecords(ctx, cur.PartitionCursor, 0)
	if err != nil {
		t.Fatal(err)
	}
	return recs.Records
}

// streamTag is the value of a stream's tag key, "" without it.
func streamTag(t *testing.T, c *Cluster, stream, key string) string {
	t.Helper()
	d, err := c.Client.DescribeStream(testContext(t, 10*time.Second), stream, "", 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, tg := range d.Tags {
		if tg.Key == key {
			return tg.Value
		}
	}
	return ""
}

// TestRawTopicHeadersAndKeysFranzGo: an idempotent franz-go producer that
// adds headers (as tracing instrumentation does), and one record with a
// binary key, write to a stream that existed in DIS. By default both are
// dropped: produce succeeds, consumers and DIS-native readers get the
// values without headers and without the binary key, the counters count
// the records, and each producer gets one warning per partition. After
// dis.raw.headers and then dis.raw.keys are altered to refuse, such
// records fail with INVALID_RECORD.
func TestRawTopicHeadersAndKeysFranzGo(t *testing.T) {
	t.Parallel()
	c, logs, metricsURL := startRawPolicyCluster(t)
	const topic = "native-traced"
	nativeStream(t, c, topic)
	ctx := testContext(t, 60*time.Second)

	producer := newClient(t, c, kgo.DefaultProduceTopic(topic), kgo.ClientID("traced-app"))
	headers := []kgo.RecordHeader{{Key: "traceparent", Value: []byte("00-4bf92f3577b34da6-00f067aa0ba902b7-01")}, {Key: "__TypeId__", Value: []byte("com.example.Order")}}
	const n = 5
	for i := range n {
		rec := &kgo.Record{Key: fmt.Appendf(nil, "k-%d", i), Value: fmt.Appendf(nil, "v-%d", i), Headers: headers}
		if err := producer.ProduceSync(ctx, rec).FirstErr(); err != nil {
			t.Fatalf("record %d with headers: %v, want it written without them", i, err)
		}
	}
	if err := producer.ProduceSync(ctx, &kgo.Record{Key: []byte{0xff, 0xfe}, Value: []byte("binary-key")}).FirstErr(); err != nil {
		t.Fatalf("record with a binary key: %v, want it written without it", err)
	}

	consumer := newClient(t, c, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	var got []*kgo.Record
	for len(got) < n+1 {
		fs := consumer.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d: %v", len(got), n+1, ctx.Err())
		}
		got = append(got, fs.Records()...)
	}
	for i, r := range got {
		wantKey, wantValue := fmt.Sprintf("k-%d", i), fmt.Sprintf("v-%d", i)
		if i == n {
			wantKey, wantValue = "", "binary-key"
		}
		if string(r.Value) != wantValue || string(r.Key) != wantKey || len(r.Headers) != 0 {
			t.Errorf("record %d: key %q value %q headers %v, want key %q value %q and no headers", i, r.Key, r.Value, r.Headers, wantKey, wantValue)
		}
	}
	if got[n].Key != nil {
		t.Errorf("the dropped binary key reads as %#v, want a null key", got[n].Key)
	}
	dis := disRecords(t, c, topic)
	if len(dis) != n+1 || string(dis[0].Data) != "v-0" || dis[0].PartitionKey != "k-0" || string(dis[n].Data) != "binary-key" || dis[n].PartitionKey != "" {
		t.Fatalf("DIS-native read: %+v", dis)
	}

	text := scrape(t, metricsURL)
	if v, _ := sample(text, "disgw_raw_headers_dropped_total", "topic", topic); v != n {
		t.Errorf("disgw_raw_headers_dropped_total = %v, want %d", v, n)
	}
	if v, _ := sample(text, "disgw_raw_keys_dropped_total", "topic", topic); v != 1 {
		t.Errorf("disgw_raw_keys_dropped_total = %v, want 1", v)
	}
	warned := warnings(t, logs, headersDroppedMsg)
	if len(warned) != 1 {
		t.Fatalf("%d header warnings for one producer, want 1: %v", len(warned), warned)
	}
	w := warned[0]
	if w["level"] != "warn" || w["topic"] != topic || w["partition"] != 0.0 || w["client_id"] != "traced-app" || w["headers"] != 2.0 {
		t.Errorf("header warning %v, want topic, partition 0, client id and 2 headers", w)
	}
	if id, _ := w["producer_id"].(float64); id < 0 {
		t.Errorf("the idempotent producer is warned about with producer id %v", w["producer_id"])
	}
	if k := warnings(t, logs, keysDroppedMsg); len(k) != 1 || !strings.Contains(fmt.Sprint(k[0]["reason"]), "UTF-8") {
		t.Errorf("key warnings %v, want one naming UTF-8", k)
	}

	// Another producer is warned about too, once.
	other := newClient(t, c, kgo.DefaultProduceTopic(topic))
	for range 2 {
		if err := other.ProduceSync(ctx, &kgo.Record{Value: []byte("other"), Headers: headers}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if warned := warnings(t, logs, headersDroppedMsg); len(warned) != 2 || warned[1]["producer_id"] == warned[0]["producer_id"] {
		t.Errorf("after a second producer: header warnings %v, want one more, for its producer id", warned)
	}

	adm := kadm.NewClient(newClient(t, c))
	for _, tc := range []struct {
		config, tag string
		rec         *kgo.Record
	}{
		{"dis.raw.headers", "disgw-raw-headers", &kgo.Record{Value: []byte("refused"), Headers: headers}},
		{"dis.raw.keys", "disgw-raw-keys", &kgo.Record{Key: []byte{0xff}, Value: []byte("refused")}},
	} {
		resps, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: tc.config, Value: kadm.StringPtr("refuse")}}, topic)
		if err != nil || resps[0].Err != nil {
			t.Fatalf("alter %s=refuse: %v %+v", tc.config, err, resps)
		}
		d := describeTopicConfigs(t, c, topic)[tc.config]
		if d.Value == nil || *d.Value != "refuse" || d.Source != kmsg.ConfigSourceDynamicTopicConfig {
			t.Errorf("%s described as %v source %v after the alter", tc.config, d.Value, d.Source)
		}
		if tag := streamTag(t, c, topic, tc.tag); tag != "refuse" {
			t.Errorf("%s: the stream's tag %s is %q, want refuse", tc.config, tc.tag, tag)
		}
		cl := newClient(t, c, kgo.DefaultProduceTopic(topic))
		if err := cl.ProduceSync(ctx, tc.rec).FirstErr(); !errors.Is(err, kerr.InvalidRecord) {
			t.Errorf("after %s=refuse: %v, want INVALID_RECORD", tc.config, err)
		}
	}
	fresh := newClient(t, c, kgo.DefaultProduceTopic(topic))
	if err := fresh.ProduceSync(ctx, &kgo.Record{Key: []byte("plain"), Value: []byte("plain")}).FirstErr(); err != nil {
		t.Fatalf("a record the raw format holds, under refuse: %v", err)
	}
	if v, _ := sample(scrape(t, metricsURL), "disgw_raw_headers_dropped_total", "topic", topic); v != n+2 {
		t.Errorf("disgw_raw_headers_dropped_total = %v after the refusals, want %d", v, n+2)
	}

	// A kafka topic keeps headers and keys, so it takes only the default.
	createTopic(t, c, "kafka-keeps", 1, nil)
	resps, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "dis.raw.headers", Value: kadm.StringPtr("refuse")}}, "kafka-keeps")
	if err != nil || !errors.Is(resps[0].Err, kerr.InvalidConfig) || resps[0].ErrMessage == "" {
		t.Errorf("dis.raw.headers=refuse on a kafka topic: %v %+v, want INVALID_CONFIG with a message", err, resps)
	}
}

// TestRawTopicHeadersSarama: sarama's producer is not idempotent, so the
// warning is given once per connection; a topic created with
// dis.raw.headers=refuse and dis.raw.keys=refuse refuses such records.
func TestRawTopicHeadersSarama(t *testing.T) {
	t.Parallel()
	c, logs, metricsURL := startRawPolicyCluster(t)
	const topic = "native-sarama"
	nativeStream(t, c, topic)
	createTopic(t, c, "raw-strict", 1, map[string]*string{"dis.record.format": kadm.StringPtr("raw"),
		"dis.raw.headers": kadm.StringPtr("refuse"), "dis.raw.keys": kadm.StringPtr("refuse")})

	producer, err := sarama.NewSyncProducer([]string{c.Addr}, saramaConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	const n = 3
	for i := range n {
		_, off, err := producer.SendMessage(&sarama.ProducerMessage{Topic: topic, Partition: 0,
			Key: sarama.StringEncoder(fmt.Sprintf("key-%d", i)), Value: sarama.StringEncoder(fmt.Sprintf("value-%d", i)),
			Headers: []sarama.RecordHeader{{Key: []byte("i"), Value: fmt.Appendf(nil, "%d", i)}}})
		if err != nil || off != int64(i) {
			t.Fatalf("send %d with headers: offset %d, %v", i, off, err)
		}
	}
	if _, _, err := producer.SendMessage(&sarama.ProducerMessage{Topic: topic, Partition: 0, Key: sarama.ByteEncoder{}, Value: sarama.StringEncoder("empty-key")}); err != nil {
		t.Fatalf("send with an empty key: %v", err)
	}

	consumer, err := sarama.NewConsumer([]string{c.Addr}, saramaConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	pc, err := consumer.ConsumePartition(topic, 0, sarama.OffsetOldest)
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	timeout := time.After(30 * time.Second)
	for i := range n + 1 {
		select {
		case m := <-pc.Messages():
			wantKey, wantValue := fmt.Sprintf("key-%d", i), fmt.Sprintf("value-%d", i)
			if i == n {
				wantKey, wantValue = "", "empty-key"
			}
			if string(m.Key) != wantKey || string(m.Value) != wantValue || len(m.Headers) != 0 {
				t.Fatalf("message %d: key %q value %q headers %v, want key %q value %q and no headers", i, m.Key, m.Value, m.Headers, wantKey, wantValue)
			}
		case err := <-pc.Errors():
			t.Fatalf("consume: %v", err)
		case <-timeout:
			t.Fatalf("consumed %d of %d messages", i, n+1)
		}
	}

	text := scrape(t, metricsURL)
	if v, _ := sample(text, "disgw_raw_headers_dropped_total", "topic", topic); v != n {
		t.Errorf("disgw_raw_headers_dropped_total = %v, want %d", v, n)
	}
	if v, _ := sample(text, "disgw_raw_keys_dropped_total", "topic", topic); v != 1 {
		t.Errorf("disgw_raw_keys_dropped_total = %v, want 1", v)
	}
	warned := warnings(t, logs, headersDroppedMsg)
	if len(warned) != 1 || warned[0]["producer_id"] != -1.0 || warned[0]["client_id"] != "sarama-e2e" || warned[0]["headers"] != 1.0 {
		t.Errorf("header warnings %v, want one for the connection (producer id -1, client id sarama-e2e, 1 header)", warned)
	}
	if k := warnings(t, logs, keysDroppedMsg); len(k) != 1 || !strings.Contains(fmt.Sprint(k[0]["reason"]), "empty key") {
		t.Errorf("key warnings %v, want one naming the empty key", k)
	}

	_, _, err = producer.SendMessage(&sarama.ProducerMessage{Topic: "raw-strict", Partition: 0, Value: sarama.StringEncoder("v"),
		Headers: []sarama.RecordHeader{{Key: []byte("h"), Value: []byte("x")}}})
	if !errors.Is(err, sarama.ErrInvalidRecord) {
		t.Errorf("headers to a topic with dis.raw.headers=refuse: %v, want INVALID_RECORD", err)
	}
	_, _, err = producer.SendMessage(&sarama.ProducerMessage{Topic: "raw-strict", Partition: 0, Key: sarama.ByteEncoder{0xc3, 0x28}, Value: sarama.StringEncoder("v")})
	if !errors.Is(err, sarama.ErrInvalidRecord) {
		t.Errorf("a non-UTF-8 key to a topic with dis.raw.keys=refuse: %v, want INVALID_RECORD", err)
	}
	if v, _ := sample(scrape(t, metricsURL), "disgw_raw_headers_dropped_total", "topic", "raw-strict"); v != 0 {
		t.Errorf("refused records counted as dropped: %v", v)
	}
}

// TestKcatHeadersOnRawTopic: kcat (librdkafka) produces with -H to a stream
// that existed in DIS; the default policy writes the records without the
// headers.
func TestKcatHeadersOnRawTopic(t *testing.T) {
	t.Parallel()
	kcatPath(t)
	c := startCluster(t, nil)
	const topic = "native-kcat"
	nativeStream(t, c, topic)
	runKcat(t, "k1:v1\nk2:v2\n", "-b", c.Addr, "-P", "-t", topic, "-p", "0", "-K:", "-H", "trace=abc", "-H", "type=order")
	got := runKcat(t, "", "-b", c.Addr, "-C", "-t", topic, "-p", "0", "-o", "beginning", "-e", "-f", `%k=%s@%o [%h]\n`)
	if want := "k1=v1@0 []\nk2=v2@1 []\n"; got != want {
		t.Fatalf("kcat consumed %q, want %q", got, want)
	}
}
