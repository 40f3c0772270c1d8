package test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// describeTopicConfigs asks for topic's configs at v4 with synonyms and
// documentation, and returns them by name.
func describeTopicConfigs(t *testing.T, c *Cluster, topic string) map[string]kmsg.DescribeConfigsResponseResourceConfig {
	t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.IncludeSynonyms, req.IncludeDocumentation = true, true
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, topic
	req.Resources = []kmsg.DescribeConfigsRequestResource{res}
	resp, err := req.RequestWith(testContext(t, 10*time.Second), newClient(t, c))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Resources) != 1 {
		t.Fatalf("%d resources", len(resp.Resources))
	}
	if err := kerr.ErrorForCode(resp.Resources[0].ErrorCode); err != nil {
		t.Fatalf("describe %s: %v", topic, err)
	}
	out := map[string]kmsg.DescribeConfigsResponseResourceConfig{}
	for _, cfg := range resp.Resources[0].Configs {
		out[cfg.Name] = cfg
	}
	return out
}

// streamRetention is the topic's DIS data_duration as DIS reports it.
func streamRetention(t *testing.T, c *Cluster, topic string) int32 {
	t.Helper()
	d, err := c.Client.DescribeStream(testContext(t, 10*time.Second), topic, "", 1)
	if err != nil {
		t.Fatal(err)
	}
	return d.RetentionPeriod
}

func TestDescribeTopicConfigs(t *testing.T) {
	t.Parallel()
	c := startCluster(t, nil)
	createTopic(t, c, "described", 2, map[string]*string{"retention.ms": kadm.StringPtr("172800000"), "dis.record.format": kadm.StringPtr("raw")})
	createTopic(t, c, "plain", 1, nil)

	got := describeTopicConfigs(t, c, "described")
	for _, want := range []struct {
		name, value string
		readOnly    bool
		source      kmsg.ConfigSource
	}{
		{"retention.ms", "172800000", false, kmsg.ConfigSourceDynamicTopicConfig},
		{"dis.record.format", "raw", true, kmsg.ConfigSourceDynamicTopicConfig},
		{"dis.stream.type", "COMMON", true, kmsg.ConfigSourceDefaultConfig},
		{"cleanup.policy", "delete", false, kmsg.ConfigSourceDefaultConfig},
		{"max.message.bytes", "1048576", false, kmsg.ConfigSourceDefaultConfig},
		{"retention.bytes", "-1", false, kmsg.ConfigSourceDefaultConfig},
		{"min.insync.replicas", "1", true, kmsg.ConfigSourceDefaultConfig},
	} {
		cfg, ok := got[want.name]
		switch {
		case !ok:
			t.Errorf("%s missing", want.name)
		case cfg.Value == nil || *cfg.Value != want.value || cfg.ReadOnly != want.readOnly || cfg.Source != want.source:
			t.Errorf("%s = %v read-only %v source %v, want %s %v %v", want.name, cfg.Value, cfg.ReadOnly, cfg.Source, want.value, want.readOnly, want.source)
		case cfg.Documentation == nil || len(cfg.ConfigSynonyms) == 0:
			t.Errorf("%s: no documentation or synonyms", want.name)
		}
	}

	plain := describeTopicConfigs(t, c, "plain")
	if r := plain["retention.ms"]; *r.Value != "86400000" || r.Source != kmsg.ConfigSourceDefaultConfig {
		t.Errorf("default retention.ms = %s source %v", *r.Value, r.Source)
	}

	adm := kadm.NewClient(newClient(t, c))
	rcs, err := adm.DescribeTopicConfigs(testContext(t, 10*time.Second), "missing")
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(rcs[0].Err, kerr.UnknownTopicOrPartition) || rcs[0].ErrMessage == "" {
		t.Errorf("missing topic: %v %q, want UNKNOWN_TOPIC_OR_PARTITION with a message", rcs[0].Err, rcs[0].ErrMessage)
	}
}

