package test

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/disgw/disgw/gateway"
)

// seriesLines are the exposition lines of name whose labels include every
// name="value" pair of labels.
func seriesLines(text, name string, labels ...string) []string {
	var out []string
	for line := range strings.SplitSeq(text, "\n") {
		if !strings.HasPrefix(line, name+"{") {
			continue
		}
		match := true
		for i := 0; i+1 < len(labels); i += 2 {
			match = match && strings.Contains(line, labels[i]+`="`+labels[i+1]+`"`)
		}
		if match {
			out = append(out, line)
		}
	}
	return out
}

// TestMetricsPerPassthroughTenant: two passthrough tenants, in projects of
// their own, produce to a topic of the same name, read it back and commit
// as the one member of a group of the same name. The scrape holds one series per tenant for
// the topic and for the group, labelled with the tenant's access key, each
// with that tenant's own counts, high watermark, group state, members,
// rebalances, committed offset and lag;
// none with the gateway's own (empty) tenant label; DIS calls are counted
// per tenant; and neither secret key, nor a hash of one, is anywhere in
// it. Deleting one tenant's group then drops its series and leaves the
// other tenant's same-named group its own.
func TestMetricsPerPassthroughTenant(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	c, _, _ := startPassthroughCluster(t, func(cfg *gateway.Config) { cfg.Registry = reg })
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	t.Cleanup(srv.Close)
	ctx := testContext(t, time.Minute)

	const topic, group = "shared-topic", "shared-group"
	members := map[string]*rawMember{}
	tenants := []struct {
		ak, sk            string
		produced, commits int
	}{{tenant1AK, tenant1SK, 7, 3}, {otherAK, otherSK, 12, 5}}
	for _, tc := range tenants {
		adm := kadm.NewClient(passthroughClient(t, c, tc.ak, tc.sk))
		if _, err := adm.CreateTopic(ctx, 1, -1, nil, topic); err != nil {
			t.Fatalf("%s: create %q: %v", tc.ak, topic, err)
		}
		producer := passthroughClient(t, c, tc.ak, tc.sk, kgo.DefaultProduceTopic(topic))
		for i := range tc.produced {
			if err := producer.ProduceSync(ctx, &kgo.Record{Value: []byte(tc.ak + "-" + strconv.Itoa(i))}).FirstErr(); err != nil {
				t.Fatalf("%s: produce: %v", tc.ak, err)
			}
		}
		reader := passthroughClient(t, c, tc.ak, tc.sk,
			kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
		for _, v := range consumeAll(t, ctx, reader, tc.produced) {
			if !strings.HasPrefix(v, tc.ak+"-") {
				t.Fatalf("%s read %q from its topic", tc.ak, v)
			}
		}
		reader.Close()
		m := joinRaw(t, passthroughRaw(t, c, tc.ak, tc.sk), group, "inst", topic)
		members[tc.ak] = m
		oc := kmsg.NewPtrOffsetCommitRequest()
		oc.Version, oc.Group, oc.MemberID, oc.Generation = 7, group, m.memberID, m.generation
		ot := kmsg.NewOffsetCommitRequestTopic()
		ot.Topic = topic
		op := kmsg.NewOffsetCommitRequestTopicPartition()
		op.Partition, op.Offset, op.LeaderEpoch = 0, int64(tc.commits), -1
		ot.Partitions = append(ot.Partitions, op)
		oc.Topics = append(oc.Topics, ot)
		ocr := m.rc.roundTrip(oc).(*kmsg.OffsetCommitResponse)
		if len(ocr.Topics) != 1 || len(ocr.Topics[0].Partitions) != 1 || ocr.Topics[0].Partitions[0].ErrorCode != 0 {
			t.Fatalf("%s: commit in %q: %+v", tc.ak, group, ocr.Topics)
		}
	}

	text := scrape(t, srv.URL+"/metrics")
	for _, name := range []string{"disgw_topic_records_in_total", "disgw_topic_records_out_total", "disgw_partition_high_watermark"} {
		if lines := seriesLines(text, name, "topic", topic); len(lines) != len(tenants) {
			t.Errorf("%s of %q: %d series %q, want one per tenant", name, topic, len(lines), lines)
		}
		if lines := seriesLines(text, name, "tenant", "", "topic", topic); len(lines) != 0 {
			t.Errorf("%s of %q has series of the gateway's own tenant: %q", name, topic, lines)
		}
	}
	for _, name := range []string{"disgw_group_committed_offset", "disgw_group_lag", "disgw_group_members"} {
		if lines := seriesLines(text, name, "group", group); len(lines) != len(tenants) {
			t.Errorf("%s of %q: %d series %q, want one per tenant", name, group, len(lines), lines)
		}
	}
	for _, tc := range tenants {
		for _, want := range []struct {
			name   string
			labels []string
			value  int
		}{
			{"disgw_topic_records_in_total", []string{"topic", topic}, tc.produced},
			{"disgw_topic_records_out_total", []string{"topic", topic}, tc.produced},
			{"disgw_partition_high_watermark", []string{"topic", topic}, tc.produced},
			{"disgw_group_committed_offset", []string{"group", group, "topic", topic}, tc.commits},
			{"disgw_group_lag", []string{"group", group, "topic", topic}, tc.produced - tc.commits},
		} {
			v, ok := sample(text, want.name, append([]string{"tenant", tc.ak}, want.labels...)...)
			if !ok || v != float64(want.value) {
				t.Errorf("%s{tenant=%q,%v} = %v (found %v), want %d", want.name, tc.ak, want.labels, v, ok, want.value)
			}
		}
		if v, _ := sample(text, "disgw_group_state", "tenant", tc.ak, "group", group, "state", "Stable"); v != 1 {
			t.Errorf("disgw_group_state{tenant=%q,group=%q,state=Stable} = %v, want 1", tc.ak, group, v)
		}
		if v, _ := sample(text, "disgw_group_members", "tenant", tc.ak, "group", group); v != 1 {
			t.Errorf("disgw_group_members{tenant=%q,group=%q} = %v, want 1: its own member alone", tc.ak, group, v)
		}
		if v, _ := sample(text, "disgw_group_rebalances_total", "tenant", tc.ak, "group", group); v != 1 {
			t.Errorf("disgw_group_rebalances_total{tenant=%q,group=%q} = %v, want 1", tc.ak, group, v)
		}
		if v, _ := sample(text, "disgw_dis_calls_total", "tenant", tc.ak, "operation", "PutRecords", "code", "ok"); v == 0 {
			t.Errorf("disgw_dis_calls_total{tenant=%q,operation=PutRecords,code=ok} = 0 after it produced", tc.ak)
		}
		sum := sha256.Sum256([]byte(tc.sk))
		for _, secret := range []string{tc.sk, hex.EncodeToString(sum[:])} {
			if strings.Contains(text, secret) {
				t.Errorf("the scrape holds %s's secret key or its hash %q", tc.ak, secret)
			}
		}
	}
	// The first tenant's member leaves and its group is deleted: its group
	// series go, the other tenant's same-named group keeps its own.
	first, second := tenants[0], tenants[1]
	leave := kmsg.NewPtrLeaveGroupRequest()
	leave.Version, leave.Group = 3, group
	lm := kmsg.NewLeaveGroupRequestMember()
	lm.MemberID, lm.InstanceID = members[first.ak].memberID, members[first.ak].instanceID
	leave.Members = append(leave.Members, lm)
	if lr := members[first.ak].rc.roundTrip(leave).(*kmsg.LeaveGroupResponse); lr.ErrorCode != 0 {
		t.Fatalf("%s: leave %q: error %d", first.ak, group, lr.ErrorCode)
	}
	del, err := kadm.NewClient(passthroughClient(t, c, first.ak, first.sk)).DeleteGroup(ctx, group)
	if err == nil {
		err = del.Err
	}
	if err != nil {
		t.Fatalf("%s: delete %q: %v", first.ak, group, err)
	}
	text = scrape(t, srv.URL+"/metrics")
	if lines := seriesLines(text, "disgw_group_lag", "tenant", first.ak, "group", group); len(lines) != 0 {
		t.Errorf("%s's deleted group still has lag series %q", first.ak, lines)
	}
	if v, ok := sample(text, "disgw_group_lag", "tenant", second.ak, "group", group, "topic", topic); !ok || v != float64(second.produced-second.commits) {
		t.Errorf("disgw_group_lag{tenant=%q} = %v (found %v) after the other tenant's group of the same name went, want %d", second.ak, v, ok, second.produced-second.commits)
	}
	if v, _ := sample(text, "disgw_group_members", "tenant", second.ak, "group", group); v != 1 {
		t.Errorf("disgw_group_members{tenant=%q} = %v after the other tenant's group of the same name went, want 1", second.ak, v)
	}
}
