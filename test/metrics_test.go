package test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/disgw/disgw/disclient/dislocal"
	"github.com/disgw/disgw/gateway"
)

// scrape fetches the exposition text of url.
func scrape(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
	}
	return string(b)
}

// sample sums the samples of name in text whose labels include every
// name="value" pair of labels.
func sample(text, name string, labels ...string) (float64, bool) {
	var sum float64
	found := false
	for line := range strings.SplitSeq(text, "\n") {
		if !strings.HasPrefix(line, name) || strings.HasPrefix(line, "#") {
			continue
		}
		rest := line[len(name):]
		if rest == "" || (rest[0] != '{' && rest[0] != ' ') {
			continue
		}
		sp := strings.LastIndexByte(rest, ' ')
		match := true
		for i := 0; i+1 < len(labels); i += 2 {
			match = match && strings.Contains(rest[:sp], labels[i]+`="`+labels[i+1]+`"`)
		}
		if !match {
			continue
		}
		v, err := strconv.ParseFloat(rest[sp+1:], 64)
		if err == nil {
			sum += v
			found = true
		}
	}
	return sum, found
}

// TestMetricsScrapeAfterWorkload scrapes /metrics over HTTP after a
// produce, consume and group workload and checks the series against what
// was done: records in and out per topic, a group's committed offset and
// lag after a partial consume, and the throttling of a partition produced
// above its COMMON quota. It then checks that every metric the Grafana
// dashboard queries is registered.
func TestMetricsScrapeAfterWorkload(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	c, err := Start(Options{Dir: t.TempDir(), Logger: log, Quotas: dislocal.QuotasCommon,
		Gateway: func(cfg *gateway.Config) { cfg.Registry = reg }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	t.Cleanup(srv.Close)
	url := srv.URL + "/metrics"
	ctx := testContext(t, 2*time.Minute)

	const topic, n, read = "metrics-kafka", 100, 60
	createTopic(t, c, topic, 1, nil)
	producer := newClient(t, c, kgo.DefaultProduceTopic(topic))
	for i := range n {
		if err := producer.ProduceSync(ctx, &kgo.Record{Value: []byte("v" + strconv.Itoa(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	// A partition consumer reads everything once.
	reader := newClient(t, c, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	for got := 0; got < n; {
		fs := reader.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d: %v", got, n, err)
		}
		got += fs.NumRecords()
	}
	reader.Close()
	text := scrape(t, url)
	if v, _ := sample(text, "disgw_topic_records_in_total", "topic", topic); v != n {
		t.Errorf("disgw_topic_records_in_total{topic=%q} = %v, want %d", topic, v, n)
	}
	if v, _ := sample(text, "disgw_topic_records_out_total", "topic", topic); v != n {
		t.Errorf("disgw_topic_records_out_total{topic=%q} = %v, want %d", topic, v, n)
	}
	if v, _ := sample(text, "disgw_partition_high_watermark", "topic", topic); v != n {
		t.Errorf("disgw_partition_high_watermark{topic=%q} = %v, want %d", topic, v, n)
	}
	if v, ok := sample(text, "disgw_topic_bytes_in_total", "topic", topic); !ok || v <= 0 {
		t.Errorf("disgw_topic_bytes_in_total{topic=%q} = %v", topic, v)
	}

	// A group member reads 60 records and commits them: lag 40.
	const group = "metrics-group"
	member := newClient(t, c, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit())
	for got := 0; got < read; {
		fs := member.PollRecords(ctx, read-got)
		if err := ctx.Err(); err != nil {
			t.Fatalf("group consumed %d of %d: %v", got, read, err)
		}
		got += fs.NumRecords()
	}
	if err := member.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	text = scrape(t, url)
	if v, _ := sample(text, "disgw_group_committed_offset", "group", group, "topic", topic); v != read {
		t.Errorf("disgw_group_committed_offset = %v, want %d", v, read)
	}
	if v, ok := sample(text, "disgw_group_lag", "group", group, "topic", topic); !ok || v != n-read {
		t.Errorf("disgw_group_lag = %v (found %v), want %d", v, ok, n-read)
	}
	if v, _ := sample(text, "disgw_group_members", "group", group); v != 1 {
		t.Errorf("disgw_group_members = %v, want 1", v)
	}
	if v, _ := sample(text, "disgw_group_state", "group", group, "state", "Stable"); v != 1 {
		t.Errorf("disgw_group_state{state=Stable} = %v, want 1", v)
	}
	if v, _ := sample(text, "disgw_group_rebalances_total", "group", group); v < 1 {
		t.Errorf("disgw_group_rebalances_total = %v, want at least 1", v)
	}

	// A raw topic produced above 1000 records/s is throttled by DIS.
	const hot = "metrics-hot"
	createTopic(t, c, hot, 1, map[string]*string{"dis.record.format": kadm.StringPtr("raw")})
	hotClient := newClient(t, c, kgo.DefaultProduceTopic(hot))
	produceFor(t, ctx, hotClient, 3*time.Second, 100, 6000)
	text = scrape(t, url)
	if v, _ := sample(text, "disgw_dis_throttled_total", "operation", "PutRecords"); v == 0 {
		t.Error("disgw_dis_throttled_total{operation=PutRecords} = 0 after producing above the quota")
	}
	if v, _ := sample(text, "disgw_dis_record_errors_total", "code", "DIS.4303"); v == 0 {
		t.Error("disgw_dis_record_errors_total{code=DIS.4303} = 0 after producing above the quota")
	}
	if v, _ := sample(text, "disgw_dis_partition_quota_used_ratio", "topic", hot, "quota", "records_in"); v <= 0 || v > 1.5 {
		t.Errorf("disgw_dis_partition_quota_used_ratio{records_in} = %v, want in (0, 1.5]", v)
	}
	if v, _ := sample(text, "disgw_dis_calls_total", "operation", "PutRecords", "code", "ok"); v == 0 {
		t.Error("disgw_dis_calls_total{operation=PutRecords,code=ok} = 0")
	}

	t.Run("dashboard", func(t *testing.T) { checkDashboard(t, reg) })
}

// checkDashboard fails for every metric the Grafana dashboard queries that
// the gateway does not register.
func checkDashboard(t *testing.T, reg *prometheus.Registry) {
	raw, err := os.ReadFile("../docs/grafana/disgw.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("dashboard JSON: %v", err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	registered := map[string]bool{}
	for _, mf := range mfs {
		registered[mf.GetName()] = true
	}
	name := regexp.MustCompile(`disgw_[a-z_]+`)
	queried := 0
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			for _, m := range name.FindAllString(tg.Expr, -1) {
				queried++
				base := m
				for _, suffix := range []string{"_bucket", "_sum", "_count"} {
					if strings.HasSuffix(m, suffix) && !registered[m] {
						base = strings.TrimSuffix(m, suffix)
					}
				}
				if !registered[base] {
					t.Errorf("panel %q queries %s, which the gateway does not register", p.Title, m)
				}
			}
		}
	}
	if queried == 0 {
		t.Fatal("the dashboard queries no disgw metric")
	}
}