func TestAlterTopicConfigs(t *testing.T) {
	t.Parallel()
	c := startCluster(t, nil)
	createTopic(t, c, "altered", 1, map[string]*string{"dis.record.format": kadm.StringPtr("raw")})
	adm := kadm.NewClient(newClient(t, c))
	ctx := testContext(t, 30*time.Second)

	check := func(what string, resps kadm.AlterConfigsResponses, err error, want error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if len(resps) != 1 || !errors.Is(resps[0].Err, want) {
			t.Fatalf("%s: %+v, want %v", what, resps, want)
		}
		if want != nil && resps[0].ErrMessage == "" {
			t.Errorf("%s: refusal without a message", what)
		}
	}
	retention := func(hours int32) {
		t.Helper()
		if v := *describeTopicConfigs(t, c, "altered")["retention.ms"].Value; v != fmt.Sprint(int64(hours)*3_600_000) {
			t.Errorf("described retention.ms = %s, want %d h", v, hours)
		}
		if got := streamRetention(t, c, "altered"); got != hours {
			t.Errorf("DIS retention_period = %d, want %d", got, hours)
		}
	}

	// IncrementalAlterConfigs: validate_only changes nothing, then a
	// real SET rounds up to whole hours.
	set := []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: kadm.StringPtr("129600001")}}
	resps, err := adm.ValidateAlterTopicConfigs(ctx, set, "altered")
	check("validate incremental", resps, err, nil)
	retention(24)
	resps, err = adm.AlterTopicConfigs(ctx, set, "altered")
	check("incremental set", resps, err, nil)
	retention(37)

	// AlterConfigs replaces the whole configuration.
	resps, err = adm.ValidateAlterTopicConfigsState(ctx, []kadm.AlterConfig{{Name: "retention.ms", Value: kadm.StringPtr("259200000")}}, "altered")
	check("validate state", resps, err, nil)
	retention(37)
	resps, err = adm.AlterTopicConfigsState(ctx, []kadm.AlterConfig{{Name: "retention.ms", Value: kadm.StringPtr("259200000")}}, "altered")
	check("state set", resps, err, nil)
	retention(72)
	resps, err = adm.AlterTopicConfigsState(ctx, []kadm.AlterConfig{{Name: "cleanup.policy", Value: kadm.StringPtr("delete")}}, "altered")
	check("state without retention.ms", resps, err, nil)
	retention(24)

	for _, refused := range []struct {
		what string
		cfg  kadm.AlterConfig
		want error
	}{
		{"one hour on a raw topic", kadm.AlterConfig{Op: kadm.SetConfig, Name: "retention.ms", Value: kadm.StringPtr("3600000")}, kerr.InvalidConfig},
		{"format change", kadm.AlterConfig{Op: kadm.SetConfig, Name: "dis.record.format", Value: kadm.StringPtr("kafka")}, kerr.InvalidConfig},
		{"unknown name", kadm.AlterConfig{Op: kadm.SetConfig, Name: "no.such.config", Value: kadm.StringPtr("1")}, kerr.InvalidConfig},
		{"compaction of a raw topic", kadm.AlterConfig{Op: kadm.AppendConfig, Name: "cleanup.policy", Value: kadm.StringPtr("compact")}, kerr.InvalidConfig},
		{"retention for ever on a raw topic", kadm.AlterConfig{Op: kadm.SetConfig, Name: "retention.ms", Value: kadm.StringPtr("-1")}, kerr.InvalidConfig},
	} {
		resps, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{refused.cfg}, "altered")
		check(refused.what, resps, err, refused.want)
	}
	resps, err = adm.AlterTopicConfigs(ctx, set, "missing")
	check("missing topic", resps, err, kerr.UnknownTopicOrPartition)
	retention(24)
	if f := describeTopicConfigs(t, c, "altered")["dis.record.format"]; *f.Value != "raw" {
		t.Errorf("record format became %s", *f.Value)
	}
}

func TestBrokerConfigs(t *testing.T) {
	t.Parallel()
	c := startCluster(t, nil)
	adm := kadm.NewClient(newClient(t, c))
	ctx := testContext(t, 10*time.Second)
	rcs, err := adm.DescribeBrokerConfigs(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]kadm.Config{}
	for _, cfg := range rcs[0].Configs {
		got[cfg.Key] = cfg
	}
	for name, want := range map[string]string{
		"message.max.bytes":         "1048576",
		"auto.create.topics.enable": "true",
		"num.partitions":            "1",
		"log.retention.hours":       "24",
		"socket.request.max.bytes":  fmt.Sprint(100 << 20),
	} {
		if cfg, ok := got[name]; !ok || cfg.MaybeValue() != want || cfg.Source != kmsg.ConfigSourceStaticBrokerConfig {
			t.Errorf("%s = %q source %v, want %s from the gateway's configuration", name, cfg.MaybeValue(), cfg.Source, want)
		}
	}
	if cfg := got["default.replication.factor"]; cfg.MaybeValue() != "1" || cfg.Source != kmsg.ConfigSourceDefaultConfig {
		t.Errorf("default.replication.factor = %q source %v", cfg.MaybeValue(), cfg.Source)
	}
	resps, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: "num.partitions", Value: kadm.StringPtr("3")}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(resps[0].Err, kerr.InvalidRequest) {
		t.Errorf("broker alter: %v, want INVALID_REQUEST", resps[0].Err)
	}
}

func TestSaramaDescribeConfigs(t *testing.T) {
	t.Parallel()
	c := startCluster(t, nil)
	createTopic(t, c, "sarama-configs", 1, map[string]*string{"retention.ms": kadm.StringPtr("259200000")})
	admin, err := sarama.NewClusterAdmin([]string{c.Addr}, saramaConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	results, err := admin.DescribeConfigs([]*sarama.ConfigResource{{Type: sarama.TopicResource, Name: "sarama-configs"}}, sarama.DescribeConfigsOptions{IncludeSynonyms: true, IncludeDocumentation: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 1 || results[0].ErrorCode != sarama.ErrNoError {
		t.Fatalf("sarama describe: %+v", results)
	}
	entries := results[0].Configs
	found := 0
	for _, e := range entries {
		switch e.Name {
		case "retention.ms":
			found++
			if e.Value != "259200000" || e.ReadOnly || e.Source != sarama.SourceTopic {
				t.Errorf("retention.ms: %+v", e)
			}
		case "cleanup.policy":
			found++
			if e.Value != "delete" || e.ReadOnly || e.Source != sarama.SourceDefault {
				t.Errorf("cleanup.policy: %+v", e)
			}
		}
	}
	if found != 2 {
		t.Errorf("sarama saw %d of retention.ms and cleanup.policy in %d entries", found, len(entries))
	}
}

// TestConfigsEveryVersion describes and alters a topic at every version of
// keys 32, 33 and 44, through the raw connection.
func TestConfigsEveryVersion(t *testing.T) {
	t.Parallel()
	c := startCluster(t, nil)
	createTopic(t, c, "versions", 1, nil)
	rc := dialRaw(t, c.Addr)
	for v := int16(0); v <= 4; v++ {
		req := kmsg.NewPtrDescribeConfigsRequest()
		req.Version = v
		req.Resources = []kmsg.DescribeConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "versions", ConfigNames: []string{"retention.ms"}}}
		resp := rc.roundTrip(req).(*kmsg.DescribeConfigsResponse)
		if r := resp.Resources[0]; r.ErrorCode != 0 || len(r.Configs) != 1 || *r.Configs[0].Value != "86400000" {
			t.Errorf("DescribeConfigs v%d: %+v", v, r)
		}
	}
	for v := int16(0); v <= 2; v++ {
		req := kmsg.NewPtrAlterConfigsRequest()
		req.Version = v
		req.Resources = []kmsg.AlterConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "versions", Configs: []kmsg.AlterConfigsRequestResourceConfig{{Name: "retention.ms", Value: kmsg.StringPtr(fmt.Sprint((25 + int64(v)) * 3_600_000))}}}}
		if code := rc.roundTrip(req).(*kmsg.AlterConfigsResponse).Resources[0].ErrorCode; code != 0 {
			t.Errorf("AlterConfigs v%d: %v", v, kerr.ErrorForCode(code))
		}
		if got := streamRetention(t, c, "versions"); got != 25+int32(v) {
			t.Errorf("AlterConfigs v%d: retention %d h", v, got)
		}
	}
	for v := int16(0); v <= 1; v++ {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		req.Version = v
		req.Resources = []kmsg.IncrementalAlterConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "versions", Configs: []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "retention.ms", Value: kmsg.StringPtr(fmt.Sprint((30 + int64(v)) * 3_600_000))}}}}
		if code := rc.roundTrip(req).(*kmsg.IncrementalAlterConfigsResponse).Resources[0].ErrorCode; code != 0 {
			t.Errorf("IncrementalAlterConfigs v%d: %v", v, kerr.ErrorForCode(code))
		}
		if got := streamRetention(t, c, "versions"); got != 30+int32(v) {
			t.Errorf("IncrementalAlterConfigs v%d: retention %d h", v, got)
		}
	}
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.Resources = []kmsg.DescribeConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeBrokerLogger, ResourceName: "0"}}
	if code := rc.roundTrip(req).(*kmsg.DescribeConfigsResponse).Resources[0].ErrorCode; code != kerr.InvalidRequest.Code {
		t.Errorf("broker logger: %v, want INVALID_REQUEST", kerr.ErrorForCode(code))
	}
}
